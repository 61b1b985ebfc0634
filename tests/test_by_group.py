"""Answers per version (judge.stats.by_group, judge.report.by_group, ``judge summarize``, ``judge score --by``)
and the scores written back as OTLP ``gen_ai.evaluation.result`` events."""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from judge.cli import main
from judge.core.errors import InputError
from judge.records.by_group import tally_row
from judge.records.rows import Row, read_rows
from judge.report.by_group import render_csv, render_markdown
from judge.stats.by_group import Tally, natural
from judge.stats.floor import MIN_CONVERSATIONS, too_few_text
from tools.browser import missing, run_isolated

ROOT = Path(__file__).resolve().parents[1]
VERSIONS = ROOT / "examples" / "chat" / "versions.jsonl"
TRACES = ROOT / "examples" / "chat" / "traces.jsonl"
MOCK = ["--backend", "mock", "--model", "m", "--no-cache"]


def tally_rows(by: list[str], rows: list[Row]) -> Tally:
    """A tally of ``rows`` as ``judge summarize`` adds them, one row at a time."""
    tally = Tally(by)
    for row in rows:
        tally_row(tally, row)
    return tally


def _row(row_id: str, score: float | None, version: str, method: str = "m") -> Row:
    return Row(id=row_id, method=method, seed=None, quality="overall", human=None, score=score,
               label_probs=None if score is None else {"yes": score, "no": round(1 - score, 6)}, examples=(), flags=(),
               estimated=False, complete=True, error=None if score is not None else "boom", system="bot",
               group=row_id.split("#")[0], n_prompt_tokens=0, meta={"version": version})


def _rows(version: str, per_conv: list[list[float | None]]) -> list[Row]:
    return [_row(f"{version}-c{c}#{t}", s, version) for c, scores in enumerate(per_conv) for t, s in enumerate(scores)]


def test_the_mean_and_its_interval_resample_conversations_not_turns():
    # One long conversation of low scores and six short high ones: drawing conversations moves the mean far
    # more than drawing turns would.
    convs: list[list[float | None]] = [[0.1] * 20] + [[0.9, 0.8]] * (MIN_CONVERSATIONS - 1) + [[0.5, None]]
    result = tally_rows(["version"], _rows("1", convs)).summary(n_boot=500)
    (g,) = result.groups
    scored = [s for c in convs for s in c if s is not None]
    assert g.mean == pytest.approx(sum(scored) / len(scored))
    assert (g.n_items, g.n_failed, g.n_conversations, g.n_resampled) == (34, 1, 8, 8)
    # The same draws by hand: conversations with replacement, the item mean of what was drawn.
    sums = np.array([sum(s for s in c if s is not None) for c in convs])
    counts = np.array([sum(s is not None for s in c) for c in convs])
    draws = np.random.default_rng(0).integers(0, len(convs), size=(500, len(convs)))
    lo, hi = np.quantile(sums[draws].sum(1) / counts[draws].sum(1), [0.025, 0.975])
    assert (g.low, g.high) == (pytest.approx(lo), pytest.approx(hi))
    assert g.low < g.mean < g.high and g.high - g.low > 0.2
    assert g.quantiles["min"] == 0.1 and g.quantiles["max"] == 0.9 and sum(g.histogram) == len(scored)


def test_below_the_floor_there_is_no_interval():
    few = tally_rows(["version"], _rows("1", [[0.5, 0.6]] * (MIN_CONVERSATIONS - 1))).summary()
    (g,) = few.groups
    assert g.too_few and g.low is None and g.high is None and g.mean == pytest.approx(0.55)
    text = render_markdown(few)
    assert too_few_text(MIN_CONVERSATIONS - 1) in text and "[" not in text.split("\n")[6].split("|")[3]
    assert ",too few conversations (6)," in render_csv(few)


def test_the_worst_conversations_come_lowest_first_with_their_lowest_item_linked():
    rows = _rows("2", [[0.9, 0.2], [0.3, 0.4], [0.8], [None], [0.3, 0.35]])
    result = tally_rows(["version"], rows).summary(worst=3)
    (g,) = result.groups
    assert [(c.id, c.worst_item) for c in g.worst] == [("2-c4", "2-c4#0"), ("2-c1", "2-c1#0"), ("2-c0", "2-c0#1")]
    assert "[2-c4#0](view.html#item=2-c4%230)" in render_markdown(result, "view.html")


def test_where_lower_is_better_the_worst_conversations_are_the_highest(tmp_path, capsys):
    rows = _rows("2", [[0.9, 0.2], [0.3, 0.4], [0.8], [0.3, 0.35]])
    result = tally_rows(["version"], rows).summary(worst=2, lower_is_better=True)
    (g,) = result.groups
    assert [(c.id, c.worst_item, c.worst_score) for c in g.worst] == [("2-c2", "2-c2#0", 0.8),
                                                                       ("2-c0", "2-c0#0", 0.9)]
    assert "| highest item |" in render_markdown(result) and "scored highest" in render_markdown(result)
    # The flag on the command, and a benchmark set's negative quality (robotic) known without it.
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(r.to_json() + "\n" for r in rows))
    assert main(["summarize", str(path), "--by", "version", "--worst", "1", "--lower-is-better"]) == 0
    assert "| 2-c2 | 0.800 |" in capsys.readouterr().out
    robotic = tmp_path / "robotic.jsonl"
    robotic.write_text("".join(Row(**{**r.__dict__, "quality": "robotic"}).to_json() + "\n" for r in rows))
    assert main(["summarize", str(robotic), "--by", "version", "--worst", "1"]) == 0
    out = capsys.readouterr().out
    assert "| 2-c2 | 0.800 |" in out and "Lower is better on robotic" in out


def test_groups_are_in_natural_order_and_a_second_method_is_refused():
    tally = tally_rows(["version"], [_row(f"{v}-c#1", 0.5, v) for v in ("2.10", "2.9", "10", "9")])
    assert [g.key for g in tally.summary().groups] == [("2.9",), ("2.10",), ("9",), ("10",)]
    assert natural(("v9",)) < natural(("v10",))
    with pytest.raises(InputError, match="two methods"):
        tally_row(tally, _row("x#1", 0.5, "9", method="other"))


def _score(tmp_path: Path, *extra: str, log: Path = VERSIONS) -> Path:
    rows = tmp_path / "rows.jsonl"
    assert main(["score", str(log), "-o", str(rows), *extra, *MOCK]) == 0
    return rows


def test_score_by_version_prints_what_summarize_prints_and_the_files_are_the_same_bytes_again(tmp_path, capsys):
    rows = _score(tmp_path, "--by", "version", "--summary", str(tmp_path / "s1"), "--worst", "3")
    printed = capsys.readouterr().out
    assert "| 2.3 |" in printed and "| 2.4 |" in printed and "### Worst conversations: version=2.4" in printed
    assert main(["summarize", str(rows), "--by", "version", "--worst", "3", "-o", str(tmp_path / "s2")]) == 0
    assert capsys.readouterr().out.strip() == printed.strip()
    for name in ("by_group.md", "by_group.html", "by_group.csv"):
        assert (tmp_path / "s1" / name).read_bytes() == (tmp_path / "s2" / name).read_bytes()
    csv_lines = (tmp_path / "s2" / "by_group.csv").read_text().splitlines()
    assert csv_lines[0].startswith("version,n_items,n_failed,n_conversations,mean,ci_low,ci_high")
    assert [line.split(",")[:4] for line in csv_lines[1:]] == [["2.3", "20", "0", "10"], ["2.4", "20", "0", "10"]]
    # Per version: the rows' own mean.
    by_version: dict[str, list[float]] = {}
    for r in read_rows(rows):
        by_version.setdefault(str(r.meta["version"]), []).append(r.score)  # type: ignore[index,arg-type]
    assert float(csv_lines[1].split(",")[4]) == pytest.approx(np.mean(by_version["2.3"]), abs=1e-6)


def test_several_fields_and_a_missing_one(tmp_path, capsys):
    rows = _score(tmp_path)
    assert main(["summarize", str(rows), "--by", "model,date", "--format", "csv"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("model,date,n_items") and [x.split(",")[:3] for x in out[1:]] == [
        ["shopbot", "2026-11-28", "20"], ["shopbot", "2026-11-30", "20"]]
    assert main(["summarize", str(rows), "--by", "release"]) == 2
    assert "field 'release'" in capsys.readouterr().err
    assert main(["score", str(VERSIONS), "--summary", str(tmp_path / "x"), *MOCK]) == 2
    assert "--by" in capsys.readouterr().err
    assert main(["score", str(VERSIONS), "--by", "version", "--level", "both", *MOCK]) == 2
    assert "one level at a time" in capsys.readouterr().err


def _spans_of_replies() -> dict[str, tuple[str, str]]:
    """Each reply's text in the example trace export -> the (trace id, span id) of the span that output it."""
    out = {}
    for line in TRACES.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    attrs = {a["key"]: a["value"].get("stringValue") for a in span.get("attributes", [])}
                    for message in json.loads(attrs.get("gen_ai.output.messages") or "[]"):
                        for part in message["parts"]:
                            if part["type"] == "text":
                                out[part["content"]] = (span["traceId"], span["spanId"])
    return out


def test_evaluation_events_are_otlp_logs_parented_to_the_judged_spans(tmp_path, monkeypatch):
    from google.protobuf import json_format
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1796000000")
    events = tmp_path / "events.jsonl"
    rows = _score(tmp_path, "--otlp-out", str(events), log=TRACES)
    scored = {r.id: r for r in read_rows(rows)}
    from judge.datasets import load_items

    texts = {it.id: it.response for it in load_items(str(TRACES))}
    spans = _spans_of_replies()
    records = []
    for line in events.read_text().splitlines():
        data = json.loads(line)
        for rl in data["resourceLogs"]:
            for sl in rl["scopeLogs"]:
                records += sl["logRecords"]
                for rec in sl["logRecords"]:  # protobuf's JSON mapping wants base64 where OTLP/JSON writes hex
                    for key in ("traceId", "spanId"):
                        if key in rec:
                            rec[key] = base64.b64encode(bytes.fromhex(rec[key])).decode()
        message = json_format.Parse(json.dumps(data), ExportLogsServiceRequest())  # unknown fields are errors
        for rec in message.resource_logs[0].scope_logs[0].log_records:
            assert rec.event_name == "gen_ai.evaluation.result" and rec.time_unix_nano == 1796000000 * 10**9
            assert len(rec.trace_id) == 16 and len(rec.span_id) == 8
    assert len(records) == len(scored) == 2
    for line_rec in json.loads(events.read_text().splitlines()[0])["resourceLogs"][0]["scopeLogs"][0]["logRecords"]:
        attrs = {a["key"]: next(iter(a["value"].values())) for a in line_rec["attributes"]}
        row = scored[attrs["judge.item.id"]]
        assert attrs["gen_ai.evaluation.name"] == row.method
        assert attrs["gen_ai.evaluation.score.value"] == row.score
        assert attrs["gen_ai.evaluation.score.label"] == max(row.label_probs, key=lambda k: row.label_probs[k])  # type: ignore[arg-type,index]
        assert (line_rec["traceId"], line_rec["spanId"]) == spans[texts[row.id]]
        assert line_rec["timeUnixNano"] == "1796000000000000000"
    again = tmp_path / "again.jsonl"
    assert main(["summarize", str(rows), "--by", "model", "--otlp-out", str(again)]) == 0
    assert again.read_bytes() == events.read_bytes()


def test_a_reply_without_a_span_is_written_unparented(tmp_path):
    from judge.report.evaluation_events import log_record

    rec = log_record(_row("c#1", 0.25, "1"), 5)
    assert "traceId" not in rec and "spanId" not in rec
    assert {"key": "gen_ai.conversation.id", "value": {"stringValue": "c"}} in rec["attributes"]
    failed = log_record(_row("c#2", None, "1"), 5)
    keys = {a["key"]: a["value"] for a in failed["attributes"]}
    assert "gen_ai.evaluation.score.value" not in keys and keys["error.type"] == {"stringValue": "_OTHER"}


@pytest.mark.slow
def test_a_worst_conversations_link_opens_its_item_in_the_view(tmp_path):
    why = missing()
    if why is not None:  # as tests/conftest.py's skip_unless_required: CI requires the browser
        if os.environ.get("JUDGE_REQUIRE_BROWSER"):
            pytest.fail(f"the browser tests cannot run: {why}")
        pytest.skip(f"the browser tests cannot run here: {why}")
    view = tmp_path / "view.html"
    rows = _score(tmp_path, "--view", str(view))
    result = tally_rows(["version"], read_rows(rows)).summary(worst=1)
    target = result.groups[1].worst[0].worst_item
    assert target is not None and "#" in target
    proc = run_isolated([sys.executable, str(ROOT / "tests" / "view_anchor.py"),
                         json.dumps({"page": str(view), "item": target})], cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got == {"item": target, "count": 1, "search": target, "errors": []}


def _section_commands() -> list[list[str]]:
    from tests.test_docs_commands import judge_commands

    text = (ROOT / "docs" / "chat-logs.md").read_text(encoding="utf-8")
    section = text[text.index("## Answers per version"):text.index("## Large logs")]
    return judge_commands(section)


def test_the_answers_per_version_commands_of_the_page_run_and_print_its_table(tmp_path, monkeypatch, capsys):
    commands = _section_commands()
    assert [c[0] for c in commands] == ["score", "summarize", "summarize", "score"]
    monkeypatch.chdir(tmp_path)
    printed = []
    for args in commands:
        mapped = [str(ROOT / a) if a.startswith("examples/") else a for a in args]
        assert main([*mapped, *(MOCK if args[0] == "score" else [])]) == 0, capsys.readouterr().err
        printed.append(capsys.readouterr().out)
    page = (ROOT / "docs" / "chat-logs.md").read_text(encoding="utf-8")
    table = [line for line in printed[0].splitlines() if line.startswith("| 2.")]
    assert len(table) == 2 and all(line in page for line in table)  # the page's figures are the command's
    written = (tmp_path / "summary" / "by_group.md").read_text()
    assert printed[1].split("### ")[0] == written.split("### ")[0]  # the links differ: relative to the folder
    assert "(../view.html#item=conv-" in written
    assert printed[2].splitlines()[0].startswith("model,date,n_items")
    assert (tmp_path / "view.html").is_file() and "view.html#item=conv-" in printed[1]
    assert "gen_ai.evaluation.result" in (tmp_path / "evaluations.jsonl").read_text()


def test_the_chat_stream_benchmark_at_its_smallest(tmp_path):
    """benchmarks/chat_stream.py on 40 turns: both runs' rows, peaks and items/s, the ratio and the verdict."""
    import subprocess

    proc = subprocess.run([sys.executable, "benchmarks/chat_stream.py", "--turns", "40", "--per-conversation", "4",
                           "--keep", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "40 assistant turns in 10 conversations" in out and "messages vs native: items/s" in out
    assert "target: peak RSS of the log's run under 1024 MB" in out and ": met" in out
    assert sum(1 for _ in (tmp_path / "log_rows.jsonl").open()) == 40
    # The same turns in both formats: the same ids, and on the mock backend the same scores.
    log_rows = {r.id: r.score for r in read_rows(tmp_path / "log_rows.jsonl")}
    assert log_rows == {r.id: r.score for r in read_rows(tmp_path / "native_rows.jsonl")}


def test_summarize_reads_the_one_cell_of_a_results_folder_and_links_its_view(tmp_path, capsys):
    rows = _score(tmp_path)
    cell = tmp_path / "run" / "items" / "yesno" / "versions" / "overall" / "seed0.jsonl"
    cell.parent.mkdir(parents=True)
    cell.write_bytes(rows.read_bytes())
    (tmp_path / "run" / "view.html").write_text("<html></html>")
    assert main(["summarize", str(tmp_path / "run"), "--by", "version", "--worst", "1"]) == 0
    assert f"({tmp_path / 'run' / 'view.html'}#item=conv-" in capsys.readouterr().out
    (cell.parent.parent / "other" / "seed0.jsonl").parent.mkdir()
    (cell.parent.parent / "other" / "seed0.jsonl").write_bytes(rows.read_bytes())
    assert main(["summarize", str(tmp_path / "run"), "--by", "version"]) == 2
    assert "2 cells" in capsys.readouterr().err


def test_an_event_is_what_the_opentelemetry_sdk_encodes_for_the_same_log_record():
    """The record written for a row equals the one the SDK's own OTLP encoder makes of an SDK log record with
    the same fields, in OTLP JSON (protobuf's JSON mapping with hex ids and integer enums)."""
    from google.protobuf import json_format
    from opentelemetry._logs import LogRecord, SeverityNumber
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.sdk._logs import ReadableLogRecord
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    from judge.core.distribution import SOURCE_VERSION
    from judge.report.evaluation_events import SCHEMA_URL, export_request, log_record

    row = _row("conv-9#4", 0.625, "2.4")
    row = Row(**{**row.__dict__, "meta": {"version": "2.4", "trace_id": "0af7651916cd43dd8448eb211c80319c",
                                          "span_id": "b7ad6b7169203331", "conversation_id": "conv-9"}})
    ours = export_request([log_record(row, 1796000000 * 10**9)])
    attrs = {"gen_ai.evaluation.name": "m", "gen_ai.evaluation.score.value": 0.625,
             "gen_ai.evaluation.score.label": "yes", "gen_ai.conversation.id": "conv-9", "judge.item.id": "conv-9#4",
             "judge.quality": "overall"}
    sdk_record = LogRecord(timestamp=1796000000 * 10**9, observed_timestamp=1796000000 * 10**9,
                           trace_id=int("0af7651916cd43dd8448eb211c80319c", 16), span_id=int("b7ad6b7169203331", 16),
                           severity_text="INFO", severity_number=SeverityNumber.INFO, attributes=attrs,
                           event_name="gen_ai.evaluation.result")
    readable = ReadableLogRecord(sdk_record, Resource({"service.name": "judge"}),
                                 InstrumentationScope("judge", SOURCE_VERSION, SCHEMA_URL))
    theirs = json_format.MessageToDict(encode_logs([readable]), use_integers_for_enums=True)
    for resource in theirs["resourceLogs"]:
        for scope in resource["scopeLogs"]:
            for rec in scope["logRecords"]:
                for key in ("traceId", "spanId"):
                    rec[key] = base64.b64decode(rec[key]).hex()
    # What the SDK adds that means nothing here: an empty body (an event's is optional) and trace flags of 0.
    (rec,) = theirs["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    assert rec.pop("body", {}) == {} and rec.pop("flags", 0) == 0
    assert ours == theirs


@pytest.mark.slow  # forty SmolLM2 prompts (about 10-25 s); the mock runs above guard the same path in the fast tier
def test_a_real_model_answers_per_version_and_summarize_reads_its_rows_back_the_same(tmp_path, capsys):
    """End to end with the embedded default model (SmolLM2 via llama.cpp, in process): a chat log of two versions
    is scored with ``--by version``; each version gets a mean with a conversation interval (10 conversations
    each, above the floor) and its worst conversations, and ``judge summarize`` of the rows written prints the
    very same table."""
    rows = tmp_path / "rows.jsonl"
    log = str(ROOT / "examples" / "chat" / "versions.jsonl")
    assert main(["score", log, "--by", "version", "--threads", "2", "-o", str(rows), "--no-progress"]) == 0
    scored = capsys.readouterr().out
    written = read_rows(rows)
    assert len(written) == 40 and all(r.error is None and r.score is not None for r in written)
    assert len({r.score for r in written}) > 10  # a real model's scores, not one constant
    assert main(["summarize", str(rows), "--by", "version"]) == 0
    again = capsys.readouterr().out
    table = scored[scored.index("## Scores per version"):]
    assert table and table == again[again.index("## Scores per version"):]
    for version in ("2.3", "2.4"):
        line = next(x for x in table.splitlines() if x.startswith(f"| {version} |"))
        assert "too few" not in line and line.count("[") == 1, line
        assert f"### Worst conversations: version={version}" in table
