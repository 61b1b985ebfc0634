"""OpenAI's chat format: a record ``{"messages": [...], ...}`` (its other keys are metadata), or a bare array
of messages. Each message is ``{"role", "content"}``; content is a string or a list of parts; an assistant
message may carry ``tool_calls`` (or the older ``function_call``) and ``refusal``; a ``tool`` message answers a
call by ``tool_call_id`` (its ``name`` is kept, else the call's)."""

from __future__ import annotations

from typing import Any

from .._common import type_name
from .messages import ROLES, Conversation, Message, Where, content_text, feedback, tool_call_line, tool_result_line
from .records import conversation


def read_record(record: Any, where: Where, dataset: str) -> Conversation:
    """A conversation from one record: an object with ``messages``, or a bare array of messages."""
    if isinstance(record, list):
        return conversation({}, messages(record, where, ""), where, dataset, ())
    if not isinstance(record, dict):
        raise where.error(f"expected an object with 'messages' or an array of messages, got {type_name(record)}")
    if "messages" not in record:
        raise where.error("missing required field: a chat record needs 'messages' (an array of "
                          '{"role": ..., "content": ...})', "messages")
    raw = record["messages"]
    if not isinstance(raw, list):
        raise where.error(f"expected an array of messages, got {type_name(raw)}", "messages")
    found = messages(raw, where, "messages")
    system = record.get("system")
    skip = {"messages"}
    if isinstance(system, str | list):
        # A top-level system prompt (Anthropic's Messages API keeps it beside the messages).
        text, non_text = content_text(system, where, "system")
        found.insert(0, Message("system", text, non_text=non_text))
        skip.add("system")
    return conversation(record, found, where, dataset, skip)


def messages(raw: list[Any], where: Where, path: str) -> list[Message]:
    """The messages of one conversation, tool results named after the calls they answer."""
    calls: dict[str, str] = {}
    out = [_message(m, where, f"{path}[{i}]" if path else f"[{i}]", calls) for i, m in enumerate(raw)]
    if not out:
        raise where.error("no messages", path or None)
    return out


def _message(raw: Any, where: Where, path: str, calls: dict[str, str]) -> Message:
    if not isinstance(raw, dict):
        raise where.error(f'expected a message object {{"role": ..., "content": ...}}, got {type_name(raw)}', path)
    role_name = raw.get("role")
    if not isinstance(role_name, str):
        raise where.error(f"expected a role ({', '.join(ROLES)}), got {type_name(role_name)}", f"{path}.role")
    role = ROLES.get(role_name.strip().lower())
    if role is None:
        raise where.error(f"unknown role {role_name!r}; known roles: {', '.join(ROLES)}", f"{path}.role")
    text, non_text = content_text(raw.get("content"), where, f"{path}.content")
    rating = feedback(raw.get("feedback"), where, f"{path}.feedback")
    if rating and role != "assistant":
        raise where.error("feedback rates a reply: put it on an assistant message or on the record", f"{path}.feedback")
    if role == "tool":
        name = raw.get("name") or calls.get(str(raw.get("tool_call_id")), "tool")
        return Message("tool", tool_result_line(str(name), text), step=True, non_text=non_text)
    if role != "assistant":
        return Message(role, text, non_text=non_text)
    if not text and isinstance(raw.get("refusal"), str):
        text = raw["refusal"].strip()
    lines = _calls(raw, where, path, calls)
    if lines and not text:
        return Message("assistant", "\n".join(lines), step=True, non_text=non_text, feedback=rating)
    return Message("assistant", "\n".join([text, *lines]) if lines else text, non_text=non_text, feedback=rating)


def _calls(raw: dict[str, Any], where: Where, path: str, calls: dict[str, str]) -> list[str]:
    """The rendered tool calls of an assistant message (``tool_calls``, or the older ``function_call``)."""
    listed = raw.get("tool_calls") or []
    if raw.get("function_call") is not None:
        listed = [*listed, {"function": raw["function_call"]}]
    if not isinstance(listed, list):
        raise where.error(f"expected an array of tool calls, got {type_name(listed)}", f"{path}.tool_calls")
    lines = []
    for i, call in enumerate(listed):
        at = f"{path}.tool_calls[{i}]"
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise where.error('expected {"function": {"name": ..., "arguments": ...}}', f"{at}.function.name")
        if isinstance(call, dict) and call.get("id") is not None:
            calls[str(call["id"])] = function["name"]
        lines.append(tool_call_line(function["name"], function.get("arguments")))
    return lines
