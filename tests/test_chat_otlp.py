"""OTLP JSON traces of GenAI spans, as the real OpenTelemetry SDK writes them (tests/otlp_spans.py), read as
chat conversations: one per gen_ai.conversation.id, else per trace."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common")

from judge.core.errors import InputError
from judge.data.items import SYSTEM, USER, Turn
from judge.datasets import detect_format, load_items
from tests.otlp_spans import EXAMPLE, otlp_json, spans


@pytest.fixture(scope="module")
def export() -> dict[str, Any]:
    return otlp_json(spans())


def _write(path: Path, *requests: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in requests), encoding="utf-8")
    return path


def _spans(request: dict[str, Any]) -> list[dict[str, Any]]:
    return request["resourceSpans"][0]["scopeSpans"][0]["spans"]


def test_a_trace_export_reads_as_conversations(export, tmp_path):
    path = _write(tmp_path / "trace.jsonl", export)
    assert detect_format(path) == "otlp"
    items = {it.id: it for it in load_items(path, level="both")}
    lisbon = items["conv-lisbon#4"]
    assert lisbon.fact == "The bot's instructions: You are a travel assistant. Keep answers short."
    # The first call's output (a tool call) and the second call's input (the history again, then the tool's
    # result) are one step of the bot: nothing is repeated.
    assert lisbon.context == (Turn(USER, "Is it raining in Lisbon?"),
                              Turn(SYSTEM, '[tool call] weather({"city":"Lisbon"})\n[tool result] weather: light rain, 14 C'))
    assert lisbon.response == "Yes, light rain and 14 °C: take an umbrella."
    assert lisbon.system == "gpt-4o-mini"
    trace_id = _spans(export)[0]["traceId"]
    assert {k: lisbon.meta[k] for k in ("conversation_id", "model", "provider", "service", "trace_id")} == {
        "conversation_id": "conv-lisbon", "model": "gpt-4o-mini", "provider": "openai", "service": "travel-bot",
        "trace_id": trace_id}
    assert lisbon.meta["span_id"] in {s["spanId"] for s in _spans(export)}
    assert items["conv-lisbon"].level == "dialog" and len(items["conv-lisbon"].dialog) == 3
    # A trace without a conversation id is a conversation of its own; its image part is a placeholder.
    (ticket,) = [it for it in items.values() if it.id.startswith("trace-") and it.level == "turn"]
    assert ticket.context == (Turn(USER, "What is on this ticket?\n[image]"),)
    assert "non_text_part" in ticket.flags
    assert len(items) == 4


def test_protobuf_json_ids_and_spans_on_lines_of_their_own_read_the_same(export, tmp_path):
    """protobuf's own JSON mapping writes base64 ids; an exporter may write a line per span, in any order."""
    expected = load_items(_write(tmp_path / "a.jsonl", export), level="both")
    base64_ids = otlp_json(spans(), hex_ids=False)
    lines = []
    for span in reversed(_spans(base64_ids)):
        one = copy.deepcopy(base64_ids)
        _spans(one)[:] = [span]
        lines.append(one)
    got = load_items(_write(tmp_path / "b.jsonl", *lines), level="both")
    strip = lambda items: [(i.level, i.context, i.response, i.dialog, i.fact) for i in items]  # noqa: E731
    assert sorted(map(repr, strip(got))) == sorted(map(repr, strip(expected)))
    # The base64 ids are read as the hex ids OTLP JSON writes: the conversation without an id is its trace's.
    (ticket,) = {i.group for i in got} - {"conv-lisbon"}
    assert ticket == "trace-" + next(str(i.meta["trace_id"]) for i in got if i.group == ticket)
    assert all(len(i.meta["trace_id"]) == 32 and int(i.meta["trace_id"], 16) for i in got)


def _any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    return {"kvlistValue": {"values": [{"key": k, "value": _any_value(v)} for k, v in value.items()]}}


def test_structured_messages_and_the_older_system_attribute(export, tmp_path):
    data = copy.deepcopy(export)
    for span in _spans(data):
        for attr in span.get("attributes", []):
            if attr["key"] in ("gen_ai.input.messages", "gen_ai.output.messages"):
                attr["value"] = _any_value(json.loads(attr["value"]["stringValue"]))
            if attr["key"] == "gen_ai.provider.name":
                attr["key"] = "gen_ai.system"
    got = load_items(_write(tmp_path / "s.jsonl", data))
    want = load_items(_write(tmp_path / "t.jsonl", export))
    assert [(i.id, i.context, i.response) for i in got] == [(i.id, i.context, i.response) for i in want]
    assert got[0].meta["provider"] == "openai"


def test_bad_messages_name_the_span_and_attribute(export, tmp_path):
    data = copy.deepcopy(export)
    attr = next(a for a in _spans(data)[1]["attributes"] if a["key"] == "gen_ai.output.messages")
    attr["value"] = {"stringValue": "[{\"role\": \"assistant\", \"parts\": "}
    path = _write(tmp_path / "bad.jsonl", {"other": 1}, data)
    with pytest.raises(InputError) as info:
        load_items(path, format="otlp")
    assert info.value.record == 1  # the first line is not an export at all
    path = _write(tmp_path / "bad.jsonl", data)
    with pytest.raises(InputError) as info:
        load_items(path, format="otlp")
    assert (info.value.record, info.value.field) == (1, "resourceSpans[0].scopeSpans[0].spans[1].gen_ai.output.messages")
    assert "invalid JSON" in info.value.reason


def test_a_trace_without_genai_spans_is_an_error(tmp_path):
    request = {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "ab" * 16, "spanId": "cd" * 8,
                                                             "name": "GET /", "attributes": []}]}]}]}
    with pytest.raises(InputError, match="no GenAI chat spans"):
        load_items(_write(tmp_path / "http.jsonl", request))


def test_the_example_trace_was_written_by_the_sdk():
    data = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    resource = {a["key"]: a["value"] for a in data["resourceSpans"][0]["resource"]["attributes"]}
    assert resource["telemetry.sdk.name"] == {"stringValue": "opentelemetry"}
    assert load_items(EXAMPLE)[0].id == "conv-lisbon#4"


def test_one_pretty_printed_export_or_an_array_of_them(export, tmp_path):
    want = [(i.id, i.context, i.response) for i in load_items(_write(tmp_path / "t.jsonl", export))]
    pretty = tmp_path / "trace.json"
    pretty.write_text(json.dumps(export, indent=2), encoding="utf-8")
    array = tmp_path / "traces.json"
    array.write_text(json.dumps([export]), encoding="utf-8")
    for path in (pretty, array):
        assert detect_format(path) == "otlp"
        assert [(i.id, i.context, i.response) for i in load_items(path)] == want
