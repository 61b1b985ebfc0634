"""Statistics of the harness: against scipy, hand-computed values and planted effects."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from judge import stats
from judge.agreement import krippendorff_alpha


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
    got = stats._resampled_corr(a, b, idx, "spearman")
    want = [st.spearmanr(a[i], b[i]).statistic for i in idx]
    assert np.allclose(got, want)


def test_paired_test_detects_planted_difference_and_not_null():
    rng = np.random.default_rng(0)
    h = rng.normal(size=150)
    good = h + 0.5 * rng.normal(size=150)
    bad = h + 2.5 * rng.normal(size=150)
    t = stats.paired_bootstrap(good, bad, h, n_boot=1000, seed=0)
    assert t.diff > 0 and t.low > 0 and t.p_value < 0.01 and t.significant
    # Null: two equally noisy methods.
    other = h + 0.5 * rng.normal(size=150)
    t0 = stats.paired_bootstrap(good, other, h, n_boot=1000, seed=0)
    assert t0.low < 0 < t0.high and t0.p_value > 0.05
    # Swapping A and B flips the sign.
    ts = stats.paired_bootstrap(bad, good, h, n_boot=1000, seed=0)
    assert ts.diff == pytest.approx(-t.diff)


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


def test_mean_sd_and_marks():
    m, sd = stats.mean_sd([0.1, 0.2, 0.3])
    assert m == pytest.approx(0.2) and sd == pytest.approx(np.std([0.1, 0.2, 0.3], ddof=1))
    assert stats.mean_sd([0.5]) == (0.5, 0.0)
    assert stats.significance_mark(0.01) == "" and stats.significance_mark(0.2) == "*"
    assert stats.significance_mark(float("nan")) == "*"


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
