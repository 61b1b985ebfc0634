"""The floor on conversations (judge/stats/floor.py): below it no interval and no p is computed or printed
on any path (bench, score, run's reports, compare, the view, the results page), at it an interval is; a mean
over sets gets its interval from a joint bootstrap over the conversations of all its sets."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import replace

import numpy as np
import pytest

from judge.harness.summary import cell_stats, paired_comparison
from judge.records.pair_rows import PairOrder, PairRow
from judge.records.rows import Row
from judge.report import pairwise as pairwise_report
from judge.report import results_page as page
from judge.stats import correlation as stats
from judge.stats.floor import MIN_CONVERSATIONS, distinct_resamples, has_interval, too_few_text
from judge.stats.pairwise import mean_over_sets, summarise_pairs

BELOW, AT = MIN_CONVERSATIONS - 1, MIN_CONVERSATIONS


def _rows(k: int, per: int = 3) -> list[Row]:
    """Score rows of ``k`` conversations, ``per`` items each, whose scores follow the ratings closely."""
    rng = np.random.default_rng(k)
    out = []
    for g in range(k):
        for j in range(per):
            h = float(rng.integers(1, 6))
            out.append(Row(f"c{g}-{j}", "m", None, "overall", h, h + float(rng.normal(0, 0.5)), None, (), (), False,
                           True, None, None, f"c{g}", 0))
    return out


def test_the_floor_is_the_fewest_conversations_with_more_distinct_resamples_than_replicates():
    assert [distinct_resamples(k) for k in range(2, 8)] == [3, 10, 35, 126, 462, 1716]
    assert min(k for k in range(1, 20) if distinct_resamples(k) >= 1000) == MIN_CONVERSATIONS
    assert not has_interval(BELOW) and has_interval(AT) and not has_interval(None)
    # a joint bootstrap: the product over its strata (2 and 5 conversations: 3 x 126 = 378, below 1716)
    assert distinct_resamples([2, 5]) == 378 and not has_interval([2, 5]) and has_interval([4, 5])
    assert too_few_text(3) == "too few conversations (3)" and too_few_text([2, 5]) == "too few conversations (2 + 5)"


@pytest.mark.parametrize("k", [BELOW, AT])
def test_correlation_intervals_and_paired_tests_stop_below_the_floor(k):
    rows = _rows(k)
    pred, human, groups = [r.score for r in rows], [r.human for r in rows], [r.group for r in rows]
    ci = stats.bootstrap_ci(pred, human, n_boot=200, groups=groups)
    t = stats.paired_bootstrap(pred, [-x for x in pred], human, n_boot=200, groups=groups)
    assert ci.n_units == t.n_units == k
    if k < MIN_CONVERSATIONS:
        assert ci.too_few and math.isnan(ci.low) and math.isnan(ci.p_value)
        assert t.too_few and math.isnan(t.low) and math.isnan(t.p_value) and math.isfinite(t.diff)
    else:
        assert not ci.too_few and ci.low <= ci.high and math.isfinite(ci.p_value)
        assert not t.too_few and t.low <= t.high and math.isfinite(t.p_value)


def test_an_average_over_sets_needs_the_floor_over_its_strata():
    def part(name: str, k: int) -> stats.AveragePart:
        rows = _rows(k)
        return stats.AveragePart(name, ([r.score for r in rows],), [r.human for r in rows],
                                 [f"{name}:{r.group}" for r in rows])

    few = stats.average_ci([part("a", 2), part("b", 5)], n_boot=200)
    assert few.too_few and math.isnan(few.low) and few.n_units == 7
    enough = stats.average_ci([part("a", 4), part("b", 5)], n_boot=200)  # 35 x 126 distinct resamples
    assert not enough.too_few and enough.low <= enough.high
    paired = stats.paired_average([stats.AveragePart(p.dataset, (p.preds[0], p.human), p.human, p.groups)
                                   for p in (part("a", 2), part("b", 3))], n_boot=200)
    assert paired.too_few and math.isnan(paired.p_value)


def test_a_cell_below_the_floor_stores_no_interval_and_no_p_at_all():
    cell = cell_stats(_rows(BELOW), 200, 0)
    assert cell.ci.too_few and cell.ci.low is None and cell.ci.p is None
    assert all(c.p is None and c.value is not None for c in (cell.spearman, cell.pearson, cell.kendall))
    at = cell_stats(_rows(AT), 200, 0)
    assert "too_few" not in at.ci.to_dict() and at.ci.low is not None and at.spearman.p is not None
    pair = paired_comparison(_rows(BELOW), _rows(BELOW), 200, 0)
    assert pair["too_few"] and pair["p"] is None and pair["williams_p"] is None


def test_judge_score_summary_says_too_few_and_no_p(capsys):
    from judge.cli.score_table import ScoreTable

    for k in (BELOW, AT):
        rows = _rows(k)
        table = ScoreTable([r.id for r in rows], True, print)
        for r in rows:
            table.add(r)
        table.summary(n_boot=200)
    below, at = capsys.readouterr().out.split("items     ")[1:]
    assert f"too few conversations ({BELOW})" in below and "p=" not in below and "CI" not in below
    assert "not significant" in below
    assert "95% CI [" in at and "bootstrap p" in at and "too few" not in at


def test_judge_bench_prints_too_few_and_no_p(capsys):
    from judge.cli.bench import print_correlations

    print_correlations(cell_stats(_rows(BELOW), 200, 0))
    below = capsys.readouterr().out
    assert below.count(f"too few conversations ({BELOW})") == 3 and "p=" not in below and "95% CI" not in below
    print_correlations(cell_stats(_rows(AT), 200, 0))
    at = capsys.readouterr().out
    assert "95% CI [" in at and "too few" not in at


@pytest.fixture(scope="module")
def run_reports(tmp_path_factory, data_dir):
    """``judge run`` of response length on DGR (one conversation per item) at 6 and at 7 items, and its reports."""
    from judge.harness import load_experiment, run_experiment

    root = tmp_path_factory.mktemp("floor")
    out = {}
    for k in (BELOW, AT):
        cfg = root / f"c{k}.toml"
        cfg.write_text(f'name = "floor"\nlimit = {k}\ndatasets = ["DGR"]\n[[methods]]\ntype = "classic"\n'
                       'scorer = "length"\n')
        exp = load_experiment(cfg).with_overrides(data_dir=str(data_dir), output=str(root / f"out{k}"))
        summary = run_experiment(exp, progress=False, plots=False, log=lambda m: None).to_dict()
        assert summary["results"][0]["n_conversations"] == k
        out[k] = root / f"out{k}"
    return out


def test_run_reports_say_too_few_below_the_floor_and_give_an_interval_at_it(run_reports):
    below = run_reports[BELOW]
    md = (below / "leaderboard.md").read_text()
    assert f"[too few conversations ({BELOW})]" in md
    assert f"too few conversations ({BELOW})" in (below / "leaderboard.html").read_text()
    (row,) = csv.DictReader(io.StringIO((below / "results.csv").read_text()))
    assert row["p_bootstrap_text"] == f"too few conversations ({BELOW})"
    assert row["ci_low"] == row["p"] == row["p_bootstrap"] == row["pearson_p"] == "" and row["significant"] == "False"
    at = run_reports[AT]
    assert "too few" not in (at / "leaderboard.md").read_text()
    (row,) = csv.DictReader(io.StringIO((at / "results.csv").read_text()))
    assert row["ci_low"] != "" and row["p_bootstrap"] != ""


def _pair(a: str, b: str, group: str, winner: str = "a") -> PairRow:
    pref = {"a": 0.9, "b": 0.1}.get(winner, 0.5)
    return PairRow(f"{a}-{b}-{group}", "m", None, group, group, a, b, f"{a}@{group}", f"{b}@{group}", 4.0, 2.0, pref,
                   winner, True, None, (PairOrder("ab", pref, winner, {}), PairOrder("ba", pref, winner, {})), 10, 12,
                   (), False, True, None, 0)


def test_compare_gives_no_interval_to_systems_that_met_once():
    # 8 contexts: x meets y in seven of them, z only once (in the eighth, against x)
    rows = [_pair("x", "y", f"c{i}", "a" if i % 3 else "b") for i in range(7)] + [_pair("x", "z", "c7")]
    s = summarise_pairs(rows, n_boot=200)
    rates = {(w["a"], w["b"]): w for w in s["win_rates"]}
    once = rates[("x", "z")]
    assert once["too_few"] and once["n_conversations"] == 1 and once["low"] is None and once["p"] is None
    seven = rates[("x", "y")]
    assert seven["n_conversations"] == AT and seven["low"] is not None and seven["p"] is not None
    strength = {r["system"]: r for r in s["ranking"]}
    assert strength["z"]["too_few"] and strength["z"]["low"] is None and strength["x"]["low"] is not None
    text = "\n".join(pairwise_report.text_lines({**s, "name": "t", "method_name": "pairwise", "quality": "overall"}))
    (x_row,) = [line for line in text.splitlines() if line.startswith("  x  –")]
    assert "1.000† [too few conversations (1)]" in x_row and "[1.00, 1.00]" not in x_row
    listed = {(r[0], r[1]): r for r in pairwise_report.win_list({**s})}
    assert listed[("x", "z")][4] == "1.000† [too few conversations (1)]" and listed[("x", "z")][5] == "–"
    figures = [f for f in pairwise_report._figures({**s, "name": "t", "method_name": "pairwise"})
               if f["figure"] == "win_rate" and f["b"] == "z"]
    assert figures[0]["p"] == "" and figures[0]["significant"] is False


def test_a_mean_over_sets_resamples_every_sets_conversations_in_one_replicate():
    one = [_pair("x", "y", f"a{i}", "a" if i % 2 else "b") for i in range(8)]
    two = [replace(r, group=r.group.replace("a", "b"), context=r.context.replace("a", "b")) for r in one]
    single = summarise_pairs(one, n_boot=400)["humans"]["judge"]
    joint = mean_over_sets([(one, None), (two, None)], n_boot=400)["judge"]
    assert joint["value"] == pytest.approx(single["value"]) and joint["n_conversations"] == 16
    # two independent copies of one set: the mean's interval is narrower than one set's (about 1/sqrt 2)
    assert joint["high"] - joint["low"] < 0.85 * (single["high"] - single["low"])
    # by hand from the same joint resamples: each set's share of wins, then their mean
    samples, sizes = stats.stratified_samples([(0, 8, [r.group for r in one], None),
                                               (1, 8, [r.group for r in two], None)], 400, 0)
    wins = np.array([1.0 if r.winner == "a" else 0.0 for r in one])
    reps = [(wins[samples[0][i]].mean() + wins[samples[1][i]].mean()) / 2 for i in range(400)]
    assert sizes == [8, 8] and joint["low"] == pytest.approx(float(np.quantile(reps, 0.025)), abs=1e-6)
    # two sets of 2 and 5 conversations: 378 distinct joint resamples, below the floor
    few = mean_over_sets([(one[:2], None), (two[:5], None)], n_boot=200)["judge"]
    assert few["too_few"] and few["strata"] == [2, 5] and few["low"] is None and few["p"] is None
    assert pairwise_report._ci(few) == " [too few conversations (2 + 5)]"


def _entry(k: int) -> dict:
    fig = {"value": 0.52, "low": 0.51, "high": 0.53, "p": 0.001, "n_degenerate": 0, "n": 67}
    return {"name": "q", "abbrev": "DZ", "n_pairs": 72, "n_conversations": k, "n_boot": 1000,
            "humans": {"judge": fig, "pointwise": {**fig, "method": "criteria"}, "difference": fig},
            "position": {"consistency": fig, "bias": fig},
            "system_level": {"n_systems": 14, "kendall": 0.29, "p": 0.01}}


def test_the_results_page_withdraws_intervals_below_the_floor_even_from_old_summaries():
    below = page._pairwise_row(_entry(2))  # a summary collected before the floor: its interval is not shown
    assert "too few conversations (2)" in below and "[.51, .53]" not in below and "< .001" not in below
    assert ".520 †" in below and "14 systems, too few conversations (2)" in below
    at = page._pairwise_row(_entry(AT))
    assert "[.51, .53]" in at and "< .001" in at and "too few" not in at
    cell = {"method": "m", "abbrev": "DZ", "n": 30, "n_conversations": BELOW, "spearman": 0.4, "ci_low": 0.1,
            "ci_high": 0.6, "p": 0.01, "n_boot": 1000}
    assert page._cell_row(cell) == f"| m | DZ | 30 | {BELOW} | .400 † | too few conversations ({BELOW}) | – |"
    assert "[.10, .60]" in page._cell_row({**cell, "n_conversations": AT})
    joint = {"name": "q", "bootstrap": {"n_boot": 1000},
             "judge": {"value": 0.6, "low": 0.55, "high": 0.65, "p": 0.001, "n_conversations": 52, "n_degenerate": 0}}
    assert "[.55, .65]" in page._pairwise_mean_row("q", [_entry(2), _entry(20)], joint)
    assert "no joint CI" in page._pairwise_mean_row("q", [_entry(2), _entry(20)], None)


def test_the_view_shows_no_interval_or_p_below_the_floor():
    from judge.view.data import below_floor

    cell = cell_stats(_rows(AT), 200, 0)
    old = replace(cell, ci=replace(cell.ci, n_units=BELOW))  # as a summary written before the floor would hold it
    shown = below_floor(old)
    assert shown["ci"]["too_few_text"] == f"too few conversations ({BELOW})"
    assert shown["ci"]["low"] is None and shown["ci"]["p"] is None and shown["spearman"]["p"] is None
    assert below_floor(cell) == cell.to_dict()
