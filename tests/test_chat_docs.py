"""Every command of docs/chat-logs.md runs (mock backend), the reader's own files made here: a Parquet and a CSV
table with the columns the page names, and a dataset folder for the hub id (read by the same
``datasets.load_dataset`` call)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.cli import main
from tests.test_docs_commands import judge_commands

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "chat-logs.md"
#: The commands of "Answers per version" run in tests/test_by_group.py, in order, in a folder of their own.
COMMANDS = [c for c in judge_commands(PAGE.read_text(encoding="utf-8"))
            if c[0] != "summarize" and "--by" not in c and "--otlp-out" not in c]
HUB_ID = "my-org/support-logs"


@pytest.fixture(scope="module")
def own_files(tmp_path_factory) -> dict[str, Path]:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    folder = tmp_path_factory.mktemp("own")
    parquet = folder / "logs.parquet"
    pq.write_table(pa.Table.from_pylist([{"session": "s1", "prompt": "hi", "completion": "hello, how can I help?"},
                                         {"session": "s2", "prompt": "bye", "completion": ""}]), parquet)
    csv = folder / "logs.csv"
    pcsv.write_csv(pa.Table.from_pylist([{"question": "is it open?", "answer": "yes, until 9", "thumbs": "up"}]), csv)
    hub = folder / "support-logs"
    hub.mkdir()
    first = json.loads((ROOT / "examples" / "chat" / "messages.jsonl").read_text().splitlines()[0])
    pq.write_table(pa.Table.from_pylist([first]), hub / "train.parquet")
    return {"logs.parquet": parquet, "logs.csv": csv, HUB_ID: hub, "scores.jsonl": folder / "scores.jsonl"}


def _run(args: list[str], own: dict[str, Path], capsys) -> list[dict]:
    mapped = [str(own[a]) if a in own else str(ROOT / a) if a.startswith("examples/") else a for a in args]
    if "-o" not in mapped and args[0] == "score":
        mapped += ["--format", "jsonl"]
    assert main([*mapped, "--backend", "mock", "--model", "m", "--no-cache"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    if "-o" in mapped:
        out = Path(mapped[mapped.index("-o") + 1]).read_text(encoding="utf-8")
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_the_page_has_its_commands():
    assert len(COMMANDS) >= 9 and any(HUB_ID in c for c in COMMANDS)


@pytest.mark.parametrize("args", [c for c in COMMANDS if HUB_ID not in c], ids=lambda c: " ".join(c[:4]))
def test_a_command_of_the_page_runs(args, own_files, capsys):
    rows = _run(args, own_files, capsys)
    if args[0] == "score":
        assert rows and all(r["error"] is None for r in rows)
        if "--quality" in args:
            assert any(r["human"] is not None for r in rows)
    else:
        assert not rows  # bench prints its summary, not rows


@pytest.mark.slow
def test_the_hub_command_runs_on_a_dataset_folder(own_files, capsys):
    (args,) = [c for c in COMMANDS if HUB_ID in c]
    rows = _run(args, own_files, capsys)
    assert [r["id"] for r in rows] == ["conv-001#4", "conv-001#6"]
