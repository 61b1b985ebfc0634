"""Correlation statistics between judge scores and human ratings."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats as _st


@dataclass(frozen=True)
class Correlation:
    """A correlation coefficient with its p-value and the number of paired items."""

    method: str
    value: float
    p_value: float
    n: int

    @property
    def significant(self) -> bool:
        return bool(self.p_value < 0.05)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _clean(pred: Sequence[float | None], human: Sequence[float | None]) -> tuple[np.ndarray, np.ndarray]:
    if len(pred) != len(human):
        raise ValueError(f"{len(pred)} predictions vs {len(human)} human scores")
    pairs = [(p, h) for p, h in zip(pred, human) if p is not None and h is not None and math.isfinite(p)]
    a = np.array([p for p, _ in pairs], dtype=float)
    b = np.array([h for _, h in pairs], dtype=float)
    return a, b


def correlate(pred: Sequence[float | None], human: Sequence[float | None], method: str = "spearman") -> Correlation:
    """Spearman, Pearson or Kendall (tau-b) over the items where both values exist."""
    a, b = _clean(pred, human)
    n = len(a)
    if n < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return Correlation(method, float("nan"), float("nan"), n)
    if method == "spearman":
        res = _st.spearmanr(a, b)
    elif method == "pearson":
        res = _st.pearsonr(a, b)
    elif method == "kendall":
        res = _st.kendalltau(a, b)
    else:
        raise ValueError(f"unknown correlation method {method!r}")
    return Correlation(method, float(res.statistic), float(res.pvalue), n)


def correlations(pred: Sequence[float | None], human: Sequence[float | None]) -> dict[str, Correlation]:
    """Spearman, Pearson and Kendall at once."""
    return {m: correlate(pred, human, m) for m in ("spearman", "pearson", "kendall")}


# -- confidence intervals and paired tests ------------------------------------------------------------

def _rank_rows(x: np.ndarray) -> np.ndarray:
    """Average ranks along the last axis (ties share their mean rank), as Spearman needs."""
    return _st.rankdata(x, axis=-1)


def _row_pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson r of each row of ``a`` with the same row of ``b`` (NaN where a row is constant)."""
    a = a - a.mean(axis=-1, keepdims=True)
    b = b - b.mean(axis=-1, keepdims=True)
    den = np.sqrt((a * a).sum(axis=-1) * (b * b).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (a * b).sum(axis=-1) / np.where(den > 0, den, 1.0), np.nan)


def _resampled_corr(a: np.ndarray, b: np.ndarray, idx: np.ndarray, method: str) -> np.ndarray:
    """The correlation on each bootstrap resample (rows of ``idx`` are item indices)."""
    ra, rb = a[idx], b[idx]
    if method == "spearman":
        return _row_pearson(_rank_rows(ra), _rank_rows(rb))
    if method == "pearson":
        return _row_pearson(ra, rb)
    if method == "kendall":
        out = np.empty(len(idx))
        for i in range(len(idx)):
            out[i] = _st.kendalltau(ra[i], rb[i]).statistic
        return out
    raise ValueError(f"unknown correlation method {method!r}")


def _boot_indices(n: int, n_boot: int, seed: int) -> np.ndarray:
    # One generator per call, seeded explicitly: the same seed gives the same resamples everywhere.
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


@dataclass(frozen=True)
class Interval:
    """A percentile bootstrap confidence interval."""

    low: float
    high: float
    level: float
    n_boot: int
    seed: int

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def bootstrap_ci(
    pred: Sequence[float | None],
    human: Sequence[float | None],
    method: str = "spearman",
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> Interval:
    """Percentile bootstrap CI of the correlation, resampling items with replacement (seeded).

    Resamples on which the correlation is undefined (a constant column) are left out.
    """
    a, b = _clean(pred, human)
    nan = Interval(float("nan"), float("nan"), level, n_boot, seed)
    if len(a) < 3:
        return nan
    vals = _resampled_corr(a, b, _boot_indices(len(a), n_boot, seed), method)
    vals = vals[np.isfinite(vals)]
    if len(vals) == 0:
        return nan
    alpha = (1 - level) / 2
    lo, hi = np.quantile(vals, [alpha, 1 - alpha])
    return Interval(float(lo), float(hi), level, n_boot, seed)


@dataclass(frozen=True)
class PairedTest:
    """Method A vs method B on the same items: the correlation difference r_A - r_B, its CI and p-value."""

    method: str
    r_a: float
    r_b: float
    diff: float
    low: float
    high: float
    p_value: float
    n: int
    n_boot: int
    seed: int

    @property
    def significant(self) -> bool:
        return bool(self.p_value < 0.05)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _clean3(a: Sequence[float | None], b: Sequence[float | None], h: Sequence[float | None]):
    if not (len(a) == len(b) == len(h)):
        raise ValueError(f"lengths differ: {len(a)}, {len(b)}, {len(h)}")
    keep = [
        (x, y, z) for x, y, z in zip(a, b, h)
        if x is not None and y is not None and z is not None and math.isfinite(x) and math.isfinite(y)
    ]
    arr = np.array(keep, dtype=float).reshape(-1, 3)
    return arr[:, 0], arr[:, 1], arr[:, 2]


def paired_bootstrap(
    pred_a: Sequence[float | None],
    pred_b: Sequence[float | None],
    human: Sequence[float | None],
    method: str = "spearman",
    *,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> PairedTest:
    """Paired bootstrap of corr(A, human) - corr(B, human) over the items both methods scored.

    Each resample draws the same items for A and B, so the test accounts for their dependence.
    The two-sided p-value is twice the share of resampled differences on the far side of zero
    (the percentile-interval inversion), floored at 1/n_boot.
    """
    a, b, h = _clean3(pred_a, pred_b, human)
    n = len(h)
    ra = correlate(a.tolist(), h.tolist(), method).value
    rb = correlate(b.tolist(), h.tolist(), method).value
    if n < 3 or not (math.isfinite(ra) and math.isfinite(rb)):
        return PairedTest(method, ra, rb, float("nan"), float("nan"), float("nan"), float("nan"), n, n_boot, seed)
    idx = _boot_indices(n, n_boot, seed)
    d = _resampled_corr(a, h, idx, method) - _resampled_corr(b, h, idx, method)
    d = d[np.isfinite(d)]
    alpha = (1 - level) / 2
    lo, hi = np.quantile(d, [alpha, 1 - alpha])
    tail = min(np.mean(d <= 0), np.mean(d >= 0))
    p = float(min(1.0, max(2 * tail, 1.0 / len(d))))
    return PairedTest(method, ra, rb, ra - rb, float(lo), float(hi), p, n, n_boot, seed)


def williams_test(r_ah: float, r_bh: float, r_ab: float, n: int) -> tuple[float, float]:
    """Williams' t-test (Steiger 1980, eq. 7) for two dependent correlations sharing the human column.

    ``r_ah`` and ``r_bh`` are the two methods' correlations with the humans, ``r_ab`` the methods'
    correlation with each other. Returns (t, two-sided p) with n - 3 degrees of freedom.
    """
    if n <= 3:
        return float("nan"), float("nan")
    det = 1 - r_ah**2 - r_bh**2 - r_ab**2 + 2 * r_ah * r_bh * r_ab
    rbar = (r_ah + r_bh) / 2
    den = 2 * (n - 1) / (n - 3) * det + rbar**2 * (1 - r_ab) ** 3
    if den <= 0:
        return float("nan"), float("nan")
    t = (r_ah - r_bh) * math.sqrt((n - 1) * (1 + r_ab)) / math.sqrt(den)
    p = 2 * float(_st.t.sf(abs(t), n - 3))
    return t, p


# -- aggregation rules -------------------------------------------------------------------------------

def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof=1; 0.0 for a single value) of the finite values."""
    v = [x for x in values if x is not None and math.isfinite(x)]
    if not v:
        return float("nan"), float("nan")
    m = math.fsum(v) / len(v)
    sd = math.sqrt(math.fsum((x - m) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else 0.0
    return m, sd


def group_means(values: Sequence[float | None], groups: Sequence[str]) -> dict[str, float]:
    """Mean of the non-missing values per group key, in first-seen order (None/NaN values skipped)."""
    sums: dict[str, list[float]] = {}
    for v, g in zip(values, groups, strict=True):
        if v is not None and math.isfinite(v):
            sums.setdefault(g, []).append(float(v))
    return {g: math.fsum(v) / len(v) for g, v in sums.items()}


def system_level(
    pred: Sequence[float | None],
    human: Sequence[float | None],
    systems: Sequence[str | None],
    method: str = "spearman",
) -> Correlation:
    """System-level correlation (USR / Yeh et al. 2021): average both scores per generating system,
    then correlate the per-system averages (n = number of systems). Items without a system are skipped.
    """
    keep = [(p, h, s) for p, h, s in zip(pred, human, systems, strict=True)
            if s is not None and p is not None and h is not None and math.isfinite(p)]
    ps = group_means([p for p, _, _ in keep], [s for _, _, s in keep])
    hs = group_means([h for _, h, _ in keep], [s for _, _, s in keep])
    names = [s for s in ps if s in hs]
    return correlate([ps[s] for s in names], [hs[s] for s in names], method)


def dialog_level(
    turn_scores: Sequence[float | None], dialogs: Sequence[str]
) -> dict[str, float]:
    """Dialog-level scores from turn-level ones: the mean of each dialog's turn scores."""
    return group_means(turn_scores, dialogs)


def dstc10_average(per_quality: dict[tuple[str, str], float]) -> tuple[dict[str, float], float]:
    """DSTC10 Track 5 averaging: correlations per (set, quality) -> mean within each set -> mean of sets.

    Returns (per-set means in first-seen order, overall mean). NaN correlations are skipped.
    """
    by_set: dict[str, list[float]] = {}
    for (ds, _q), r in per_quality.items():
        by_set.setdefault(ds, [])
        if r is not None and math.isfinite(r):
            by_set[ds].append(r)
    sets = {ds: (math.fsum(v) / len(v) if v else float("nan")) for ds, v in by_set.items()}
    finite = [v for v in sets.values() if math.isfinite(v)]
    overall = math.fsum(finite) / len(finite) if finite else float("nan")
    return sets, overall


def significance_mark(p_value: float, alpha: float = 0.05) -> str:
    """The paper's mark: ``*`` for a correlation that is NOT significant at ``alpha`` (or undefined)."""
    return "" if (p_value is not None and math.isfinite(p_value) and p_value < alpha) else "*"
