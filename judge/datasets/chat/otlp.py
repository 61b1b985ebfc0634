"""OpenTelemetry traces of a chatbot: the OTLP JSON a file exporter writes (one ``ExportTraceServiceRequest``
per line, or one such object, or an array of them: ``resourceSpans`` -> ``scopeSpans`` -> ``spans``, each
attribute a ``key`` and an ``AnyValue``), read for its GenAI spans.

It follows the GenAI semantic conventions of OpenTelemetry semantic-conventions v1.37.0 (the release that
put the chat history on the span): ``gen_ai.input.messages`` and ``gen_ai.output.messages`` (messages of
``role`` and ``parts``: ``text``, ``tool_call``, ``tool_call_response``, and media parts such as ``blob``,
``file`` and ``uri``), ``gen_ai.system_instructions``, ``gen_ai.conversation.id``, ``gen_ai.request.model``
(else ``gen_ai.response.model``) and ``gen_ai.provider.name`` (else the older ``gen_ai.system``). The
messages may be a JSON string or a structured value. Spans without messages are not GenAI chat spans and
are passed over. One conversation per ``gen_ai.conversation.id``, else per trace; its spans are read in the
order they started, and each span's input adds what the conversation did not hold yet (an instrumentation
may record the whole history or only the new message) before its output reply.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...core.errors import InputError
from .._common import type_name
from .files import records
from .messages import ROLES, Conversation, Message, Meta, Where, placeholder, tool_call_line, tool_result_line

INPUT, OUTPUT, INSTRUCTIONS = "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"


@dataclass
class _Span:
    key: str
    start: int
    attrs: dict[str, Any]
    resource: dict[str, Any]
    trace_id: str
    span_id: str
    where: Where
    path: str


def load_conversations(path: str | Path, dataset: str) -> list[Conversation]:
    """The conversations of an OTLP JSON trace export; an InputError when it holds no GenAI chat span."""
    by_key: dict[str, list[_Span]] = {}
    for span in sorted(_spans(path, str(path)), key=lambda s: s.start):
        by_key.setdefault(span.key, []).append(span)
    if not by_key:
        raise InputError(f"no GenAI chat spans (spans with '{INPUT}' or '{OUTPUT}')", file=str(path))
    return [_conversation(key, group, dataset) for key, group in by_key.items()]


def _spans(path: str | Path, file: str) -> Iterator[_Span]:
    for where, record in records(path, file):
        at = Where(file, where)
        if not isinstance(record, dict) or "resourceSpans" not in record:
            got = f"an object with {', '.join(map(repr, list(record)[:5]))}" if isinstance(record, dict) \
                else type_name(record)
            raise at.error(f"expected an OTLP trace export (an object with 'resourceSpans'), got {got}")
        for r, resource_spans in enumerate(_list(record, "resourceSpans", at, "")):
            resource = attributes(resource_spans.get("resource", {}).get("attributes"), at,
                                  f"resourceSpans[{r}].resource.attributes")
            for s, scope in enumerate(_list(resource_spans, "scopeSpans", at, f"resourceSpans[{r}].")):
                for i, span in enumerate(_list(scope, "spans", at, f"resourceSpans[{r}].scopeSpans[{s}].")):
                    where_span = f"resourceSpans[{r}].scopeSpans[{s}].spans[{i}]"
                    attrs = attributes(span.get("attributes"), at, f"{where_span}.attributes")
                    if INPUT not in attrs and OUTPUT not in attrs:
                        continue
                    trace_id = _id(span.get("traceId"))
                    key = attrs.get("gen_ai.conversation.id")
                    yield _Span(str(key) if key else f"trace-{trace_id}", int(span.get("startTimeUnixNano") or 0),
                                attrs, resource, trace_id, _id(span.get("spanId")), at, where_span)


def _list(parent: Mapping[str, Any], key: str, at: Where, prefix: str) -> list[dict[str, Any]]:
    value = parent.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise at.error(f"expected an array of objects, got {type_name(value)}", prefix + key)
    return value


def _id(value: Any) -> str:
    """A trace or span id as hex: OTLP JSON writes hex; protobuf's own JSON mapping writes base64."""
    if not isinstance(value, str) or not value:
        return ""
    if len(value) in (16, 32) and all(c in "0123456789abcdefABCDEF" for c in value):
        return value.lower()
    try:
        return base64.b64decode(value, validate=True).hex()
    except ValueError:
        return value


def attributes(raw: Any, at: Where, path: str) -> dict[str, Any]:
    """``[{"key": ..., "value": AnyValue}]`` as a dict of plain values."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise at.error(f"expected an array of key/value attributes, got {type_name(raw)}", path)
    out = {}
    for i, kv in enumerate(raw):
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            raise at.error('expected {"key": ..., "value": ...}', f"{path}[{i}]")
        out[kv["key"]] = any_value(kv.get("value"), at, f"{path}[{i}].value")
    return out


def any_value(value: Any, at: Where, path: str) -> Any:
    """An OTLP ``AnyValue`` as a plain value."""
    if not isinstance(value, dict) or not value:
        return None
    kind, inner = next(iter(value.items()))
    if kind in ("stringValue", "doubleValue", "boolValue", "bytesValue"):
        return inner
    if kind == "intValue":
        return int(inner)
    if kind == "arrayValue":
        return [any_value(v, at, f"{path}.arrayValue.values[{i}]") for i, v in enumerate(inner.get("values", []))]
    if kind == "kvlistValue":
        return attributes(inner.get("values", []), at, f"{path}.kvlistValue.values")
    raise at.error(f"unknown AnyValue kind {kind!r}", path)


def _conversation(key: str, spans: list[_Span], dataset: str) -> Conversation:
    messages: list[Message] = []
    calls: dict[str, str] = {}
    first = spans[0]
    for span in spans:
        if INSTRUCTIONS in span.attrs and not any(m.role == "system" for m in messages):
            parts = _json(span.attrs[INSTRUCTIONS], span, INSTRUCTIONS)
            messages.insert(0, _message({"role": "system", "parts": parts}, span, INSTRUCTIONS, calls))
        new = [_message(m, span, f"{INPUT}[{i}]", calls)
               for i, m in enumerate(_messages(span, INPUT))]
        known = {(m.role, m.text) for m in messages if m.role == "system"}
        messages.extend(m for m in new if m.role == "system" and (m.role, m.text) not in known)
        body = [m for m in new if m.role != "system"]
        have = [(m.role, m.text) for m in messages if m.role != "system"]
        # The whole history again (its start is what the conversation holds), or only what is new.
        messages.extend(body[len(have):] if [(m.role, m.text) for m in body][:len(have)] == have else body)
        for i, out in enumerate(_messages(span, OUTPUT)):
            message = _message(out, span, f"{OUTPUT}[{i}]", calls)
            messages.append(Message(message.role, message.text, message.step, message.non_text,
                                    meta={"span_id": span.span_id, "trace_id": span.trace_id}))
    attrs = first.attrs
    meta: Meta = {"conversation_id": key, "trace_id": first.trace_id,
                  "timestamp": datetime.fromtimestamp(first.start / 1e9, UTC).isoformat() if first.start else None}
    model = attrs.get("gen_ai.request.model") or attrs.get("gen_ai.response.model")
    provider = attrs.get("gen_ai.provider.name") or attrs.get("gen_ai.system")
    for name, value in (("model", model), ("provider", provider), ("service", first.resource.get("service.name"))):
        if value is not None:
            meta[name] = str(value)
    return Conversation(key, messages, first.where.record, meta, str(model) if model else None)


def _messages(span: _Span, key: str) -> list[Any]:
    value = _json(span.attrs.get(key), span, key)
    if not isinstance(value, list):
        raise span.where.error(f"expected an array of messages, got {type_name(value)}", f"{span.path}.{key}")
    return value


def _json(value: Any, span: _Span, key: str) -> Any:
    if value is None:
        return []
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            raise span.where.error("invalid JSON in the attribute's string value", f"{span.path}.{key}") from None
    return value


def _message(raw: Any, span: _Span, path: str, calls: dict[str, str]) -> Message:
    at = f"{span.path}.{path}"
    if not isinstance(raw, dict):
        raise span.where.error(f"expected a message object with 'role' and 'parts', got {type_name(raw)}", at)
    role = ROLES.get(str(raw.get("role", "")).lower())
    if role is None:
        raise span.where.error(f"unknown role {raw.get('role')!r}; known roles: {', '.join(ROLES)}", f"{at}.role")
    parts = raw.get("parts") if "parts" in raw else raw.get("content")
    if isinstance(parts, str):
        parts = [{"type": "text", "content": parts}]
    if not isinstance(parts, list):
        raise span.where.error(f"expected an array of parts, got {type_name(parts)}", f"{at}.parts")
    texts: list[str] = []
    lines: list[str] = []
    non_text = 0
    for i, part in enumerate(parts):
        if not isinstance(part, dict):
            raise span.where.error(f"expected a part object, got {type_name(part)}", f"{at}.parts[{i}]")
        kind = part.get("type")
        if kind == "text":
            texts.append(str(part.get("content") or "").strip())
        elif kind == "tool_call":
            name = str(part.get("name") or "tool")
            if part.get("id") is not None:
                calls[str(part["id"])] = name
            lines.append(tool_call_line(name, part.get("arguments")))
        elif kind == "tool_call_response":
            response = part.get("response")
            text = response if isinstance(response, str) else json.dumps(response, ensure_ascii=False,
                                                                         separators=(",", ":"))
            lines.append(tool_result_line(calls.get(str(part.get("id")), "tool"), text.strip()))
        else:
            texts.append(placeholder(str(part.get("modality") or kind or "part"), part))
            non_text += 1
    text = "\n".join(t for t in texts if t)
    if role == "tool" or (role != "assistant" and lines and not text):
        return Message("tool", "\n".join(lines) or text, step=True, non_text=non_text)
    if role == "assistant" and lines and not text:
        return Message("assistant", "\n".join(lines), step=True, non_text=non_text)
    return Message(role, "\n".join([text, *lines]) if lines else text, non_text=non_text)
