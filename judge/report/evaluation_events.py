"""Scores written back to a chatbot's telemetry: OpenTelemetry ``gen_ai.evaluation.result`` events as OTLP
JSON, the logs format an OpenTelemetry file exporter writes (one ``ExportLogsServiceRequest`` per line:
``resourceLogs`` -> ``scopeLogs`` -> ``logRecords``).

The event follows the GenAI semantic conventions of OpenTelemetry semantic-conventions v1.38.0, the release
that defined it (stability: development): ``gen_ai.evaluation.name`` (required; here the judge's method),
``gen_ai.evaluation.score.value`` and ``gen_ai.evaluation.score.label`` (where the item was scored: the
score and the judge's most likely answer label), ``gen_ai.evaluation.explanation`` (the judge's own words,
where its method reasons first) and ``error.type`` for an item that failed. The event SHOULD be parented to
the span it evaluates: a reply read from an OTLP trace export carries its span's ``trace_id`` and ``span_id``
in its row's ``meta`` (judge.datasets.chat.otlp), and its record carries them as ``traceId`` / ``spanId``.
A reply from another log has no span; its record says which conversation and item it judges
(``gen_ai.conversation.id``, ``judge.item.id``).

OTLP JSON differs from protobuf's own JSON mapping in two ways that matter here: trace and span ids are hex
(not base64) and 64-bit integers (``timeUnixNano``) are strings. The time of every record is the time the file
is written, or ``SOURCE_DATE_EPOCH`` (seconds) when that is set, so a rebuild can be byte-identical.
"""

from __future__ import annotations

import os
import time
from typing import IO, Any

from ..core.distribution import SOURCE_VERSION
from ..core.io import dumps
from ..records.rows import Row

EVENT = "gen_ai.evaluation.result"
#: The semantic-conventions release whose event this is (also the records' scope schema URL).
SEMCONV_VERSION = "1.38.0"
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
#: Records per ExportLogsServiceRequest line.
BATCH = 1000
#: OTLP's severity number of INFO (an evaluation is not an error, even of a bad reply).
SEVERITY_INFO = 9
#: ``error.type`` of an item the judge failed on (the semantic conventions' value for an unnamed class).
FAILED = "_OTHER"
_HEX = frozenset("0123456789abcdef")


def record_time() -> int:
    """Nanoseconds since the epoch: ``SOURCE_DATE_EPOCH`` when set, else now."""
    fixed = os.environ.get("SOURCE_DATE_EPOCH")
    return int(fixed) * 1_000_000_000 if fixed and fixed.isdigit() else time.time_ns()


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": str(value)}


def _attributes(pairs: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in pairs if v is not None]


def top_label(row: Row) -> str | None:
    """The judge's most likely answer label (the first of equals), None without label probabilities."""
    probs = [(p, label) for label, p in (row.label_probs or {}).items() if p is not None]
    if not probs:
        return None
    best = max(p for p, _ in probs)
    return next(label for p, label in probs if p == best)


def _hex_id(value: Any, digits: int) -> str | None:
    text = str(value).lower() if value is not None else ""
    return text if len(text) == digits and set(text) <= _HEX and text.strip("0") else None


def log_record(row: Row, nanos: int) -> dict[str, Any]:
    """The ``gen_ai.evaluation.result`` log record of one row."""
    meta = row.meta or {}
    failed = row.error is not None or row.score is None
    attrs = _attributes([
        ("gen_ai.evaluation.name", row.method),
        ("gen_ai.evaluation.score.value", None if failed else float(row.score)),  # type: ignore[arg-type]
        ("gen_ai.evaluation.score.label", None if failed else top_label(row)),
        ("gen_ai.evaluation.explanation", row.error if failed else row.rationale),
        ("error.type", FAILED if failed else None),
        ("gen_ai.conversation.id", meta.get("conversation_id") or row.group),
        ("judge.item.id", row.id),
        ("judge.quality", row.quality),
    ])
    out: dict[str, Any] = {"timeUnixNano": str(nanos), "observedTimeUnixNano": str(nanos),
                           "severityNumber": SEVERITY_INFO, "severityText": "INFO", "eventName": EVENT,
                           "attributes": attrs}
    trace_id, span_id = _hex_id(meta.get("trace_id"), 32), _hex_id(meta.get("span_id"), 16)
    if trace_id:
        out["traceId"] = trace_id
        if span_id:
            out["spanId"] = span_id
    return out


def export_request(records: list[dict[str, Any]]) -> dict[str, Any]:
    """One ``ExportLogsServiceRequest`` holding ``records``."""
    return {"resourceLogs": [{
        "resource": {"attributes": _attributes([("service.name", "judge")])},
        "scopeLogs": [{"scope": {"name": "judge", "version": SOURCE_VERSION}, "logRecords": records,
                       "schemaUrl": SCHEMA_URL}]}]}


class EventWriter:
    """Rows in, OTLP JSON lines out, a batch of BATCH records per line as the rows come (a sink of
    :meth:`judge.engine.session.Session.rows`); :meth:`close` writes the last batch."""

    def __init__(self, out: IO[str], nanos: int | None = None) -> None:
        self.out = out
        self.nanos = record_time() if nanos is None else nanos
        self.batch: list[dict[str, Any]] = []
        self.count = 0

    def add(self, row: Row) -> None:
        self.batch.append(log_record(row, self.nanos))
        self.count += 1
        if len(self.batch) >= BATCH:
            self.flush()

    def flush(self) -> None:
        if self.batch:
            self.out.write(dumps(export_request(self.batch)) + "\n")
            self.batch = []

    def close(self) -> None:
        self.flush()

