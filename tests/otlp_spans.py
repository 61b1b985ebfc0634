"""GenAI chat spans written by the real OpenTelemetry SDK and serialised as OTLP JSON, the way an OTLP file
exporter writes them: the SDK's spans through the OTLP protobuf encoder, then protobuf's JSON mapping with
the two changes the OTLP/JSON encoding makes to it (trace and span ids as hex, not base64; enums as
integers). ``python tests/otlp_spans.py`` rewrites examples/chat/traces.jsonl."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "chat" / "traces.jsonl"

SYSTEM = [{"type": "text", "content": "You are a travel assistant. Keep answers short."}]
FIRST_IN = [{"role": "user", "parts": [{"type": "text", "content": "Is it raining in Lisbon?"}]}]
FIRST_OUT = [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "weather",
                                              "arguments": {"city": "Lisbon"}}], "finish_reason": "tool_call"}]
SECOND_IN = [*FIRST_IN, *FIRST_OUT,
             {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "light rain, 14 C"}]}]
SECOND_OUT = [{"role": "assistant", "parts": [{"type": "text", "content": "Yes, light rain and 14 °C: take an umbrella."}],
               "finish_reason": "stop"}]
THIRD_IN = [{"role": "user", "parts": [{"type": "text", "content": "What is on this ticket?"},
                                       {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "iVBO"}]}]
THIRD_OUT = [{"role": "assistant", "parts": [{"type": "text", "content": "It is a train ticket from Porto to Lisbon."}],
              "finish_reason": "stop"}]


def spans() -> list[Any]:
    """Three chat spans: a conversation of two model calls (a tool call, then the reply, the second call
    with the whole history), and another trace with an image part and no conversation id."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "travel-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("travel-bot")
    calls = [(FIRST_IN, FIRST_OUT, "conv-lisbon"), (SECOND_IN, SECOND_OUT, "conv-lisbon"), (THIRD_IN, THIRD_OUT, None)]
    with tracer.start_as_current_span("invoke_agent travel"):
        for inputs, outputs, conversation in calls[:2]:
            _chat(tracer, inputs, outputs, conversation)
    with tracer.start_as_current_span("invoke_agent tickets"):
        _chat(tracer, *calls[2])
    provider.shutdown()
    return list(exporter.get_finished_spans())


def _chat(tracer: Any, inputs: list, outputs: list, conversation: str | None) -> None:
    with tracer.start_as_current_span("chat gpt-4o-mini") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.provider.name", "openai")
        span.set_attribute("gen_ai.request.model", "gpt-4o-mini")
        if conversation:
            span.set_attribute("gen_ai.conversation.id", conversation)
        span.set_attribute("gen_ai.system_instructions", json.dumps(SYSTEM))
        span.set_attribute("gen_ai.input.messages", json.dumps(inputs, ensure_ascii=False))
        span.set_attribute("gen_ai.output.messages", json.dumps(outputs, ensure_ascii=False))


def otlp_json(finished: list[Any], hex_ids: bool = True) -> dict[str, Any]:
    """One ExportTraceServiceRequest as OTLP JSON (``hex_ids=False``: protobuf's own mapping, base64 ids)."""
    data = json_format.MessageToDict(encode_spans(finished), use_integers_for_enums=True)
    if hex_ids:
        for resource in data["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in span:
                            span[key] = base64.b64decode(span[key]).hex()
    return data


if __name__ == "__main__":
    EXAMPLE.write_text(json.dumps(otlp_json(spans()), ensure_ascii=False) + "\n", encoding="utf-8")
