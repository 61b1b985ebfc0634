"""Significance from the unit of the CIs: the conversation bootstrap's p marks the cells (per set and
averages), a p at its floor prints as ``< 1/n_boot``, and the conversations behind each CI are shown."""

from __future__ import annotations

import copy
import csv
import io
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from judge.records.rows import Row
from judge.records.summary import Summary
from judge.report import render_csv, render_html, render_markdown
from judge.report.table import build, p_text
from judge.stats import correlation as stats


def test_bootstrap_p_of_a_correlation_and_its_floor() -> None:
    rng = np.random.default_rng(0)
    h = rng.normal(size=80).tolist()
    strong = (np.array(h) + 0.1 * rng.normal(size=80)).tolist()
    ci = stats.bootstrap_ci(strong, h, n_boot=1000, seed=0, groups=[f"g{i // 2}" for i in range(80)])
    # Every resample is far above zero: the p is its floor, 1/1000, and prints as "< .001".
    assert ci.p_value == pytest.approx(1 / 1000) and stats.p_at_floor(ci.p_value, 1000)
    assert p_text(ci.p_value, 1000) == "< .001" and p_text(0.0005, 2000) == "< .0005"
    assert p_text(0.0123, 1000) == "0.0123" and p_text(None, 1000) == "–"
    noise = rng.normal(size=80).tolist()
    null = stats.bootstrap_ci(noise, h, n_boot=1000, seed=0)
    share = min(np.mean(np.array(_resampled(noise, h, 1000, 0)) <= 0), np.mean(np.array(_resampled(noise, h, 1000, 0)) >= 0))
    assert null.p_value == pytest.approx(min(1.0, 2 * share)) and null.p_value > 0.05


def _resampled(pred, human, n_boot, seed):
    a, b = np.array(pred), np.array(human)
    idx = np.random.default_rng(seed).integers(0, len(a), size=(n_boot, len(a)))
    return [stats.correlate(a[i].tolist(), b[i].tolist()).value for i in idx]


CONFIG = """
name = "sig"
limit = 40
bootstrap = 200
datasets = ["TU", "FT"]
compare = [["length", "rouge-l"]]
[[methods]]
type = "classic"
scorer = "length"
[[methods]]
type = "classic"
scorer = "rouge-l"
"""


@pytest.fixture(scope="module")
def summary(tmp_path_factory, data_dir) -> dict:
    from judge.harness import load_experiment, run_experiment

    root = tmp_path_factory.mktemp("sig")
    cfg = root / "c.toml"
    cfg.write_text(CONFIG)
    out = root / "out"
    run_experiment(load_experiment(cfg).with_overrides(data_dir=str(data_dir), output=str(out)), progress=False,
                   plots=False, log=lambda m: None)
    return json.loads((out / "summary.json").read_text())


def test_marks_come_from_the_bootstrap_not_scipy(summary: dict) -> None:
    s = copy.deepcopy(summary)
    (res,) = [r for r in s["results"] if r["method"] == "length" and r["dataset"] == "topical-usr"]
    assert res["p_boot"] == res["ci"]["p"] and res["ci"]["p"] is not None
    # scipy says significant, the conversation bootstrap does not: the cell is marked.
    res["p"], res["ci"]["p"] = 0.001, 0.3
    cell = build(Summary.from_dict(s)).rows[0].cells[0]
    assert cell.marked and "\\*" in render_markdown(Summary.from_dict(s)).split("| length |")[1].split("|")[1]
    # ... and the other way round: not marked.
    res["p"], res["ci"]["p"] = 0.3, 0.001
    assert not build(Summary.from_dict(s)).rows[0].cells[0].marked
    rows = {(r["method"], r["dataset"]): r for r in csv.DictReader(io.StringIO(render_csv(Summary.from_dict(s))))}
    assert rows[("length", "topical-usr")]["significant"] == "True"
    assert rows[("length", "topical-usr")]["p_bootstrap_text"] == "< .005"  # 1/200
    # The overall average is marked by its stratified bootstrap's p.
    s["averages"]["length"]["ci"]["p"] = 0.4
    avg = build(Summary.from_dict(s)).rows[0].cells[-1]
    assert avg.is_average and avg.marked
    s["averages"]["length"]["ci"]["p"] = 0.01
    assert not build(Summary.from_dict(s)).rows[0].cells[-1].marked


def test_conversations_behind_each_ci_are_shown(summary: dict) -> None:
    res = {(r["method"], r["dataset"]): r for r in summary["results"]}
    tu = res[("length", "topical-usr")]
    assert tu["n_conversations"] == tu["ci"]["n_units"] and tu["ci"]["unit"] == "group"
    assert tu["n_conversations"] < tu["n"]  # TU rates several responses per context
    md = render_markdown(Summary.from_dict(summary))
    conv = next(line for line in md.splitlines() if line.startswith("| n (conversations)"))
    cells = [x.strip() for x in conv.strip("|").split("|")]
    assert cells[1] == str(tu["n_conversations"]) and cells[2] == str(res[("length", "fed-turn")]["n_conversations"])
    assert cells[3] == str(summary["averages"]["length"]["ci"]["n_units"])
    assert f"<td>n (conversations)</td><td>{tu['n_conversations']}</td>" in render_html(Summary.from_dict(summary))
    rows = {(r["method"], r["dataset"]): r for r in csv.DictReader(io.StringIO(render_csv(Summary.from_dict(summary))))}
    assert rows[("length", "topical-usr")]["n_conversations"] == str(tu["n_conversations"])


def test_paired_p_at_its_floor_prints_as_less_than(summary: dict) -> None:
    s = copy.deepcopy(summary)
    comp = s["comparisons"][0]
    comp["p"] = 1 / comp["n_boot"]
    md = render_markdown(Summary.from_dict(s))
    line = next(x for x in md.splitlines() if x.startswith(f"| length | rouge-l | {comp['dataset']} "))
    assert line.rstrip(" |").split("|")[-2].strip() == "< .005"


def test_bench_prints_the_bootstrap_p_and_conversations(data_dir, tmp_path) -> None:
    """The conversations and the bootstrap p that bench prints are those of its saved rows, recomputed
    here: the rows' distinct groups, and the conversation bootstrap of their scores (ROUGE-L on
    TopicalChat is far from zero, so the p is at its floor and prints as ``< 1/200``)."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "bench"
    r = subprocess.run([sys.executable, "-m", "judge", "bench", "--data-dir", str(data_dir), "--dataset", "TU",
                        "--limit", "60", "--scorer", "rouge-l", "--bootstrap", "200", "--results", str(out)],
                       cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for f in out.rglob("*.jsonl") for line in f.read_text().splitlines()]
    groups = [row.get("group") or f"id:{row['id']}" for row in rows]
    assert len(rows) == 60 and 1 < len(set(groups)) < 60
    n_line = next(x for x in r.stdout.splitlines() if x.startswith("n   "))
    assert n_line.split()[1:] == ["60", "items,", str(len(set(groups))), "conversations"]
    ci = stats.bootstrap_ci([row["score"] for row in rows], [row["human"] for row in rows], "spearman", n_boot=200,
                            seed=0, groups=groups)
    assert stats.p_at_floor(ci.p_value, 200, ci.n_degenerate)
    sp = next(x for x in r.stdout.splitlines() if x.startswith("spearman"))
    assert f"(item-level), bootstrap p {p_text(ci.p_value, 200, ci.n_degenerate)}  95% CI" in sp
    assert "bootstrap p < .005" in sp and "not significant" not in sp


def _row(rid: str, group: str | None, score: float, human: float) -> Row:
    return Row(rid, "m", None, "overall", human, score, None, (), (), False, True, None, None, group, 0)


def _clustered_rows() -> list[Row]:
    """48 rated rows in 8 conversations whose shared part drives both scores and ratings: scipy's
    item-level p is small, the conversation bootstrap's is not (checked below, not assumed)."""
    rng = np.random.default_rng(7)
    rows = []
    for g in range(8):
        shared = rng.normal()
        rows += [_row(f"{g}-{j}", f"g{g}", float(shared + rng.normal()), float(shared / 2 + rng.normal()))
                 for j in range(6)]
    return rows


def test_score_marks_significance_by_the_conversation_bootstrap() -> None:
    """``judge score``'s summary decides significance as run and bench do, by the conversation bootstrap:
    rows whose item-level p is below .05 but whose bootstrap p is not are marked not significant."""
    from judge.cli.score_table import ScoreTable
    from judge.harness.summary import cell_stats

    rows = _clustered_rows()
    cell = cell_stats(rows, 1000, 0)
    assert cell.spearman.p < 0.01 and cell.ci.p >= 0.1  # the case this test is about
    lines: list[str] = []
    table = ScoreTable([r.id for r in rows], True, lines.append)
    for row in rows:
        table.add(row)
    table.summary(1000, 0)
    sp = next(x for x in lines if x.startswith("spearman"))
    assert f"bootstrap p {p_text(cell.ci.p, 1000)}  n=48" in sp
    assert sp.endswith("(not significant, bootstrap p >= 0.05)")
    # Each row its own conversation: the bootstrap agrees with scipy here, and the line is unmarked.
    lines.clear()
    single = [replace(row, group=None) for row in rows]
    p_single = cell_stats(single, 1000, 0).ci.p
    assert p_single < 0.05
    alone = ScoreTable([r.id for r in rows], True, lines.append)
    for row in single:
        alone.add(row)
    alone.summary(1000, 0)
    sp = next(x for x in lines if x.startswith("spearman"))
    assert f"bootstrap p {p_text(p_single, 1000)}  n=48" in sp and "of 48 conversations" in sp
    assert "not significant" not in sp


def test_score_prints_a_bootstrap_p_at_its_floor_as_less_than() -> None:
    from judge.cli.score_table import ScoreTable

    rows = [_row(str(i), f"g{i // 2}", float(i), float(i) + 0.5 * (i % 3)) for i in range(40)]
    lines: list[str] = []
    table = ScoreTable([r.id for r in rows], True, lines.append)
    for row in rows:
        table.add(row)
    table.summary(1000, 0)
    sp = next(x for x in lines if x.startswith("spearman"))
    assert "bootstrap p < .001  n=40" in sp and "not significant" not in sp
