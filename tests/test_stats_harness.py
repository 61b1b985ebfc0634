"""Statistics of the harness: against scipy, hand-computed values and planted effects."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from judge.records.summary import Summary
from judge.stats import correlation as stats
from judge.stats.agreement import krippendorff_alpha


def _data(n=80, noise=1.0, seed=1):
    rng = np.random.default_rng(seed)
    h = rng.normal(size=n)
    return (h + noise * rng.normal(size=n)).tolist(), h.tolist()


def test_correlations_match_scipy():
    p, h = _data()
    c = stats.correlations(p, h)
    assert c["spearman"].value == pytest.approx(st.spearmanr(p, h).statistic)
    assert c["spearman"].p_value == pytest.approx(st.spearmanr(p, h).pvalue)
    assert c["pearson"].value == pytest.approx(st.pearsonr(p, h).statistic)
    assert c["kendall"].value == pytest.approx(st.kendalltau(p, h).statistic)


def test_bootstrap_ci_reproducible_and_covers_estimate():
    p, h = _data()
    a = stats.bootstrap_ci(p, h, n_boot=500, seed=7)
    b = stats.bootstrap_ci(p, h, n_boot=500, seed=7)
    c = stats.bootstrap_ci(p, h, n_boot=500, seed=8)
    assert a == b
    assert (a.low, a.high) != (c.low, c.high)
    r = stats.correlate(p, h).value
    assert a.low < r < a.high
    assert 0 < a.high - a.low < 0.6


def test_bootstrap_spearman_matches_scipy_on_each_resample():
    # The vectorised rank-based Spearman must equal scipy's on the same resamples.
    p, h = _data(n=30)
    a, b = np.array(p), np.array(h)
    idx = stats._boot_indices(30, 20, 3)
    got = stats.row_correlations(a[idx], b[idx], "spearman")
    want = [st.spearmanr(a[i], b[i]).statistic for i in idx]
    assert np.allclose(got, want)


def test_paired_test_detects_planted_difference_and_not_null():
    rng = np.random.default_rng(0)
    h = rng.normal(size=150)
    good = h + 0.5 * rng.normal(size=150)
    bad = h + 2.5 * rng.normal(size=150)
    t = stats.paired_bootstrap(good, bad, h, n_boot=1000, seed=0)
    assert t.diff > 0 and t.low > 0 and t.p_value < 0.01
    # Null: two equally noisy methods.
    other = h + 0.5 * rng.normal(size=150)
    t0 = stats.paired_bootstrap(good, other, h, n_boot=1000, seed=0)
    assert t0.low < 0 < t0.high and t0.p_value > 0.05
    # Swapping A and B flips the sign.
    ts = stats.paired_bootstrap(bad, good, h, n_boot=1000, seed=0)
    assert ts.diff == pytest.approx(-t.diff)


def test_group_bootstrap_with_one_item_per_group_is_the_item_bootstrap():
    p, h = _data(n=40)
    item = stats.bootstrap_ci(p, h, n_boot=300, seed=5)
    grouped = stats.bootstrap_ci(p, h, n_boot=300, seed=5, groups=[f"g{i}" for i in range(40)])
    assert (grouped.low, grouped.high) == (item.low, item.high)
    assert (item.unit, item.n_units, grouped.unit, grouped.n_units) == ("item", 40, "group", 40)
    # None = the item is its own group.
    assert stats.bootstrap_ci(p, h, n_boot=300, seed=5, groups=[None] * 40) == grouped


def test_group_bootstrap_moves_whole_groups():
    # Each of 30 items tripled, the copies forming one group. Resampling groups of the tripled data
    # draws the same resamples as resampling the 30 distinct items (tripling every point maps each
    # rank r to 3r - 1, which leaves Spearman unchanged), so the two CIs are identical. Resampling
    # the 90 rows as if independent pretends to three times the data: a narrower, dishonest CI.
    p, h = _data(n=30, seed=4)
    p3 = [x for x in p for _ in range(3)]
    h3 = [x for x in h for _ in range(3)]
    groups = [f"c{i // 3}" for i in range(90)]
    distinct = stats.bootstrap_ci(p, h, n_boot=400, seed=2)
    grouped = stats.bootstrap_ci(p3, h3, n_boot=400, seed=2, groups=groups)
    naive = stats.bootstrap_ci(p3, h3, n_boot=400, seed=2)
    assert grouped.low == pytest.approx(distinct.low) and grouped.high == pytest.approx(distinct.high)
    assert grouped.n_units == 30
    assert naive.high - naive.low < 0.75 * (grouped.high - grouped.low)
    # The paired test resamples the same way.
    other = [x + 1.5 * e for x, e in zip(h, np.random.default_rng(9).normal(size=30))]
    o3 = [x for x in other for _ in range(3)]
    t_distinct = stats.paired_bootstrap(p, other, h, n_boot=400, seed=2)
    t_grouped = stats.paired_bootstrap(p3, o3, h3, n_boot=400, seed=2, groups=groups)
    assert (t_grouped.low, t_grouped.high) == pytest.approx((t_distinct.low, t_distinct.high))
    assert t_grouped.p_value == pytest.approx(t_distinct.p_value)
    assert (t_grouped.unit, t_grouped.n_units, t_grouped.n) == ("group", 30, 90)
    with pytest.raises(ValueError, match="aligned"):
        stats.bootstrap_ci(p, h, groups=["a"] * 3)


def test_degenerate_resamples_are_counted():
    # Only item 7's score differs from the others: a resample without it has a constant score
    # column, and one drawing a single item over and over has a constant human column too.
    pred = [0.0] * 7 + [1.0]
    human = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    want = sum(1 for row in stats._boot_indices(8, 500, 1) if 7 not in row or len(set(row)) == 1)
    assert 100 < want < 250  # about (7/8)^8 of 500 = 172 expected
    ci = stats.bootstrap_ci(pred, human, n_boot=500, seed=1)
    assert ci.n_degenerate == want and ci.n_boot == 500
    t = stats.paired_bootstrap(pred, human, human, n_boot=500, seed=1)
    assert t.n_degenerate == want and t.n_boot == 500  # the n_boot asked for, not raised
    assert stats.bootstrap_ci(*_data(), n_boot=200).n_degenerate == 0


def test_fed_turn_conversation_ci_is_wider_than_item_ci(data_dir):
    # FED-Turn cuts three turns from each conversation (124 groups over 375 items). With response
    # length as the score, resampling items calls the Overall correlation significant (CI above 0);
    # resampling conversations, as the items' dependence requires, gives a wider CI that crosses 0.
    from judge.datasets import load_benchmark
    from judge.scorers.classic import create_classic

    items = load_benchmark("FT", data_dir)
    scores = create_classic("length").score(items)
    pred = [s.value for s in scores]
    groups = [it.group for it in items]
    assert len(set(groups)) == 124
    for quality in ("Overall", "Engaging", "Interesting", "Relevant"):
        human = [it.human(quality) for it in items]
        item = stats.bootstrap_ci(pred, human, n_boot=1000, seed=0)
        conv = stats.bootstrap_ci(pred, human, n_boot=1000, seed=0, groups=groups)
        assert (item.unit, conv.unit, conv.n_units, conv.n_degenerate) == ("item", "group", 124, 0)
        assert conv.high - conv.low > 1.1 * (item.high - item.low), quality
    human = [it.human("Overall") for it in items]
    item = stats.bootstrap_ci(pred, human, n_boot=1000, seed=0)
    conv = stats.bootstrap_ci(pred, human, n_boot=1000, seed=0, groups=groups)
    assert item.low > 0 > conv.low


def test_williams_test():
    t, p = stats.williams_test(0.5, 0.5, 0.3, 100)
    assert t == 0 and p == pytest.approx(1.0)
    t1, p1 = stats.williams_test(0.6, 0.3, 0.4, 100)
    t2, _ = stats.williams_test(0.3, 0.6, 0.4, 100)
    assert t1 == pytest.approx(-t2) and t1 > 0 and p1 < 0.01
    # Hand computation of Steiger (1980) eq. 7 for r12=.6, r13=.3, r23=.4, n=100:
    det = 1 - .36 - .09 - .16 + 2 * .6 * .3 * .4  # = 0.534
    den = 2 * 99 / 97 * det + .45**2 * .6**3
    assert t1 == pytest.approx(.3 * math.sqrt(99 * 1.4) / math.sqrt(den))
    assert p1 == pytest.approx(2 * st.t.sf(t1, 97))


def test_system_level_hand_computed():
    pred = [1, 2, 3, 10, 11, 12, 5, 5, None]
    human = [1, 1, 1, 3, 3, 3, 2, 2, 5]
    systems = ["a", "a", "a", "b", "b", "b", "c", "c", "c"]
    c = stats.system_level(pred, human, systems)
    # means: a (2, 1), b (11, 3), c (5, 2) -> perfectly concordant
    assert c.n == 3 and c.value == pytest.approx(1.0)
    assert stats.group_means(pred, systems) == {"a": 2.0, "b": 11.0, "c": 5.0}


def test_dialog_level_mean_of_turns():
    assert stats.dialog_level([1.0, 3.0, None, 4.0], ["d1", "d1", "d2", "d2"]) == {"d1": 2.0, "d2": 4.0}


def test_dstc10_average_hand_computed():
    per_set, overall = stats.dstc10_average({("A", "q1"): 0.2, ("A", "q2"): 0.4, ("B", "q"): 0.6,
                                             ("C", "q"): float("nan")})
    assert per_set["A"] == pytest.approx(0.3) and per_set["B"] == pytest.approx(0.6)
    assert math.isnan(per_set["C"])
    assert overall == pytest.approx(0.45)  # mean of sets, not of the 3 qualities (0.4)


def test_mean_sd():
    m, sd = stats.mean_sd([0.1, 0.2, 0.3])
    assert m == pytest.approx(0.2) and sd == pytest.approx(np.std([0.1, 0.2, 0.3], ddof=1))
    assert stats.mean_sd([0.5]) == (0.5, 0.0)


# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the 4 observers x 12 units example.
_N = None
_KRIPP = list(zip(
    [1, 2, 3, 3, 2, 1, 4, 1, 2, _N, _N, _N],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _N, 3],
    [_N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _N],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _N],
))


@pytest.mark.parametrize(("level", "want"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)])
def test_krippendorff_alpha_textbook(level, want):
    assert krippendorff_alpha(_KRIPP, level) == pytest.approx(want, abs=5e-4)


def test_krippendorff_alpha_edge_cases():
    assert krippendorff_alpha([[1, 1], [2, 2], [3, 3]]) == pytest.approx(1.0)
    assert math.isnan(krippendorff_alpha([[1], [2]]))  # nothing pairable
    assert math.isnan(krippendorff_alpha([[2, 2], [2, 2]]))  # no variation
    # Two raters who always disagree maximally on a binary scale: alpha below zero.
    assert krippendorff_alpha([[0, 1], [1, 0], [0, 1], [1, 0]]) < 0
    with pytest.raises(ValueError):
        krippendorff_alpha(_KRIPP, "ratio-ish")


HARNESS_CONFIG = """
name = "groups"
datasets = ["FT"]
qualities = ["Overall"]
bootstrap = 200
compare = [["length", "length-copy"]]
[[methods]]
type = "classic"
scorer = "length"
[[methods]]
type = "classic"
scorer = "length"
name = "length-copy"
"""


def test_harness_resamples_conversations_and_reports_it(tmp_path, data_dir):
    # The harness passes each row's conversation group to the bootstrap, uses the configured number
    # of resamples for the paired test too (it used to raise it to 1000), and the report says so.
    import json

    from judge.harness import load_experiment, run_experiment
    from judge.report import render_markdown

    cfg = tmp_path / "c.toml"
    cfg.write_text(HARNESS_CONFIG)
    out = tmp_path / "out"
    exp = load_experiment(cfg).with_overrides(data_dir=str(data_dir), output=str(out))
    run_experiment(exp, progress=False, plots=False, log=lambda m: None)
    summary = json.loads((out / "summary.json").read_text())
    (res,) = [r for r in summary["results"] if r["method"] == "length"]
    ci = res["ci"]
    assert (ci["unit"], ci["n_units"], ci["n_degenerate"], ci["n_boot"]) == ("group", 124, 0, 200)
    (comp,) = summary["comparisons"]
    assert (comp["n_boot"], comp["unit"], comp["n_units"], comp["n_degenerate"]) == (200, "group", 124, 0)
    md = render_markdown(Summary.from_dict(summary))
    assert "200 resamples, resampling conversations" in md
    assert "Degenerate bootstrap resamples (undefined correlation, left out): 0 over the 2 CIs, 0 over the 1 paired" in md


def _part(ds, pred, human, groups=None):
    return stats.AveragePart(ds, (pred,), human, groups)


def test_average_ci_follows_the_dstc10_rule():
    # Set X has two perfectly ranked qualities, set Y one perfectly reversed: the DSTC10 average is
    # (1 + -1) / 2 = 0 on every resample. A plain mean over the three parts would give 1/3.
    h = list(range(20))
    parts = [_part("X", h, h), _part("X", h, h), _part("Y", [-x for x in h], h)]
    ci = stats.average_ci(parts, n_boot=200, seed=3)
    assert (ci.low, ci.high) == pytest.approx((0.0, 0.0), abs=1e-12)
    assert (ci.unit, ci.n_units, ci.n_degenerate) == ("item", 60, 0)


def test_average_ci_one_part_is_that_parts_bootstrap():
    p, h = _data(n=60, seed=4)
    groups = [f"g{i // 3}" for i in range(60)]
    ci = stats.average_ci([_part("X", p, h, groups)], n_boot=300, seed=5)
    one = stats.bootstrap_ci(p, h, n_boot=300, seed=stats.part_seed(5, 0), groups=groups)
    assert (ci.low, ci.high, ci.unit, ci.n_units) == (one.low, one.high, "group", 20)


def test_average_ci_narrows_over_independent_sets_and_skips_undefined_parts():
    # Eight noisy sets: the average's interval is narrower than one set's (sets are resampled on
    # their own, so their noise partly cancels), and it covers the point average.
    parts = [_part(f"S{i}", *_data(n=40, noise=1.0, seed=10 + i)) for i in range(8)]
    avg = stats.average_ci(parts, n_boot=500, seed=0)
    one = stats.bootstrap_ci(parts[0].preds[0], parts[0].human, n_boot=500, seed=0)
    point = np.mean([stats.correlate(p.preds[0], p.human).value for p in parts])
    assert avg.low < point < avg.high
    assert (avg.high - avg.low) < 0.6 * (one.high - one.low)
    # A part whose correlation is undefined (constant scores) is left out, as dstc10_average leaves it out.
    flat = _part("S9", [1.0] * 40, parts[0].human)
    assert stats.average_ci(parts + [flat], n_boot=500, seed=0) == avg


def test_sets_that_rate_the_same_conversations_are_resampled_together():
    """Two sets that rate the same conversations are one sample, not two: resampled jointly (one draw per
    conversation across both), an exact copy of a set adds nothing to the average's uncertainty, so its CI
    is the set's own; resampled independently it would look narrower than the data allow. Sets that share
    nothing are resampled exactly as before."""
    p, h = _data(n=60, noise=1.0, seed=7)
    groups = [f"c{i // 3}" for i in range(60)]
    alone = stats.average_ci([stats.AveragePart("X", (p,), h, groups, groups)], n_boot=400, seed=2)
    copy = [stats.AveragePart("X", (p,), h, groups, groups), stats.AveragePart("Y", (p,), h, groups, groups)]
    joint = stats.average_ci(copy, n_boot=400, seed=2)
    assert (joint.low, joint.high) == (alone.low, alone.high) and joint.n_units == 20
    independent = stats.average_ci([stats.AveragePart(x.dataset, x.preds, x.human, x.groups) for x in copy],
                                   n_boot=400, seed=2)
    assert independent.high - independent.low < 0.8 * (joint.high - joint.low)
    assert stats.resampled_together(copy) == [["X", "Y"]]
    # Disjoint conversations: the same resamples as without the keys (runs that share nothing do not move).
    other = [stats.AveragePart(f"S{i}", (q,), g, [f"g{j // 2}" for j in range(40)], [f"S{i}:{j // 2}" for j in range(40)])
             for i, (q, g) in enumerate(_data(n=40, noise=1.0, seed=30 + i) for i in range(3))]
    plain = [stats.AveragePart(x.dataset, x.preds, x.human, x.groups) for x in other]
    assert stats.average_ci(other, n_boot=300, seed=1) == stats.average_ci(plain, n_boot=300, seed=1)
    assert stats.resampled_together(other) == []


def test_paired_average_null_and_planted_difference():
    parts_null, parts_effect = [], []
    for i in range(6):
        p, h = _data(n=40, noise=1.0, seed=20 + i)
        parts_null.append(stats.AveragePart(f"S{i}", (p, p), h))
        weak = (np.array(h) * 0.1 + np.random.default_rng(i).normal(size=40)).tolist()
        parts_effect.append(stats.AveragePart(f"S{i}", (p, weak), h))
    null = stats.paired_average(parts_null, n_boot=400, seed=1)
    assert (null.diff, null.low, null.high, null.p_value, null.n) == (0.0, 0.0, 0.0, 1.0, 240)
    eff = stats.paired_average(parts_effect, n_boot=400, seed=1)
    assert eff.diff > 0.3 and eff.low > 0 and eff.p_value < 0.01
    with pytest.raises(ValueError, match="two score columns"):
        stats.paired_average([_part("X", *_data())], n_boot=10)


def test_harness_reports_the_average_ci_and_paired_average(tmp_path, data_dir):
    import json

    from judge.harness import load_experiment, run_experiment
    from judge.report import render_markdown

    cfg = tmp_path / "c.toml"
    cfg.write_text(HARNESS_CONFIG.replace('datasets = ["FT"]', 'datasets = ["FT", "FD"]'))
    out = tmp_path / "out"
    exp = load_experiment(cfg).with_overrides(data_dir=str(data_dir), output=str(out))
    run_experiment(exp, progress=False, plots=False, log=lambda m: None)
    summary = json.loads((out / "summary.json").read_text())
    avg = summary["averages"]["length"]
    ci = avg["ci"]
    assert ci["low"] < avg["overall"] < ci["high"] and (ci["unit"], ci["n_boot"]) == ("group", 200)
    # FED-Turn's turns come from FED-Dial's dialogs: the two sets' conversations are resampled together.
    assert avg["resampled_together"] == [["fed-turn", "fed-dial"]]
    (comp,) = summary["average_comparisons"]
    assert (comp["a"], comp["b"], comp["n_sets"], comp["diff"], comp["p"]) == ("length", "length-copy", 2, 0.0, 1.0)
    assert comp["n"] == sum(r["n"] for r in summary["results"] if r["method"] == "length")
    md = render_markdown(Summary.from_dict(summary))
    # The two methods tie, so both averages are bold; the CI follows the value.
    # The average carries the not-significant mark of its own stratified bootstrap's p.
    mark = "\\*" if ci["p"] >= 0.05 else ""
    assert f"| **{avg['overall']:.3f}{mark}** [{ci['low']:.2f}, {ci['high']:.2f}] |" in md
    assert "## Paired comparisons of the averages (same items)" in md
    assert "| length | length-copy | 2 |" in md
    assert md.count("(fed-turn and fed-dial) are resampled together: one draw per conversation") == 2
    from judge.report import render_html

    assert "(fed-turn and fed-dial) are resampled together" in render_html(Summary.from_dict(summary))
    from judge.report import render_html

    html = render_html(Summary.from_dict(summary))
    assert "<h2>Paired comparisons of the averages" in html
    assert f"<tr><td>length</td><td>length-copy</td><td>2</td><td>{comp['n']}</td>" in html
