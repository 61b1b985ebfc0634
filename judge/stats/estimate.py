"""``judge estimate``'s computation: scored units (rows, or pairs of replies) and their human labels (joined by
:mod:`judge.report.estimate_join`), grouped (by system or a ``meta`` field) and clustered by conversation,
turned into PPI++ and labels-only estimates
(:mod:`judge.stats.ppi`) of every group's human mean and every difference between groups.

Which labels count:

* Only labels from the labels file, unless ``labels_from_rows`` (then the rows' own ``human`` values are the
  labels, every row labelled: how the coverage benchmark reveals them).
* Several raters of one item: their ratings are averaged (each rater's latest label), one label per item.
* Probabilities: either every labelled item has its sampling probability (weighted by its inverse) or none
  does. Without them the labelled items must be a uniform random sample of the rows: a group whose number of
  labels is improbable under uniform sampling (two-sided hypergeometric p below :data:`UNIFORM_P`, Bonferroni
  over groups) is refused, since its estimate would be biased and nothing would show it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import InputError
from . import ppi

#: Below this (Bonferroni-adjusted) p, a labels-per-group split is refused as not a uniform random sample.
UNIFORM_P = 0.001


@dataclass(frozen=True)
class Estimand:
    """One group's human mean, or one difference between two groups."""

    name: str
    ppi: float
    ppi_low: float
    ppi_high: float
    lam: float
    labels_only: float
    labels_only_low: float
    labels_only_high: float
    judge_mean: float
    n_rows: int
    n_labels: int
    n_conversations: int
    effective_n: float

    @property
    def has_interval(self) -> bool:
        return math.isfinite(self.ppi_low)


@dataclass(frozen=True)
class Estimate:
    """Everything ``judge estimate`` reports for one rows file (or results cell); no groups: a results folder's
    cell none of whose rows is labelled (the labels are of its other cells), reported and not estimated."""

    source: str
    quality: str | None
    by: str
    target: str
    groups: list[Estimand]
    differences: list[Estimand]
    n_rows: int
    n_labelled: int
    n_conversations: int
    n_raters: int
    weighted: bool
    left_out: int
    labelled_outside: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Joined:
    """Each row's label (NaN: none), label weight (0: unlabelled), the number of raters seen, and the labelled
    items skipped as in none of these rows but in another cell's of a results folder."""

    label: np.ndarray
    weight: np.ndarray
    n_raters: int
    weighted: bool
    outside: int = 0


def uniformity_p(n_rows: Sequence[int], n_labelled: Sequence[int]) -> float:
    """Bonferroni-adjusted smallest two-sided hypergeometric p of the groups' label counts under a uniform random
    sample of the rows (1: consistent with one)."""
    from scipy.stats import hypergeom

    total, drawn = int(sum(n_rows)), int(sum(n_labelled))
    worst = 1.0
    for size, k in zip(n_rows, n_labelled, strict=True):
        dist = hypergeom(total, size, drawn)
        p = min(1.0, 2 * min(dist.cdf(k), dist.sf(k - 1)))
        worst = min(worst, p)
    return min(1.0, worst * len(n_rows))


@dataclass(frozen=True)
class Scored:
    """What an estimate needs of each scored unit (a row, or a pair of replies): its id, group, conversation
    and the judge's score (None: the item failed)."""

    ids: list[str]
    groups: list[str]
    conversations: list[str]
    scores: list[float | None]
    quality: str | None


def estimate(unit: Scored, joined: Joined, *, by: str = "system", target: str = "rows",
             n_boot: int = ppi.N_BOOT, seed: int = 0, source: str = "", file: str = "",
             differences: bool = True) -> Estimate:
    """PPI++ and labels-only estimates of each group's human mean and each difference (see the module doc);
    ``by`` names the grouping in the output."""
    keep = [i for i, x in enumerate(unit.scores) if x is not None]
    left_out = len(unit.scores) - len(keep)
    if not keep:
        raise InputError("no row has a score", file=source)
    label, weight = joined.label[keep], joined.weight[keep]
    groups, convs_of = [unit.groups[i] for i in keep], [unit.conversations[i] for i in keep]
    names = list(dict.fromkeys(groups))
    convs = list(dict.fromkeys(convs_of))
    notes = []
    if joined.n_raters > 1:
        notes.append(f"{joined.n_raters} raters: an item's label is the mean of its raters' latest ratings")
    if left_out:
        notes.append(f"{left_out} rows without a score (failed items) left out")
    if joined.outside:
        notes.append(f"{joined.outside} labelled items are in none of these rows (the folder's other cells hold "
                     "them): skipped")
    if joined.outside and not weight.any():  # a results folder's cell with none of the labels: not estimated
        return Estimate(source, unit.quality, by, target, [], [], len(keep), 0, len(convs), joined.n_raters,
                        joined.weighted, left_out, joined.outside, notes)
    g_index, c_index = {n: i for i, n in enumerate(names)}, {c: i for i, c in enumerate(convs)}
    group = np.array([g_index[g] for g in groups])
    cluster = np.array([c_index[c] for c in convs_of])
    score = np.array([float(unit.scores[i]) for i in keep])  # type: ignore[arg-type]
    n_rows = np.bincount(group, minlength=len(names))
    n_lab = np.bincount(group, weights=(weight > 0).astype(float), minlength=len(names)).astype(int)
    _check_sample(names, n_rows, n_lab, joined.weighted, file)
    lay = ppi.layout(cluster, group, score)
    est_names, matrix = ppi.contrasts(names) if differences else (names, np.eye(len(names)))
    fraction = None if joined.weighted else np.array([float(n_lab.sum()) / len(keep)])
    counts = ppi.boot_counts(len(convs), n_boot, seed)
    d = ppi.estimate_draws(lay, weight[None], np.nan_to_num(label)[None], matrix, counts, target=target,
                           fraction=fraction)
    judge_means = (lay.f_sum.sum(axis=0) / lay.n_sum.sum(axis=0)) @ matrix.T
    rows_per = np.abs(matrix) @ n_rows
    eff = d.effective_n
    out = [Estimand(est_names[e], float(d.ppi[0, e]), float(d.ppi_low[0, e]), float(d.ppi_high[0, e]),
                    float(d.lam[0, e]), float(d.naive[0, e]), float(d.naive_low[0, e]), float(d.naive_high[0, e]),
                    float(judge_means[e]), int(rows_per[e]), int(d.n_labels[0, e]), int(d.n_conversations[0, e]),
                    float(eff[0, e]))
           for e in range(len(est_names))]
    return Estimate(source, unit.quality, by, target, out[:len(names)], out[len(names):], len(keep),
                    int(n_lab.sum()), len(convs), joined.n_raters, joined.weighted, left_out, joined.outside, notes)


def _check_sample(names: Sequence[str], n_rows: np.ndarray, n_lab: np.ndarray, weighted: bool, file: str) -> None:
    """Refuse labels that are evidently not a uniform random sample of the rows (unless weighted)."""
    if weighted or len(names) < 2:
        return
    p = uniformity_p(list(map(int, n_rows)), list(map(int, n_lab)))
    if p < UNIFORM_P:
        split = ", ".join(f"{n}: {k} of {m}" for n, k, m in zip(names, n_lab, n_rows, strict=True))
        raise InputError(f"the labelled items are not a uniform random sample of the rows (labels per group: {split};"
                         f" p = {p:.2g} under uniform sampling): label items in a uniform random order, or record each"
                         " label's sampling probability", file=file, field="id")
