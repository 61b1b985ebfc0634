"""ShareGPT: ``{"conversations": [{"from": ..., "value": ...}], ...}``, ``from`` being human, gpt, system or
tool (and their common aliases: user, assistant, chatgpt, bard, model; ``function_call`` and ``observation``
as in LLaMA-Factory's tool-use records, whose ``value`` is the call's JSON and the tool's result)."""

from __future__ import annotations

import json
from typing import Any

from .._common import type_name
from .messages import Conversation, Message, Role, Where, content_text, tool_call_line, tool_result_line
from .records import conversation

_FROM: dict[str, Role] = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant",
                          "chatgpt": "assistant", "bard": "assistant", "bing": "assistant", "model": "assistant",
                          "system": "system", "tool": "tool", "observation": "tool", "function_response": "tool"}
_CALL = ("function_call", "tool_call")


def read_record(record: Any, where: Where, dataset: str) -> Conversation:
    """A conversation from one ShareGPT record."""
    if not isinstance(record, dict):
        raise where.error(f"expected an object with 'conversations', got {type_name(record)}")
    raw = record.get("conversations")
    if not isinstance(raw, list):
        raise where.error(f"expected an array of {{\"from\": ..., \"value\": ...}}, got {type_name(raw)}",
                          "conversations")
    found: list[Message] = []
    skip = {"conversations"}
    if isinstance(record.get("system"), str):
        found.append(Message("system", record["system"].strip()))
        skip.add("system")
    last_call = "tool"
    for i, turn in enumerate(raw):
        path = f"conversations[{i}]"
        if not isinstance(turn, dict):
            raise where.error(f'expected {{"from": ..., "value": ...}}, got {type_name(turn)}', path)
        speaker = turn.get("from")
        if not isinstance(speaker, str):
            raise where.error(f"expected a string, got {type_name(speaker)}", f"{path}.from")
        key = speaker.strip().lower()
        text, non_text = content_text(turn.get("value"), where, f"{path}.value")
        if key in _CALL:
            last_call, line = _call(text)
            found.append(Message("assistant", line, step=True))
            continue
        role = _FROM.get(key)
        if role is None:
            known = ", ".join([*_FROM, *_CALL])
            raise where.error(f"unknown speaker {speaker!r}; known: {known}", f"{path}.from")
        if role == "tool":
            found.append(Message("tool", tool_result_line(str(turn.get("name") or last_call), text), step=True,
                                 non_text=non_text))
        else:
            found.append(Message(role, text, non_text=non_text))
    if not raw:
        raise where.error("no messages", "conversations")
    return conversation(record, found, where, dataset, skip)


def _call(text: str) -> tuple[str, str]:
    """A ``function_call`` turn's name and rendering (its value is ``{"name": ..., "arguments": ...}``)."""
    try:
        call = json.loads(text)
    except (ValueError, RecursionError):
        return "tool", tool_call_line("tool", text)
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return "tool", tool_call_line("tool", text)
    return call["name"], tool_call_line(call["name"], call.get("arguments"))
