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
from dataclasses import asdict, dataclass, replace
from typing import Literal

import numpy as np

from .correlation import _percentiles, stratified_samples
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

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if len(values) else float("nan")


def _resampled_means(values: np.ndarray, samples: Sequence[np.ndarray]) -> np.ndarray:
    """The mean of ``values`` over each resample (index arrays; an empty one gives NaN)."""
    return np.array([values[idx].mean() if len(idx) else np.nan for idx in samples], dtype=float)


def _interval(reps: np.ndarray, level: float) -> tuple[float, float]:
    finite = reps[np.isfinite(reps)]
    if len(finite) == 0:
        return float("nan"), float("nan")
    return _percentiles(finite, level)


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
    samples, sizes = stratified_samples([(0, len(diffs), list(conversations), None)], n_boot, seed)
    nan = float("nan")
    point = (_mean(b), _mean(c), _mean(diffs))
    if not len(diffs) or not has_interval(sizes):
        return Delta(True, *point, nan, nan, len(b), len(c), tuple(sizes), n_boot, seed, level, too_few=True)
    low, high = _interval(_resampled_means(diffs, samples[0]), level)
    return Delta(True, *point, low, high, len(b), len(c), tuple(sizes), n_boot, seed, level)


def unpaired_delta(baseline: Sequence[float], baseline_conversations: Sequence[str], candidate: Sequence[float],
                   candidate_conversations: Sequence[str], *, n_boot: int = 1000, seed: int = 0,
                   level: float = 0.95) -> Delta:
    """``mean(candidate) - mean(baseline)`` of two sides that judged different conversations: every replicate
    resamples each side's conversations within the side (two independent streams from the one seed)."""
    if len(baseline) != len(baseline_conversations) or len(candidate) != len(candidate_conversations):
        raise ValueError("each side needs one conversation per value")
    b = np.array(baseline, dtype=float)
    c = np.array(candidate, dtype=float)
    samples, sizes = stratified_samples([(0, len(b), list(baseline_conversations), None),
                                         (1, len(c), list(candidate_conversations), None)], n_boot, seed)
    nan = float("nan")
    point = (_mean(b), _mean(c), _mean(c) - _mean(b))
    if not len(b) or not len(c) or not has_interval(sizes):
        return Delta(False, *point, nan, nan, len(b), len(c), tuple(sizes), n_boot, seed, level, too_few=True)
    reps = _resampled_means(c, samples[1]) - _resampled_means(b, samples[0])
    low, high = _interval(reps, level)
    return Delta(False, *point, low, high, len(b), len(c), tuple(sizes), n_boot, seed, level)


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
