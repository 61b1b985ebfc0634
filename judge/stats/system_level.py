"""System-level agreement: do a judge's per-system means rank the systems as people's do?

Interactive evaluation (Reliable-Eval, Ji et al. 2022) rates many conversations per system; what a
leaderboard of systems needs is the order of their means. :func:`system_agreement` correlates a judge's
per-system mean scores with the human per-system means over the same conversations, leaving out the
systems that are not part of the ranking (Reliable-Eval's deliberately degraded quality-control bot), with a
percentile bootstrap that resamples conversations within each system (every system keeps its number of
conversations; the n of the correlation is the number of systems, the resampled units are conversations).
:func:`replication` is the same statistic between two human runs of one experiment: how well people agree
with themselves at system level, the ceiling a judge's figure is read against. :func:`rank_of` says where a
system lands in a judge's order (1 = best), which for a sanity-check system should be last.

Below the floor on conversations (:mod:`judge.stats.floor`) per system, no interval and no p are given.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .correlation import correlate, group_means, row_correlations
from .floor import has_interval


@dataclass(frozen=True)
class SystemAgreement:
    """A system-level correlation with its bootstrap interval over conversations."""

    value: float
    p_value: float
    low: float
    high: float
    #: Systems correlated (the n of the correlation) and the conversations behind their means.
    n_systems: int
    n_conversations: int
    n_boot: int
    method: str
    #: Per-system means of the two sides (all systems, the left-out ones too).
    left: Mapping[str, float]
    right: Mapping[str, float]

    @property
    def has_interval(self) -> bool:
        return math.isfinite(self.low)


def rank_of(means: Mapping[str, float], system: str, negative: bool = False) -> tuple[int, int]:
    """(rank, number of systems) of ``system`` in the order of ``means``, 1 = best: the highest mean, or the
    lowest for a negative quality (``robotic``)."""
    order = sorted(means, key=lambda s: means[s], reverse=not negative)
    return order.index(system) + 1, len(order)


def system_agreement(left: Sequence[float | None], right: Sequence[float | None], systems: Sequence[str], *,
                     exclude: Collection[str] = (), method: str = "spearman", n_boot: int = 1000,
                     seed: int = 0) -> SystemAgreement:
    """Correlation of the per-system means of ``left`` (a judge's scores) and ``right`` (the human ratings of
    the same conversations), one value of each per conversation; ``exclude``: systems left out of the
    correlation (their means are still returned)."""
    keep = [i for i, (a, b) in enumerate(zip(left, right, strict=True))
            if a is not None and b is not None and math.isfinite(a) and math.isfinite(b)]
    sys = [systems[i] for i in keep]
    a = np.array([left[i] for i in keep], dtype=float)
    b = np.array([right[i] for i in keep], dtype=float)
    names = [s for s in dict.fromkeys(sys) if s not in exclude]
    members = {s: np.array([j for j, x in enumerate(sys) if x == s]) for s in names}
    return _agreement(a, b, members, members, method, n_boot, seed, group_means(list(a), sys),
                      group_means(list(b), sys))


def replication(first: Sequence[float], first_systems: Sequence[str], second: Sequence[float],
                second_systems: Sequence[str], *, exclude: Collection[str] = (), method: str = "spearman",
                n_boot: int = 1000, seed: int = 0) -> SystemAgreement:
    """Correlation of the per-system means of two runs of one experiment (other conversations, the same
    systems): each run's conversations are resampled within each system, the two runs independently."""
    names = [s for s in dict.fromkeys(first_systems) if s not in exclude and s in set(second_systems)]
    a, b = np.array(first, dtype=float), np.array(second, dtype=float)
    m1 = {s: np.array([j for j, x in enumerate(first_systems) if x == s]) for s in names}
    m2 = {s: np.array([j for j, x in enumerate(second_systems) if x == s]) for s in names}
    return _agreement(a, b, m1, m2, method, n_boot, seed, group_means(first, first_systems),
                      group_means(second, second_systems), paired=False)


def _agreement(a: np.ndarray, b: np.ndarray, m1: Mapping[str, np.ndarray],
               m2: Mapping[str, np.ndarray], method: str, n_boot: int, seed: int, left: Mapping[str, float],
               right: Mapping[str, float], paired: bool = True) -> SystemAgreement:
    """The correlation of the systems' means and its bootstrap: paired (one set of conversations rated by
    both sides: a conversation is drawn for both) or not (two runs: each side draws its own)."""
    names = list(m1)
    point = correlate([float(a[m1[s]].mean()) for s in names], [float(b[m2[s]].mean()) for s in names], method)
    n_conv = sum(len(m1[s]) for s in names) + (0 if paired else sum(len(m2[s]) for s in names))
    smallest = min((len(m) for m in (*m1.values(), *m2.values())), default=0)
    low = high = p = float("nan")
    if names and has_interval(smallest) and math.isfinite(point.value):
        rng = np.random.default_rng(seed)
        left_means, right_means = [], []
        for s in names:  # paired: one draw of each system's conversations for both sides (then m1 is m2)
            drawn = rng.integers(0, len(m1[s]), size=(n_boot, len(m1[s])))
            other = drawn if paired else rng.integers(0, len(m2[s]), size=(n_boot, len(m2[s])))
            left_means.append(a[m1[s][drawn]].mean(axis=1))
            right_means.append(b[m2[s][other]].mean(axis=1))
        rs = row_correlations(np.column_stack(left_means), np.column_stack(right_means), method)
        vals = rs[np.isfinite(rs)]
        if len(vals):
            low, high = (float(x) for x in np.percentile(vals, [2.5, 97.5]))
        p = point.p_value
    return SystemAgreement(point.value, p, low, high, len(names), n_conv, n_boot, method, dict(left), dict(right))
