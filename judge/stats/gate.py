"""The statistics of a release gate: is a candidate's mean score at most a tolerated drop below a baseline's?

The figure is the difference of means, candidate minus baseline, on the score's own scale, with a percentile
bootstrap interval that resamples conversations (turns of one conversation are not independent):

- **paired** (:func:`paired_delta`): both sides judged replies in the same contexts (a test set of scripted
  conversations replayed against two versions). Each shared context gives one difference; a replicate draws
  conversations with replacement and both sides take the same ones, so the variation between conversations,
  which both sides share, cancels out of the interval.
- **unpaired** (:func:`unpaired_delta`): the two sides judged different conversations (last week's traffic
  against this week's). Each side's conversations are resampled on their own in every replicate, and the
  interval is that of the difference of the two resampled means.

Below the floor on conversations (:mod:`judge.stats.floor`) no interval is computed and the verdict is
inconclusive. The :func:`verdict` rule (a negative quality's interval turned round first): **pass** when the interval's lower end is at or above ``-max_drop`` (a
drop larger than the tolerance is unlikely), **fail** when the whole interval lies below it, **inconclusive**
when it straddles it. Every draw comes from the one seed, so the same inputs give the same verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from .correlation import cluster_means, group_members, part_seed, percentiles
from .floor import has_interval

Verdict = Literal["pass", "fail", "inconclusive"]
#: The verdicts, from best to worst (a gate over several comparisons takes the worst).
VERDICTS: tuple[Verdict, ...] = ("pass", "inconclusive", "fail")
#: Decimal places the verdict compares the interval and the tolerance at.
DIGITS = 9


@dataclass(frozen=True)
class Delta:
    """Candidate mean minus baseline mean, with its bootstrap interval over conversations.

    ``conversations`` holds the conversations resampled: one count when paired, the baseline's and the
    candidate's when unpaired. ``n_baseline`` and ``n_candidate`` are the values averaged (paired: both the
    shared contexts). ``too_few``: below the floor, no interval."""

    paired: bool
    baseline: float
    candidate: float
    delta: float
    low: float
    high: float
    n_baseline: int
    n_candidate: int
    conversations: tuple[int, ...]
    n_boot: int
    seed: int
    level: float
    too_few: bool = False

    @property
    def has_interval(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if len(values) else float("nan")


def _cluster_means(values: np.ndarray, groups: Sequence[str], n_boot: int, seed: int) -> np.ndarray:
    """The mean of ``values`` on each of ``n_boot`` resamples of their conversations: the resamples of
    ``judge.stats.correlation``'s cluster bootstrap (each replicate draws as many conversations as there are,
    with replacement, every drawn conversation bringing all its values; conversations in first-seen order),
    computed from each conversation's sum and count rather than from every resample's item indices, so that
    memory grows with the conversations, not with replicates times turns."""
    members = group_members(list(groups))
    sums = np.array([values[m].sum() for m in members], dtype=float)
    return cluster_means(sums, np.array([len(m) for m in members], dtype=float), n_boot, seed)


def _interval(reps: np.ndarray, level: float) -> tuple[float, float]:
    finite = reps[np.isfinite(reps)]
    if len(finite) == 0:
        return float("nan"), float("nan")
    return percentiles(finite, level)


def _conversations(groups: Sequence[str]) -> int:
    return len(set(groups))


def paired_delta(baseline: Sequence[float], candidate: Sequence[float], conversations: Sequence[str], *,
                 n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> Delta:
    """The mean of ``candidate[i] - baseline[i]`` over shared contexts, ``conversations[i]`` naming the
    conversation of context ``i``: a replicate draws conversations with replacement and takes every
    difference of each (both sides resampled jointly)."""
    if not (len(baseline) == len(candidate) == len(conversations)):
        raise ValueError(f"lengths differ: {len(baseline)}, {len(candidate)}, {len(conversations)}")
    b = np.array(baseline, dtype=float)
    c = np.array(candidate, dtype=float)
    diffs = c - b
    sizes = (_conversations(conversations),)
    nan = float("nan")
    point = (_mean(b), _mean(c), _mean(diffs))
    if not len(diffs) or not has_interval(sizes):
        return Delta(True, *point, nan, nan, len(b), len(c), sizes, n_boot, seed, level, too_few=True)
    low, high = _interval(_cluster_means(diffs, conversations, n_boot, part_seed(seed, 0)), level)
    return Delta(True, *point, low, high, len(b), len(c), sizes, n_boot, seed, level)


def unpaired_delta(baseline: Sequence[float], baseline_conversations: Sequence[str], candidate: Sequence[float],
                   candidate_conversations: Sequence[str], *, n_boot: int = 1000, seed: int = 0,
                   level: float = 0.95) -> Delta:
    """``mean(candidate) - mean(baseline)`` of two sides that judged different conversations: every replicate
    resamples each side's conversations within the side (two independent streams from the one seed, as the
    stratified bootstrap of several sets draws them), and the floor reads both counts."""
    if len(baseline) != len(baseline_conversations) or len(candidate) != len(candidate_conversations):
        raise ValueError("each side needs one conversation per value")
    b = np.array(baseline, dtype=float)
    c = np.array(candidate, dtype=float)
    sizes = (_conversations(baseline_conversations), _conversations(candidate_conversations))
    nan = float("nan")
    point = (_mean(b), _mean(c), _mean(c) - _mean(b))
    if not len(b) or not len(c) or not has_interval(sizes):
        return Delta(False, *point, nan, nan, len(b), len(c), sizes, n_boot, seed, level, too_few=True)
    reps = _cluster_means(c, candidate_conversations, n_boot, part_seed(seed, 1)) - \
        _cluster_means(b, baseline_conversations, n_boot, part_seed(seed, 0))
    low, high = _interval(reps, level)
    return Delta(False, *point, low, high, len(b), len(c), sizes, n_boot, seed, level)


def verdict(delta: Delta, max_drop: float, negative: bool = False) -> Verdict:
    """Pass when the interval's lower end is at or above ``-max_drop``, fail when its upper end is below it,
    inconclusive when it straddles it or when there is no interval (too few conversations). For a ``negative``
    quality (lower is better: ``robotic``) a rise is the drop: the interval is turned round first."""
    if not delta.has_interval:
        return "inconclusive"
    if negative:
        delta = replace(delta, low=-delta.high, high=-delta.low)
    # Compared at a precision far below any score's, so that a difference of sums that is the tolerance up to
    # floating-point rounding (0.3 - 0.4 against 0.1) meets it.
    low, high, floor = round(delta.low, DIGITS), round(delta.high, DIGITS), round(-max_drop, DIGITS)
    if low >= floor:
        return "pass"
    if high < floor:
        return "fail"
    return "inconclusive"


def worst(verdicts: Sequence[Verdict]) -> Verdict:
    """The gate's verdict over several comparisons: any fail fails, else any inconclusive is inconclusive."""
    return max(verdicts, key=VERDICTS.index, default="inconclusive")
