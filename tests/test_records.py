"""Rows, pair rows and summaries as typed records: files written before the records existed (``fixtures/records``,
written by the dict-building writers the records replaced: a mock ``judge run`` with an LLM method, one that
reasons, a classic scorer and a ``[[compare]]`` cell, and rows of items that carry metadata) read into the
records and write back byte for byte; bad rows are named; the JSON Schemas shipped in docs/schema are the
records' own, and what ``judge score``, ``judge compare`` and ``judge run`` write validates against them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from judge.cli import main
from judge.core.errors import InputError
from judge.records.pair_rows import read_pair_rows
from judge.records.rows import Row, read_rows
from judge.records.schema import SCHEMAS, schema, schema_text
from judge.records.summary import Summary, read_summary

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "records"
EXAMPLES = ROOT / "examples"


@pytest.mark.parametrize("name", ["yesno.jsonl", "reasoned.jsonl", "length.jsonl", "log.jsonl"])
def test_rows_written_before_the_records_read_back_byte_for_byte(name: str) -> None:
    path = FIXTURES / name
    rows = read_rows(path)
    assert rows and all(isinstance(r, Row) for r in rows)
    assert "".join(r.to_json() + "\n" for r in rows) == path.read_text(encoding="utf-8")


def test_the_fixtures_hold_every_optional_part_of_a_row() -> None:
    rows = read_rows(FIXTURES / "reasoned.jsonl") + read_rows(FIXTURES / "log.jsonl")
    assert any(r.reasoned is not None and r.rationale for r in rows)  # reason keys
    assert any(r.reasoned is not None and r.rationale is None and r.error for r in rows)  # a failed item's
    assert any(r.meta for r in rows) and any(r.human is None for r in rows)


def test_pair_rows_and_a_summary_read_back_byte_for_byte() -> None:
    pairs = read_pair_rows(FIXTURES / "pairs.jsonl")
    assert pairs and all(len(p.orders) == 2 for p in pairs)
    assert "".join(p.to_json() + "\n" for p in pairs) == (FIXTURES / "pairs.jsonl").read_text(encoding="utf-8")
    summary = read_summary(FIXTURES)
    assert summary.pairwise and summary.cells[0].stats.spearman.n == 6 and summary.results[0].ci.n_boot == 1000
    assert summary.to_text() == (FIXTURES / "summary.json").read_text(encoding="utf-8")


def test_a_bad_row_is_named_by_file_line_and_key(tmp_path: Path) -> None:
    good = (FIXTURES / "yesno.jsonl").read_text(encoding="utf-8").splitlines()
    row = json.loads(good[1])
    for broken, field in (({**row, "score": "high"}, "score"), ({k: v for k, v in row.items() if k != "human"}, "human"),
                          ({**row, "colour": "red"}, "colour"), ({**row, "examples": "a"}, "examples"),
                          ({**row, "complete": 1}, "complete"), ({**row, "n_prompt_tokens": True}, "n_prompt_tokens")):
        path = tmp_path / "rows.jsonl"
        path.write_text(good[0] + "\n" + json.dumps(broken) + "\n", encoding="utf-8")
        with pytest.raises(InputError) as err:
            read_rows(path)
        assert err.value.file == f"{path}:2" and err.value.record == row["id"] and err.value.field == field
    path.write_text(good[0] + "\n" + good[1][:40], encoding="utf-8")  # a line cut short by a kill is not a row
    assert len(read_rows(path)) == 1


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_the_shipped_schemas_are_the_records_own(name: str) -> None:
    shipped = ROOT / "docs" / "schema" / f"{name}.schema.json"
    assert shipped.read_text(encoding="utf-8") == schema_text(name), \
        f"{shipped} is stale: regenerate it with python -m judge.records.schema docs/schema"
    jsonschema.Draft202012Validator.check_schema(schema(name))


def test_the_schemas_accept_the_fixtures_and_refuse_what_the_records_refuse() -> None:
    row = jsonschema.Draft202012Validator(schema("row"))
    for name in ("yesno.jsonl", "reasoned.jsonl", "length.jsonl", "log.jsonl"):
        for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines():
            row.validate(json.loads(line))
    first = json.loads((FIXTURES / "reasoned.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert not row.is_valid({**first, "colour": "red"}) and not row.is_valid({**first, "score": "high"})
    assert not row.is_valid({k: v for k, v in first.items() if k != "unparsed"})  # reason keys: all or none
    pair = jsonschema.Draft202012Validator(schema("pair_row"))
    for line in (FIXTURES / "pairs.jsonl").read_text(encoding="utf-8").splitlines():
        pair.validate(json.loads(line))
    jsonschema.validate(json.loads((FIXTURES / "summary.json").read_text(encoding="utf-8")), schema("summary"))


RUN = """
name = "schema"
datasets = ["TU"]
qualities = ["Overall"]
limit = 4
[defaults]
backend = "mock"
generate = { cache = false }
[[methods]]
name = "yesno"
prompt = "yesno"
[[methods]]
type = "classic"
scorer = "length"
[[compare]]
name = "pw"
backend = "mock"
against = "yesno"
contexts = { TU = 2 }
"""


def _valid_rows(path: Path, kind: str) -> None:
    """Every line of ``path`` valid against schema ``kind``, and the file read into records and written back
    the same bytes."""
    validator = jsonschema.Draft202012Validator(schema(kind))
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines
    for line in lines:
        validator.validate(json.loads(line))
    records = read_rows(path) if kind == "row" else read_pair_rows(path)
    assert "".join(r.to_json() + "\n" for r in records) == path.read_text(encoding="utf-8")


def test_what_score_and_compare_write_validates_and_reads_back(tmp_path: Path) -> None:
    scored = tmp_path / "s.jsonl"
    assert main(["score", str(EXAMPLES / "dialogues.jsonl"), "--backend", "mock", "--no-cache", "-o", str(scored),
                 "--no-progress"]) == 0
    _valid_rows(scored, "row")
    llm = read_rows(scored)
    assert all(r.prompt_sha and r.template_sha for r in llm) and len({r.template_sha for r in llm}) == 1
    compared = tmp_path / "c.jsonl"
    assert main(["compare", str(EXAMPLES / "bot_v1.jsonl"), str(EXAMPLES / "bot_v2.jsonl"), "--backend", "mock",
                 "--no-cache", "-o", str(compared), "--no-progress"]) == 0
    _valid_rows(compared, "pair_row")


@pytest.mark.slow
def test_what_run_writes_validates_reads_back_and_is_the_same_bytes_again(tmp_path: Path, data_dir: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(RUN)
    for out in (tmp_path / "a", tmp_path / "b"):
        assert main(["run", str(config), "--data-dir", str(data_dir), "-o", str(out), "--no-progress"]) == 0
    out = tmp_path / "a"
    cells = sorted((out / "items").rglob("*.jsonl"))
    assert len(cells) == 2
    for path in cells:
        _valid_rows(path, "row")
        assert path.read_bytes() == (tmp_path / "b" / path.relative_to(out)).read_bytes()  # hashes included
    assert all(r.prompt_sha is None for r in read_rows(out / "items" / "length" / "topical-usr" / "Overall" /
                                                       "seed0.jsonl"))  # a classic scorer reads no prompt
    _valid_rows(out / "compare" / "pw" / "topical-usr" / "Overall" / "against.jsonl", "row")
    _valid_rows(out / "compare" / "pw" / "topical-usr" / "Overall" / "pairs.jsonl", "pair_row")
    jsonschema.validate(json.loads((out / "summary.json").read_text(encoding="utf-8")), schema("summary"))
    summary = read_summary(out)
    assert isinstance(summary, Summary) and summary.pairwise
    assert summary.to_text() == (out / "summary.json").read_text(encoding="utf-8")


def test_the_documented_command_writes_the_shipped_schemas(tmp_path: Path) -> None:
    """``python -m judge.records.schema docs/schema`` (docs/scoring.md) writes exactly the files shipped."""
    proc = subprocess.run([sys.executable, "-m", "judge.records.schema", str(tmp_path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(p.name for p in (ROOT / "docs" / "schema").iterdir()) == \
        sorted(f"{n}.schema.json" for n in SCHEMAS)
    assert all((tmp_path / n).read_bytes() == (ROOT / "docs" / "schema" / n).read_bytes() for n in written)
