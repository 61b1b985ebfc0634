"""Correlation statistics between judge scores and human ratings."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..core.components import components
from .floor import has_interval

if TYPE_CHECKING:
    from types import ModuleType


def scipy_stats() -> ModuleType:
    """scipy.stats, imported on first use: it takes about a second to import, which every ``judge``
    command (``--help``, ``--check``, ``serve``'s start) would otherwise pay before doing anything."""
    from scipy import stats

    return stats


@dataclass(frozen=True)
class Correlation:
    """A correlation coefficient with its p-value and the number of paired items."""

    method: str
    value: float
    p_value: float
    n: int


def correlate(pred: Sequence[float | None], human: Sequence[float | None], method: str = "spearman") -> Correlation:
    """Spearman, Pearson or Kendall (tau-b) over the items where both values exist."""
    if len(pred) != len(human):
        raise ValueError(f"{len(pred)} predictions vs {len(human)} human scores")
    _, (a, b) = _kept(pred, human)
    n = len(a)
    if n < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return Correlation(method, float("nan"), float("nan"), n)
    test = {"spearman": "spearmanr", "pearson": "pearsonr", "kendall": "kendalltau"}.get(method)
    if test is None:
        raise ValueError(f"unknown correlation method {method!r}")
    res = getattr(scipy_stats(), test)(a, b)
    return Correlation(method, float(res.statistic), float(res.pvalue), n)


def correlations(pred: Sequence[float | None], human: Sequence[float | None]) -> dict[str, Correlation]:
    """Spearman, Pearson and Kendall at once."""
    return {m: correlate(pred, human, m) for m in ("spearman", "pearson", "kendall")}


# -- confidence intervals and paired tests ------------------------------------------------------------

def _rank_rows(x: np.ndarray) -> np.ndarray:
    """Average ranks along the last axis (ties share their mean rank), as Spearman needs."""
    return scipy_stats().rankdata(x, axis=-1)


def _row_pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson r of each row of ``a`` with the same row of ``b`` (NaN where a row is constant)."""
    a = a - a.mean(axis=-1, keepdims=True)
    b = b - b.mean(axis=-1, keepdims=True)
    den = np.sqrt((a * a).sum(axis=-1) * (b * b).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (a * b).sum(axis=-1) / np.where(den > 0, den, 1.0), np.nan)


def spearman_rows(scores: np.ndarray, human: np.ndarray) -> np.ndarray:
    """Spearman of each row of ``scores`` (shape (k, n)) with ``human`` (n): many candidate score
    columns against one set of ratings at once (NaN where a row is constant)."""
    return _row_pearson(_rank_rows(scores), _rank_rows(np.broadcast_to(human, scores.shape)))


def row_correlations(a: np.ndarray, b: np.ndarray, method: str) -> np.ndarray:
    """The correlation of each row of ``a`` with the same row of ``b`` (NaN where a row is constant):
    vectorised for Spearman (the Pearson of average ranks) and Pearson, since a bootstrap computes thousands."""
    if method == "spearman":
        return _row_pearson(_rank_rows(a), _rank_rows(b))
    if method == "pearson":
        return _row_pearson(a, b)
    if method == "kendall":
        return np.array([scipy_stats().kendalltau(x, y).statistic for x, y in zip(a, b, strict=True)], dtype=float)
    raise ValueError(f"unknown correlation method {method!r}")


def _boot_indices(n: int, n_boot: int, seed: int) -> np.ndarray:
    # One generator per call, seeded explicitly: the same seed gives the same resamples everywhere.
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def group_members(groups: Sequence[str | None]) -> list[np.ndarray]:
    """Item indices of each group, groups in first-seen order; an item whose group is None is alone."""
    members: dict[object, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(("item", i) if g is None else ("group", g), []).append(i)
    return [np.array(v, dtype=np.intp) for v in members.values()]


def boot_samples(n: int, groups: Sequence[str | None] | None, n_boot: int, seed: int) -> list[np.ndarray]:
    """Item indices of each bootstrap resample.

    Without groups: n items drawn with replacement. With groups: as many groups as there are drawn
    with replacement, each bringing all its items (so resamples differ in size). With one item per
    group, in item order, the two draw exactly the same resamples for the same seed.
    """
    if groups is None:
        return list(_boot_indices(n, n_boot, seed))
    members = group_members(groups)
    draws = np.random.default_rng(seed).integers(0, len(members), size=(n_boot, len(members)))
    return [np.concatenate([members[g] for g in row]) for row in draws]


#: Conversation draws held at once (replicates x conversations): a bootstrap over a million turns stays small.
DRAW_BUDGET = 4_000_000


def cluster_means(sums: np.ndarray, counts: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """The item mean ``sum(sums) / sum(counts)`` on each of ``n_boot`` resamples of whole conversations (one sum
    and count of items each): the draws of :func:`boot_samples` (one generator of ``seed``, ``n_boot`` rows of as
    many conversations as there are), taken a chunk of rows at a time beyond DRAW_BUDGET, so that memory grows
    with the conversations, not with replicates times items."""
    k = len(sums)
    rng = np.random.default_rng(seed)
    step = max(1, DRAW_BUDGET // max(k, 1))
    out = np.empty(n_boot)
    for start in range(0, n_boot, step):
        draws = rng.integers(0, k, size=(min(step, n_boot - start), k))
        out[start:start + len(draws)] = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    return out


def _samples_corr(a: np.ndarray, b: np.ndarray, samples: Sequence[np.ndarray], method: str) -> np.ndarray:
    """The correlation on each resample, vectorised over resamples of equal size."""
    out = np.empty(len(samples))
    by_size: dict[int, list[int]] = {}
    for i, idx in enumerate(samples):
        by_size.setdefault(len(idx), []).append(i)
    for size, rows in by_size.items():
        # A joint resample may draw none of one set's conversations: no correlation there.
        idx = np.stack([samples[i] for i in rows])
        out[rows] = np.nan if size == 0 else row_correlations(a[idx], b[idx], method)
    return out


def _check_groups(groups: Sequence[str | None] | None, n: int) -> None:
    if groups is not None and len(groups) != n:
        raise ValueError(f"{len(groups)} groups vs {n} scores: groups must be aligned with the scores")


def _kept_groups(groups: Sequence[str | None] | None, keep: Sequence[int]) -> tuple[list[str | None] | None, str, int]:
    """The groups of the kept items, the unit a bootstrap resamples (``item`` without groups) and how many."""
    if groups is None:
        return None, "item", len(keep)
    kept = [groups[i] for i in keep]
    return kept, "group", len(group_members(kept))


@dataclass(frozen=True)
class Interval:
    """A percentile bootstrap confidence interval.

    ``unit`` is what was resampled ("item", or "group": whole conversations / context groups) and
    ``n_units`` how many of them there were; ``n_degenerate`` counts the resamples on which the
    correlation was undefined (a constant column): they are left out of the percentiles, and reported.
    ``p_value`` is the two-sided bootstrap p of "the correlation is 0" from the same resamples (the
    percentile-interval inversion, floored at 1/(usable resamples): see :func:`p_at_floor`), so that a
    significance mark and the CI beside it come from the same unit. ``too_few``: fewer units than the floor
    (:mod:`judge.stats.floor`), so no interval and no p were computed.
    """

    low: float
    high: float
    level: float
    n_boot: int
    seed: int
    unit: str = "item"
    n_units: int = 0
    n_degenerate: int = 0
    p_value: float = float("nan")
    too_few: bool = False


def _kept(*cols: Sequence[float | None]) -> tuple[list[int], list[np.ndarray]]:
    """Indices where every column has a value and the score columns (all but the last) are finite, and each
    column's values there."""
    *scores, human = cols
    keep = [
        i for i in range(len(human))
        if human[i] is not None and all(c[i] is not None and math.isfinite(c[i]) for c in scores)  # type: ignore[arg-type]
    ]
    return keep, [np.array([c[i] for i in keep], dtype=float) for c in cols]


def percentiles(finite: np.ndarray, level: float) -> tuple[float, float]:
    alpha = (1 - level) / 2
    lo, hi = np.quantile(finite, [alpha, 1 - alpha])
    return float(lo), float(hi)


def two_sided_p(diffs: np.ndarray) -> float:
    """Twice the share of resampled differences on the far side of zero (the percentile-interval
    inversion), floored at 1/(number of usable resamples)."""
    tail = min(float(np.mean(diffs <= 0)), float(np.mean(diffs >= 0)))
    return min(1.0, max(2 * tail, 1.0 / len(diffs)))


def bootstrap_ci(
    pred: Sequence[float | None],
    human: Sequence[float | None],
    method: str = "spearman",
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    groups: Sequence[str | None] | None = None,
) -> Interval:
    """Percentile bootstrap CI of the correlation (seeded).

    With ``groups`` (aligned with the scores: each item's conversation or context group) whole groups
    are resampled, as items of one conversation are not independent; without, single items. Resamples
    on which the correlation is undefined are left out and counted in ``n_degenerate``.
    """
    if len(pred) != len(human):
        raise ValueError(f"{len(pred)} predictions vs {len(human)} human scores")
    _check_groups(groups, len(pred))
    keep, (a, b) = _kept(pred, human)
    kept_groups, unit, n_units = _kept_groups(groups, keep)
    if len(a) < 3 or not has_interval(n_units):
        return Interval(float("nan"), float("nan"), level, n_boot, seed, unit, n_units, 0,
                        too_few=not has_interval(n_units))
    vals = _samples_corr(a, b, boot_samples(len(a), kept_groups, n_boot, seed), method)
    return _interval_result(vals, level, n_boot, seed, unit, n_units)


def _percentile_test(vals: np.ndarray, level: float) -> tuple[float, float, float, int]:
    """The percentile CI and two-sided p over the defined resampled values, and how many were undefined
    (a constant column: left out, and counted)."""
    finite = vals[np.isfinite(vals)]
    n_degenerate = int(len(vals) - len(finite))
    if len(finite) == 0:
        return float("nan"), float("nan"), float("nan"), n_degenerate
    return (*percentiles(finite, level), two_sided_p(finite), n_degenerate)


def _interval_result(vals: np.ndarray, level: float, n_boot: int, seed: int, unit: str, n_units: int) -> Interval:
    """The interval from resampled correlations."""
    lo, hi, p, n_degenerate = _percentile_test(vals, level)
    return Interval(lo, hi, level, n_boot, seed, unit, n_units, n_degenerate, p)


@dataclass(frozen=True)
class PairedTest:
    """Method A vs method B on the same items: the correlation difference r_A - r_B, its CI and p-value.

    ``n_boot`` is the number of resamples drawn; ``n_degenerate`` of them had an undefined
    difference and were left out. ``unit`` / ``n_units``: what was resampled, as in Interval.
    """

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
    unit: str = "item"
    n_units: int = 0
    n_degenerate: int = 0
    #: Fewer units than the floor (:mod:`judge.stats.floor`): no interval and no p.
    too_few: bool = False


def paired_bootstrap(pred_a: Sequence[float | None], pred_b: Sequence[float | None], human: Sequence[float | None],
                     method: str = "spearman", *, n_boot: int = 2000, seed: int = 0, level: float = 0.95,
                     groups: Sequence[str | None] | None = None) -> PairedTest:
    """Paired bootstrap of corr(A, human) - corr(B, human) over the items both methods scored.

    Each resample draws the same items (or, with ``groups``, the same whole groups) for A and B, so
    the test accounts for their dependence. The two-sided p-value is twice the share of resampled
    differences on the far side of zero (the percentile-interval inversion), floored at 1/(number of
    usable resamples); it is computed with exactly ``n_boot`` resamples, never more.
    """
    if not (len(pred_a) == len(pred_b) == len(human)):
        raise ValueError(f"lengths differ: {len(pred_a)}, {len(pred_b)}, {len(human)}")
    _check_groups(groups, len(human))
    keep, (a, b, h) = _kept(pred_a, pred_b, human)
    kept_groups, unit, n_units = _kept_groups(groups, keep)
    n = len(h)
    ra = correlate(a.tolist(), h.tolist(), method).value
    rb = correlate(b.tolist(), h.tolist(), method).value
    nan = float("nan")
    if n < 3 or not has_interval(n_units) or not (math.isfinite(ra) and math.isfinite(rb)):
        return PairedTest(method, ra, rb, ra - rb, nan, nan, nan, n, n_boot, seed, unit, n_units, 0,
                          too_few=not has_interval(n_units))
    samples = boot_samples(n, kept_groups, n_boot, seed)
    d = _samples_corr(a, h, samples, method) - _samples_corr(b, h, samples, method)
    return _paired_result(method, ra, rb, d, n, n_boot, seed, level, unit, n_units)


def _paired_result(method: str, ra: float, rb: float, diffs: np.ndarray, n: int, n_boot: int, seed: int,
                   level: float, unit: str, n_units: int) -> PairedTest:
    """The test from the resampled differences r_A - r_B."""
    lo, hi, p, n_degenerate = _percentile_test(diffs, level)
    return PairedTest(method, ra, rb, ra - rb, lo, hi, p, n, n_boot, seed, unit, n_units, n_degenerate)


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
    p = 2 * float(scipy_stats().t.sf(abs(t), n - 3))
    return t, p


# -- aggregation rules -------------------------------------------------------------------------------

def rank_gap(a: Sequence[float | None], b: Sequence[float | None]) -> list[float | None]:
    """Each item's rank under ``a`` minus its rank under ``b``, as a share of the ranks (average ranks
    for ties, over the items where both values exist): 0 = the same place, +1 = top under ``a`` and
    bottom under ``b``. Spearman's rho is one minus a multiple of the mean squared gap, so the items with
    the largest gaps (a judge's scores against the human means: its disagreements) are those that pull
    it down most. None where either value is missing, and everywhere when fewer than two items have both."""
    if len(a) != len(b):
        raise ValueError(f"{len(a)} values vs {len(b)}: rank gaps need aligned columns")
    keep, (ka, kb) = _kept(a, b)
    out: list[float | None] = [None] * len(a)
    if len(keep) < 2:
        return out
    ra, rb = _rank_rows(ka), _rank_rows(kb)
    for i, gap in zip(keep, (ra - rb) / (len(keep) - 1)):
        out[i] = float(gap)
    return out


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


def system_level(pred: Sequence[float | None], human: Sequence[float | None], systems: Sequence[str | None],
                 method: str = "spearman") -> Correlation:
    """System-level correlation (USR / Yeh et al. 2021): average both scores per generating system,
    then correlate the per-system averages (n = number of systems). Items without a system are skipped.
    """
    keep = [(p, h, s) for p, h, s in zip(pred, human, systems, strict=True)
            if s is not None and p is not None and h is not None and math.isfinite(p)]
    ps = group_means([p for p, _, _ in keep], [s for _, _, s in keep])
    hs = group_means([h for _, h, _ in keep], [s for _, _, s in keep])
    names = [s for s in ps if s in hs]
    return correlate([ps[s] for s in names], [hs[s] for s in names], method)


def dialog_level(turn_scores: Sequence[float | None], dialogs: Sequence[str]) -> dict[str, float]:
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


@dataclass(frozen=True)
class AveragePart:
    """One (set, quality) correlation inside a DSTC10 average: the scores of one or more methods on
    the same items (``preds``), the human means, each item's conversation group, and each item's
    conversation as every set names it (``shared``: ``Item.conversation``, a content fingerprint), which
    tells which parts rate the same conversations."""

    dataset: str
    preds: tuple[Sequence[float | None], ...]
    human: Sequence[float | None]
    groups: Sequence[str | None] | None = None
    shared: Sequence[str] | None = None


def part_seed(seed: int, index: int) -> int:
    # Sets are independent samples, so each part gets its own stream, derived from the one seed.
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0])


def _dstc10_rows(by_set: dict[str, list[np.ndarray]]) -> np.ndarray:
    """The DSTC10 rule applied element-wise: mean over qualities within a set, then over sets."""
    return np.mean([np.mean(v, axis=0) for v in by_set.values()], axis=0)


def _strata(keys: Sequence[set[str] | None]) -> list[list[int]]:
    """The parts (indices) that are resampled together: parts joined, directly or through others, by a
    conversation they both rate; a part without ``shared`` keys (or sharing none) stands alone. Each
    stratum is listed from its first part."""
    owner: dict[str, int] = {}
    return components(range(len(keys)), ((i, owner.setdefault(key, i)) for i, k in enumerate(keys)
                                         for key in sorted(k or ())))


def _joint_samples(shared: Sequence[Sequence[str]], n_boot: int, seed: int) -> tuple[list[list[np.ndarray]], int]:
    """Resamples of parts that rate some of the same conversations: each replicate draws, with
    replacement, as many conversations as the parts rate together, and every part takes all its items of
    each drawn conversation (so a conversation counts once however many sets rate it). Returns each
    part's item indices per replicate, and the number of conversations."""
    keys = list(dict.fromkeys(k for part in shared for k in part))
    index = {k: i for i, k in enumerate(keys)}
    members = []
    for part in shared:
        by_key: dict[int, list[int]] = {}
        for j, k in enumerate(part):
            by_key.setdefault(index[k], []).append(j)
        members.append({key: np.array(v, dtype=np.intp) for key, v in by_key.items()})
    draws = np.random.default_rng(seed).integers(0, len(keys), size=(n_boot, len(keys)))
    empty = np.array([], dtype=np.intp)
    samples = [[np.concatenate([m.get(int(g), empty) for g in row] or [empty]) for row in draws] for m in members]
    return samples, len(keys)


#: One part of a stratified bootstrap: its index (its seed stream), items, each item's conversation group
#: (None: items alone) and each item's conversation as every set names it (None: shares none).
StratumPart = tuple[int, int, Sequence[str | None] | None, Sequence[str] | None]


def stratified_samples(parts: Sequence[StratumPart], n_boot: int, seed: int) -> tuple[list[list[np.ndarray]], list[int]]:
    """The joint bootstrap of a figure over several sets: every replicate resamples each part's
    conversations within the part, all parts in the same replicate, except parts that rate some of the same
    conversations (``shared``), which are drawn together, one draw per conversation (:func:`_joint_samples`).
    Returns each part's item indices per replicate, and the conversations of each stratum (what
    :func:`judge.stats.floor.has_interval` reads)."""
    samples: dict[int, list[np.ndarray]] = {}
    sizes: list[int] = []
    for stratum in _strata([None if p[3] is None else set(p[3]) for p in parts]):
        if len(stratum) == 1:
            index, n, groups, _ = parts[stratum[0]]
            samples[stratum[0]] = boot_samples(n, groups, n_boot, part_seed(seed, index))
            sizes.append(n if groups is None else len(group_members(groups)))
        else:
            joint, n_conversations = _joint_samples([parts[k][3] or [] for k in stratum], n_boot,
                                                    part_seed(seed, parts[stratum[0]][0]))
            samples.update(zip(stratum, joint, strict=True))
            sizes.append(n_conversations)
    return [samples[k] for k in range(len(parts))], sizes


def _average_replicates(parts: Sequence[AveragePart], method: str, n_boot: int, seed: int
                        ) -> tuple[np.ndarray, np.ndarray, int, int, str, list[int]]:
    """Per score column: the DSTC10 average (shape k) and its stratified bootstrap replicates (k, n_boot).

    Each part resamples its own conversations (with ``groups``) independently of the other parts, the
    columns of one part sharing each resample, except parts that rate the same conversations
    (``shared``: FED-Turn and FED-Dial, the DailyDialog sets): those are resampled together, one draw per
    conversation across the parts that rate it (:func:`_joint_samples`), since their figures are not
    independent. A part whose correlation is undefined for any column is left out, as ``dstc10_average``
    leaves it out. Also returns the items and units used (a conversation rated by several parts counts
    once), the unit resampled (``group`` when any part has groups, else ``item``) and the conversations of
    each stratum.
    """
    unit = "group" if any(p.groups is not None or p.shared is not None for p in parts) else "item"
    used = []
    for i, part in enumerate(parts):
        keep, (*cols, h) = _kept(*part.preds, part.human)
        point = np.array([correlate(c.tolist(), h.tolist(), method).value for c in cols])
        kept_groups, _, units = _kept_groups(part.groups, keep)
        if len(h) < 3 or units < 2 or not np.all(np.isfinite(point)):
            continue
        shared = None if part.shared is None else [part.shared[j] for j in keep]
        used.append((i, part, h, cols, point, kept_groups, units, shared))
    samples, sizes = stratified_samples([(i, len(h), g, sh) for i, _, h, _, _, g, _, sh in used], n_boot, seed)
    points: dict[str, list[np.ndarray]] = {}
    reps: dict[str, list[np.ndarray]] = {}
    n_items = 0
    for k, (_, part, h, cols, point, *_) in enumerate(used):  # in the parts' order, whatever the strata
        points.setdefault(part.dataset, []).append(point)
        reps.setdefault(part.dataset, []).append(np.stack([_samples_corr(c, h, samples[k], method) for c in cols]))
        n_items += len(h)
    if not points:
        k = len(parts[0].preds) if parts else 1
        return np.full(k, np.nan), np.full((k, 0), np.nan), 0, 0, unit, []
    return _dstc10_rows(points), _dstc10_rows(reps), n_items, sum(sizes), unit, sizes


def resampled_together(parts: Sequence[AveragePart]) -> list[list[str]]:
    """The sets whose conversations an average's bootstrap resamples together (they rate some of the same
    conversations, by ``shared``), each group in the parts' order; sets resampled on their own are left out."""
    strata = _strata([None if p.shared is None else set(p.shared) for p in parts])
    out = [list(dict.fromkeys(parts[i].dataset for i in stratum)) for stratum in strata]
    return [names for names in out if len(names) > 1]


def average_ci(parts: Sequence[AveragePart], method: str = "spearman", *, n_boot: int = 1000, seed: int = 0,
               level: float = 0.95) -> Interval:
    """Percentile bootstrap CI of a DSTC10 average (mean over qualities within a set, then over sets).

    The bootstrap is stratified: every replicate resamples each (set, quality) part's conversations on
    its own (parts that rate the same conversations together, one draw per conversation) and averages
    the replicate correlations by the same rule as the point value, so the interval covers the sampling
    noise of all the sets at once. Replicates with an undefined correlation in any part are left out and
    counted in ``n_degenerate``.
    """
    _, reps, _, n_units, unit, sizes = _average_replicates(parts, method, n_boot, seed)
    if not has_interval(sizes):
        return Interval(float("nan"), float("nan"), level, n_boot, seed, unit, n_units, too_few=True)
    return _interval_result(reps[0], level, n_boot, seed, unit, n_units)


def paired_average(parts: Sequence[AveragePart], method: str = "spearman", *, n_boot: int = 2000, seed: int = 0,
                   level: float = 0.95) -> PairedTest:
    """Paired stratified bootstrap of avg(A) - avg(B), the DSTC10 averages of two methods scored on the
    same items (each part's ``preds`` is (A, B)); p-value as in ``paired_bootstrap``. ``n`` is the
    number of items over all the parts used."""
    if any(len(p.preds) != 2 for p in parts):
        raise ValueError("paired_average needs exactly two score columns (A, B) in every part")
    point, reps, n, n_units, unit, sizes = _average_replicates(parts, method, n_boot, seed)
    if not has_interval(sizes):
        nan = float("nan")
        return PairedTest(method, float(point[0]), float(point[1]), float(point[0] - point[1]), nan, nan, nan, n,
                          n_boot, seed, unit, n_units, too_few=True)
    return _paired_result(method, float(point[0]), float(point[1]), reps[0] - reps[1], n, n_boot, seed, level,
                          unit, n_units)


def p_floor(n_boot: int, n_degenerate: int = 0) -> float:
    """The smallest p-value a bootstrap of ``n_boot`` resamples can give: 1/(usable resamples)."""
    usable = n_boot - n_degenerate
    return 1.0 / usable if usable > 0 else float("nan")


def p_at_floor(p_value: float | None, n_boot: int, n_degenerate: int = 0) -> bool:
    """Whether a bootstrap p is its floor: every resample fell on one side of zero, so all it says is
    p < 1/n_boot (more resamples would give a smaller value)."""
    floor = p_floor(n_boot, n_degenerate)
    return p_value is not None and math.isfinite(p_value) and math.isfinite(floor) and p_value <= floor * (1 + 1e-9)
