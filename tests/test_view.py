"""``judge view`` without a browser: the page's embedded data against the run's rows and summary, each
item's prompt against what the backend was sent in the same run, the CLI, ``--serve`` and the links.

Runs on the mock backend over the real benchmark data (tests/test_view_browser.py opens the page in
Chromium; tests/test_view_model.py checks the chat wrapping a real model records)."""

from __future__ import annotations

import base64
import gzip
import json
import re
import subprocess
import sys
import urllib.request
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from judge.backends.mock import MockBackend
from judge.cli import main
from judge.records.results import cell_path
from judge.records.rows import Reasoned
from judge.records.rows import read_rows as read_row_records
from judge.stats import correlation as stats
from judge.view import from_results, write_view
from tests.view_runs import record_prompts, run


def read_rows(path):
    """A rows file's rows as written (JSON objects), read through the row record."""
    return [r.to_dict() for r in read_row_records(path)]


ROOT = Path(__file__).resolve().parents[1]

LISTWISE = """
[[methods]]
name = "listwise"
prompt = "yesno-criteria-listwise"
"""
OTHERS = """
[[methods]]
name = "ens"
type = "ensemble"
members = ["yesno", "rating-exp"]
[[methods]]
type = "classic"
scorer = "length"
"""


def embedded(html: str) -> tuple[dict, dict[str, list[str]]]:
    """The page's data and its cells' prompts, read back from the HTML as the browser reads them."""
    data = json.loads(re.search(r'<script type="application/json" id="judge-data">(.*?)</script>', html, re.S).group(1))
    blobs = dict(re.findall(r'<script type="application/octet-stream" id="(prompts-\d+)">([A-Za-z0-9+/=]*)</script>', html))
    return data, {k: json.loads(gzip.decompress(base64.b64decode(v))) for k, v in blobs.items()}


@pytest.fixture(scope="module")
def listwise_run(tmp_path_factory, data_dir):
    """A run whose LLM methods are the only users of the backend, with every prompt it was sent."""
    mp = pytest.MonkeyPatch()
    try:
        sent = record_prompts(mp, MockBackend)
        out = run(tmp_path_factory.mktemp("lw"), data_dir, extra=LISTWISE)
    finally:
        mp.undo()
    return out, sent


@pytest.fixture(scope="module")
def full_run(tmp_path_factory, data_dir):
    """The same methods with an ensemble and a classic scorer, for the views of rows without prompts."""
    return run(tmp_path_factory.mktemp("full"), data_dir, extra=OTHERS)


@pytest.fixture(scope="module")
def full_view(full_run, data_dir):
    return from_results([full_run], data_dir=str(data_dir))


@pytest.mark.slow
def test_every_prompt_shown_is_the_prompt_sent(listwise_run, data_dir, tmp_path):
    out, sent = listwise_run
    view = from_results([out], data_dir=str(data_dir))
    llm = list(view.cells)
    assert {c.method for c in llm} == {"yesno", "bm25c-2", "rating-exp", "listwise"}
    assert all(c.prompts is not None and len(c.prompts) == len(c.rows) for c in llm), [c.prompt_note for c in llm]
    # Cache off and no ensemble: the backend was handed each prompt of each cell exactly once.
    shown = Counter((p, c.chat) for c in llm for p in c.prompts)
    assert shown == Counter(sent)
    assert any(r.examples for c in llm for r in c.rows)  # the k-shot prompts show examples
    # Each rebuilt prompt hashes to what its row recorded of the prompt sent: no item is warned about.
    assert all(r.prompt_sha for c in llm for r in c.rows) and all(c.drift == [None] * len(c.rows) for c in llm)
    # ... and the page carries those very texts.
    html = (tmp_path / "v.html")
    write_view(view, html)
    data, prompts = embedded(html.read_text(encoding="utf-8"))
    for c, d in zip(view.cells, data["cells"], strict=True):
        assert prompts[d["prompts"]] == c.prompts
        assert d["chat"] is True and d["wrapping"] is None  # the mock applies no template it could name


@pytest.mark.slow
def test_page_data_matches_rows_and_summary(full_run, full_view, data_dir, tmp_path):
    html = tmp_path / "v.html"
    write_view(full_view, html)
    data, _ = embedded(html.read_text(encoding="utf-8"))
    summary = json.loads((full_run / "summary.json").read_text())
    assert len(data["cells"]) == len(summary["cells"]) == 5 * 3
    for d, s in zip(data["cells"], summary["cells"], strict=True):
        rows = read_rows(cell_path(full_run, s["method"], s["dataset"], s["quality"], s["seed"]))
        cols = d["rows"]
        assert cols["id"] == [r["id"] for r in rows] and len(rows) == 12
        assert cols["score"] == [r["score"] for r in rows]
        assert cols["human"] == [r["human"] for r in rows]
        assert cols["examples"] == [r["examples"] for r in rows]
        assert cols["flags"] == [r["flags"] for r in rows]
        assert cols["error"] == [r["error"] for r in rows]
        assert cols["gap"] == [None if g is None else round(g, 4) for g in
                               stats.rank_gap([r["score"] for r in rows], [r["human"] for r in rows])]
        labels = d["labels"]
        assert [None if p is None else dict(zip(labels, p)) for p in cols["probs"]] == [r["label_probs"] for r in rows]
        assert d["stats"]["spearman"] == s["spearman"] and d["stats"]["ci"] == s["ci"]
        table = data["items"][d["table"]]
        for r in rows:  # every row's item (and every example it showed) is in its table
            assert r["id"] in table["id"] and all(e in table["id"] for e in r["examples"])
        if d["method"] in ("ens", "length"):
            assert d["prompts"] is None and "sends no prompt" in d["prompt_note"]
    # The texts are the set's own.
    from judge.datasets import load_benchmark

    tu = {it.id: it for it in load_benchmark("TU", data_dir)}
    table = data["items"]["topical-usr"]
    for i, rid in enumerate(table["id"]):
        assert table["response"][i] == tu[rid].response
        assert [t[1] for t in table["turns"][i]] == [t.text for t in tu[rid].context]
    # Paired comparisons: the configured pair is the summary's own.
    for comp in summary["comparisons"]:
        a = next(i for i, c in enumerate(data["cells"]) if (c["method"], c["dataset"]) == (comp["a"], comp["dataset"]))
        b = next(i for i, c in enumerate(data["cells"]) if (c["method"], c["dataset"]) == (comp["b"], comp["dataset"]))
        pair = next(p for p in data["pairs"] if {p["a"], p["b"]} == {a, b})
        assert pair["a"] < pair["b"]
        same = {k: pair[k] for k in ("n", "p", "n_boot", "unit", "n_units")}
        assert same == {k: comp[k] for k in same}
        sign = 1 if (pair["a"], pair["b"]) == (a, b) else -1
        assert pair["diff"] == pytest.approx(sign * comp["diff"])


@pytest.mark.slow
def test_view_is_byte_identical_and_reads_nothing_from_the_network(full_run, data_dir, tmp_path):
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    write_view(from_results([full_run], data_dir=str(data_dir)), a)
    write_view(from_results([full_run], data_dir=str(data_dir)), b)
    assert a.read_bytes() == b.read_bytes()
    html = a.read_text(encoding="utf-8")
    assert "default-src 'none'" in html  # the page may load nothing, whatever it holds
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)


@pytest.mark.slow
def test_cli_writes_the_view_and_the_leaderboard_links_it(full_run, data_dir, capsys):
    assert main(["view", str(full_run), "--data-dir", str(data_dir)]) == 0
    view = full_run / "view.html"
    assert view.stat().st_size > 0
    assert "15 cells, 180 rows" in capsys.readouterr().err
    assert 'href="view.html"' in (full_run / "leaderboard.html").read_text()
    assert main(["report", str(full_run)]) == 0  # rendering again keeps the link
    assert 'href="view.html"' in (full_run / "leaderboard.html").read_text()


@pytest.mark.slow
def test_two_runs_side_by_side(full_run, listwise_run, data_dir, tmp_path):
    out = tmp_path / "both.html"
    assert main(["view", str(full_run), str(listwise_run[0]), "-o", str(out), "--data-dir", str(data_dir)]) == 0
    data, _ = embedded(out.read_text(encoding="utf-8"))
    assert len(data["runs"]) == 2 and data["runs"][1]["name"].startswith("view-test")
    # The same method on the same items in both runs is one of the pairs, and its scores are equal.
    same = [p for p in data["pairs"] if data["cells"][p["a"]]["run"] != data["cells"][p["b"]]["run"]
            and data["cells"][p["a"]]["method"] == data["cells"][p["b"]]["method"] == "yesno"]
    assert len(same) == 3 and all(p["diff"] == 0 for p in same)
    # One item table per set: both runs read the same items.
    assert sorted(data["items"]) == ["fed-dial", "fed-turn", "topical-usr"]


def test_several_runs_need_an_output_and_a_non_run_is_refused(full_run, tmp_path, capsys):
    assert main(["view", str(full_run), str(full_run)]) == 2
    assert "-o" in capsys.readouterr().err
    assert main(["view", str(tmp_path)]) == 2
    assert "summary.json" in capsys.readouterr().err


def test_without_the_data_the_rows_are_shown_and_the_reason_given(full_run, tmp_path, capsys):
    out = tmp_path / "v.html"
    assert main(["view", str(full_run), "-o", str(out), "--data-dir", str(tmp_path / "nowhere")]) == 0
    assert "could not be read" in capsys.readouterr().err
    data, prompts = embedded(out.read_text(encoding="utf-8"))
    assert not prompts and all(len(c["rows"]["id"]) == 12 for c in data["cells"])
    assert all("could not be read" in c["prompt_note"] or "sends no prompt" in c["prompt_note"] for c in data["cells"])
    assert all(run["notes"] for run in data["runs"])


def test_changed_settings_are_named_not_shown(full_run, data_dir, tmp_path):
    """A cell whose items read now differ from those its meta file lists keeps its rows, without prompts."""
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(full_run, copy)
    meta = cell_path(copy, "yesno", "topical-usr", "Overall", 0).with_suffix(".meta.json")
    recorded = json.loads(meta.read_text())
    meta.write_text(json.dumps({**recorded, "items": recorded["items"][::-1]}))
    view = from_results([copy], data_dir=str(data_dir))
    cell = next(c for c in view.cells if (c.method, c.dataset) == ("yesno", "topical-usr"))
    assert cell.prompts is None and "differ from the run's (items" in cell.prompt_note
    assert sum(c.prompts is not None for c in view.cells) == 8  # the other LLM cells


@pytest.mark.slow
def test_serve_answers_on_loopback(full_run, data_dir):
    proc = subprocess.Popen([sys.executable, "-m", "judge", "view", str(full_run), "--data-dir", str(data_dir),
                             "--serve"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        address = re.search(r"http://127\.0\.0\.1:\d+/", line).group(0)
        with urllib.request.urlopen(address, timeout=10) as resp:
            assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/html")
            assert resp.read() == (full_run / "view.html").read_bytes()
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(address + "summary.json", timeout=10)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_score_and_bench_write_a_view_of_their_cell(data_dir, tmp_path, monkeypatch):
    sent = record_prompts(monkeypatch, MockBackend)
    view = tmp_path / "score.html"
    assert main(["score", str(ROOT / "examples" / "dialogues.jsonl"), "--backend", "mock", "--no-cache",
                 "--selector", "bm25-context", "--k", "2", "--quality", "overall", "-o", str(tmp_path / "s.jsonl"),
                 "--view", str(view), "--no-progress"]) == 0
    data, prompts = embedded(view.read_text(encoding="utf-8"))
    (cell,) = data["cells"]
    assert cell["rows"]["id"] == [r["id"] for r in read_rows(tmp_path / "s.jsonl")]
    assert Counter(prompts[cell["prompts"]]) == Counter(t for t, _ in sent) and sent
    sent.clear()
    view = tmp_path / "bench.html"
    assert main(["bench", "--data-dir", str(data_dir), "--dataset", "FT", "--quality", "Overall", "--limit", "8",
                 "--backend", "mock", "--no-cache", "--view", str(view), "--no-progress"]) == 0
    data, prompts = embedded(view.read_text(encoding="utf-8"))
    (cell,) = data["cells"]
    assert len(cell["rows"]["id"]) == 8 and cell["stats"]["spearman"]["n"] == 8
    assert Counter(prompts[cell["prompts"]]) == Counter(t for t, _ in sent)


def test_a_rows_rationale_is_carried_when_there_is_one(full_view):
    """Rows may carry the judge's own words (``rationale``); the page shows them where a row has one."""
    import copy

    from judge.view.page import page_data

    view = copy.deepcopy(full_view)
    view.cells[0].rows[3] = replace(view.cells[0].rows[3], reasoned=Reasoned("The reply ignores the question.", 31, 12, 0))
    assert "rationale" not in page_data(full_view)["cells"][0]["rows"]
    cols = page_data(view)["cells"][0]["rows"]
    assert cols["rationale"] == [None] * 3 + ["The reply ignores the question."] + [None] * 8
