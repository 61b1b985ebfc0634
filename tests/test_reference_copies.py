"""Responses that are (nearly) a reference: flagged on every row, and every reference-based cell
reported again without them by the harness (real data, real classic scorers)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scipy.stats import spearmanr

from judge.data.items import USER, Item, Turn
from judge.data.reference_copy import IS_REFERENCE, NEAR_REFERENCE, normalise, reference_copy
from judge.engine import item_row
from judge.scorers.base import Score

ROOT = Path(__file__).resolve().parents[1]
COPY_FLAGS = {IS_REFERENCE, NEAR_REFERENCE}


def _item(response: str, *refs: str, level: str = "turn") -> Item:
    if level == "dialog":
        return Item("d", "dialog", dialog=(Turn(USER, "hi"),))
    return Item("i", "turn", context=(Turn(USER, "What will you do this weekend?"),), response=response,
                references=refs)


def test_exact_and_near_copies_are_flagged() -> None:
    assert normalise("Cash, credit card , or DEBIT card?") == ["cash", "credit", "card", "or", "debit", "card"]
    # Case, white space and punctuation do not matter (DailyDialog's references are tokenised).
    assert reference_copy(_item("Cash, credit card, or debit card?", "cash , credit card , or debit card ?")) == IS_REFERENCE
    assert reference_copy(_item("hello", "Something else", "HELLO!")) == IS_REFERENCE
    ref = "i am going hiking with my dog in the mountains near the lake on saturday morning"
    # One word changed in sixteen: similarity 15/16 = .94 >= .9, a near copy.
    assert reference_copy(_item(ref.replace("saturday", "sunday"), ref)) == NEAR_REFERENCE
    # Three words changed in sixteen: 13/16 = .81, not a copy.
    three = ref.replace("saturday", "sunday").replace("dog", "cat").replace("lake", "river")
    assert reference_copy(_item(three, ref)) is None
    assert reference_copy(_item("I will stay home.", ref)) is None
    assert reference_copy(_item("hello")) is None  # no reference
    assert reference_copy(_item("", "")) is None and reference_copy(_item("", "", level="dialog")) is None


def test_rows_carry_the_flag() -> None:
    row = item_row(_item("HELLO!", "hello"), Score("i", 1.0), "m", None)
    assert row.flags == (IS_REFERENCE,)
    assert item_row(_item("bye", "hello"), Score("i", 1.0), "m", None).flags == ()


CONFIG = """
name = "copies"
limit = 80
bootstrap = 200
datasets = ["TU", "DZ"]
[[methods]]
type = "classic"
scorer = "rouge-l"
[[methods]]
type = "classic"
scorer = "length"
"""


@pytest.fixture(scope="module")
def copies_run(tmp_path_factory, data_dir) -> Path:
    from judge.harness import load_experiment, run_experiment

    root = tmp_path_factory.mktemp("copies")
    cfg = root / "c.toml"
    cfg.write_text(CONFIG)
    out = root / "out"
    run_experiment(load_experiment(cfg).with_overrides(data_dir=str(data_dir), output=str(out)), progress=False,
                   plots=False, log=lambda m: None)
    return out


def test_reduced_set_correlation_equals_a_direct_computation(copies_run: Path) -> None:
    from judge.records.results import cell_path
    from judge.records.rows import read_rows
    from judge.stats import correlation as stats

    summary = json.loads((copies_run / "summary.json").read_text())
    res = {(r["method"], r["dataset"]): r for r in summary["results"]}
    per_set = {}
    for ds in ("topical-usr", "dailydialog-zhao"):
        rows = read_rows(cell_path(copies_run, "rouge-l", ds, res[("rouge-l", ds)]["quality"], 0))
        flagged = [r for r in rows if COPY_FLAGS & set(r.flags)]
        kept = [r for r in rows if not COPY_FLAGS & set(r.flags)]
        assert flagged and all(r.score > 0.5 for r in flagged)  # ROUGE-L of a reference against itself
        w = res[("rouge-l", ds)]["without_copies"]
        expected = spearmanr([r.score for r in kept], [r.human for r in kept]).statistic
        assert w["spearman"] == pytest.approx(expected, abs=1e-6)
        assert (w["n"], w["n_left_out"]) == (len(kept), len(flagged))
        ci = stats.bootstrap_ci([r.score for r in kept], [r.human for r in kept], n_boot=200, seed=0,
                                groups=[r.group or f"id:{r.id}" for r in kept])
        assert (w["ci"]["low"], w["ci"]["high"]) == (pytest.approx(ci.low, abs=1e-6), pytest.approx(ci.high, abs=1e-6))
        assert w["n_conversations"] == ci.n_units
        per_set[ds] = expected
        # The reference-based scorer gains on the copies: it loses more without them than length does.
        assert res[("rouge-l", ds)]["spearman"] > w["spearman"]
    assert "without_copies" not in res[("length", "topical-usr")]
    avg = summary["averages"]["rouge-l"]["without_copies"]
    assert avg["overall"] == pytest.approx(sum(per_set.values()) / 2, abs=1e-6)
    assert "without_copies" not in summary["averages"]["length"]
    md = (copies_run / "leaderboard.md").read_text()
    line = next(x for x in md.splitlines() if x.startswith("| ↳ without reference copies"))
    assert f"n={res[('rouge-l', 'topical-usr')]['without_copies']['n']}" in line
    assert f"{avg['overall']:.3f}" in line


@pytest.mark.slow
def test_bench_prints_the_reduced_set(data_dir) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "judge", "bench", "--data-dir", str(data_dir), "--dataset", "TU",
                        "--limit", "60", "--scorer", "rouge-l", "--bootstrap", "200"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "kind      reference-based" in r.stdout
    line = next(x for x in r.stdout.splitlines() if x.startswith("without   reference copies"))
    assert "items whose response is (nearly) a reference left out" in line and "conversations" in line
