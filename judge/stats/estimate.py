"""``judge estimate``'s computation: scored rows and human labels joined by item id, grouped (by system or a
``meta`` field) and clustered by conversation, turned into PPI++ and labels-only estimates
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
from ..records.labels import Label, latest_labels
from ..records.rows import Row
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
    """Everything ``judge estimate`` reports for one rows file (or results cell)."""

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
    notes: list[str] = field(default_factory=list)


def group_of(row: Row, by: str) -> str:
    """The group a row belongs to: ``system`` is the row's system, else its ``meta`` system; any other name
    is a ``meta`` field. A row without one is in the group ``(none)``."""
    value = row.system if by == "system" else None
    if value is None and row.meta is not None:
        value = row.meta.get(by)  # type: ignore[assignment]
    return "(none)" if value is None else str(value)


def conversation_key(row: Row) -> str:
    """The conversation a row is resampled with: its group, else itself."""
    return row.group or f"item:{row.id}"


@dataclass(frozen=True)
class Joined:
    """Each row's label (NaN: none), label weight (0: unlabelled) and the number of raters seen."""

    label: np.ndarray
    weight: np.ndarray
    n_raters: int
    weighted: bool


def join_labels(rows: Sequence[Row], labels: Sequence[Label], quality: str | None, file: str) -> Joined:
    """The labels of ``quality`` joined to ``rows`` by id: raters averaged per item, probabilities inverted."""
    index = {r.id: i for i, r in enumerate(rows)}
    per_item: dict[str, list[Label]] = {}
    raters: set[str | None] = set()
    for one in latest_labels(list(labels)).values():
        if quality is None or quality not in one.scores:
            continue
        if one.id not in index:
            raise InputError(f"labelled item {one.id!r} is not in the rows", file=file, record=one.id, field="id")
        if one.probability is not None and not 0 < one.probability <= 1:
            raise InputError(f"probability must be in (0, 1], got {one.probability}", file=file, record=one.id,
                             field="probability")
        per_item.setdefault(one.id, []).append(one)
        raters.add(one.rater)
    if not per_item:
        raise InputError(f"no label of quality {quality!r}", file=file, field="scores")
    with_p = {i for i, ls in per_item.items() if ls[0].probability is not None}
    if with_p and len(with_p) != len(per_item):
        raise InputError(f"{len(with_p)} labelled items carry a sampling probability and {len(per_item) - len(with_p)}"
                         " do not: an estimate needs every probability or none (a uniform random sample)",
                         file=file, field="probability")
    label = np.full(len(rows), np.nan)
    weight = np.zeros(len(rows))
    for item, ls in per_item.items():
        label[index[item]] = float(np.mean([lab.scores[quality] for lab in ls]))  # type: ignore[index]
        p = ls[0].probability
        weight[index[item]] = 1.0 if p is None else 1.0 / p
    return Joined(label, weight, len(raters), bool(with_p))


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


def estimate(rows: Sequence[Row], joined: Joined, *, by: str = "system", target: str = "rows",
             n_boot: int = ppi.N_BOOT, seed: int = 0, source: str = "", file: str = "") -> Estimate:
    """PPI++ and labels-only estimates of each group's human mean and each difference (see the module doc)."""
    keep = [i for i, r in enumerate(rows) if r.score is not None]
    left_out = len(rows) - len(keep)
    kept = [rows[i] for i in keep]
    if not kept:
        raise InputError("no row has a score", file=source)
    label, weight = joined.label[keep], joined.weight[keep]
    names = list(dict.fromkeys(group_of(r, by) for r in kept))
    convs = list(dict.fromkeys(conversation_key(r) for r in kept))
    g_index, c_index = {n: i for i, n in enumerate(names)}, {c: i for i, c in enumerate(convs)}
    group = np.array([g_index[group_of(r, by)] for r in kept])
    cluster = np.array([c_index[conversation_key(r)] for r in kept])
    score = np.array([float(r.score) for r in kept])  # type: ignore[arg-type]
    n_rows = np.bincount(group, minlength=len(names))
    n_lab = np.bincount(group, weights=(weight > 0).astype(float), minlength=len(names)).astype(int)
    _check_sample(names, n_rows, n_lab, joined.weighted, file)
    lay = ppi.layout(cluster, group, score)
    est_names, matrix = ppi.contrasts(names)
    fraction = None if joined.weighted else np.array([float(n_lab.sum()) / len(kept)])
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
    notes = []
    if joined.n_raters > 1:
        notes.append(f"{joined.n_raters} raters: an item's label is the mean of its raters' latest ratings")
    if left_out:
        notes.append(f"{left_out} rows without a score (failed items) left out")
    return Estimate(source, kept[0].quality, by, target, out[:len(names)], out[len(names):], len(kept),
                    int(n_lab.sum()), len(convs), joined.n_raters, joined.weighted, left_out, notes)


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
