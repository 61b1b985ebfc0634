"""Answers without ratings: how each version of a chatbot (system, model, prompt, date: any field of its
log) does by the judge's scores alone.

Per group: the mean score over its scored items with a percentile bootstrap interval that resamples
conversations (a conversation's replies are not independent: one confused exchange lowers several), the
number of items, of failed items and of conversations, the distribution (quantiles and a histogram over
bins shared by every group, so the histograms read side by side) and the worst conversations by their
mean score, each with its worst-scored item (where a reader starts looking). On a quality where lower is
better (``robotic``) the worst are the highest.

Rows are added one at a time (:class:`Tally`) and only what the statistics need is kept: per conversation
a sum, two counts and its lowest and highest item, per group its scores as an array of doubles. A log of a million turns
is summarised in tens of megabytes, so ``judge score --by`` streams as ``judge score`` does.

Below the floor on conversations (:mod:`judge.stats.floor`) a group gets no interval.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import InputError
from .correlation import cluster_means, percentiles
from .floor import has_interval

#: The quantiles every group reports, by name.
QUANTILES: tuple[tuple[str, float], ...] = (("min", 0.0), ("p10", 0.1), ("p25", 0.25), ("median", 0.5),
                                            ("p75", 0.75), ("p90", 0.9), ("max", 1.0))
#: Bins of the histograms (shared by every group: from the lowest score of all groups to the highest).
BINS = 10


@dataclass(frozen=True)
class ConversationScore:
    """One conversation of a group: its mean score, its items (and failed ones) and its worst-scored item (the
    lowest; the highest where lower is better)."""

    id: str
    mean: float | None
    n_items: int
    n_failed: int
    worst_item: str | None
    worst_score: float | None


@dataclass(frozen=True)
class GroupSummary:
    """The statistics of one group (one combination of the fields grouped by)."""

    key: tuple[str, ...]
    n_items: int
    n_failed: int
    n_conversations: int
    mean: float | None
    #: The bootstrap interval's ends (None below the floor, or without two scored conversations' worth).
    low: float | None
    high: float | None
    #: Conversations with a scored item: the units the bootstrap resamples (what the floor counts).
    n_resampled: int
    quantiles: dict[str, float]
    histogram: tuple[int, ...]
    worst: tuple[ConversationScore, ...]

    @property
    def too_few(self) -> bool:
        """Below the floor on conversations: no interval."""
        return not has_interval(self.n_resampled)


@dataclass(frozen=True)
class ByGroup:
    """Every group's statistics, with how they were computed."""

    by: tuple[str, ...]
    groups: tuple[GroupSummary, ...]
    #: The histograms' bin edges (BINS + 1 of them; empty when no item was scored).
    edges: tuple[float, ...]
    methods: tuple[str, ...]
    quality: str | None
    n_boot: int
    seed: int
    level: float
    worst_n: int
    #: Lower scores are better on the quality (the worst conversations are the highest).
    lower_is_better: bool = False


@dataclass
class _Conversation:
    total: float = 0.0
    scored: int = 0
    failed: int = 0
    low_item: str | None = None
    low_score: float = math.inf
    high_item: str | None = None
    high_score: float = -math.inf


@dataclass
class _Group:
    conversations: dict[str, _Conversation] = field(default_factory=dict)
    scores: array = field(default_factory=lambda: array("d"))
    n_items: int = 0


class Tally:
    """Scored items added one at a time (:meth:`add`; a row through :func:`judge.records.by_group.tally_row`),
    summarised at the end (:meth:`summary`)."""

    def __init__(self, by: Sequence[str]) -> None:
        self.by = tuple(by)
        self._groups: dict[tuple[str, ...], _Group] = {}
        self._methods: dict[str, None] = {}
        self._quality: str | None = None

    def add(self, key: tuple[str, ...], conversation: str, item: str, score: float | None, method: str,
            quality: str | None) -> None:
        """One item: its group's ``key`` (a value per field grouped by), its ``conversation``, its id and its
        score (None: the item failed), by ``method`` on ``quality``."""
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = _Group()
        conv = group.conversations.get(conversation)
        if conv is None:
            conv = group.conversations[conversation] = _Conversation()
        group.n_items += 1
        if method not in self._methods:
            if self._methods:
                raise InputError(f"rows of two methods ({next(iter(self._methods))}, {method}): a mean over "
                                 "both says nothing; summarise one method's rows at a time", record=item,
                                 field="method")
            self._methods[method] = None
        if quality != self._quality and self._quality is not None and quality is not None:
            raise InputError(f"rows of two qualities ({self._quality}, {quality}): summarise one at a time",
                             record=item, field="quality")
        self._quality = self._quality or quality
        if score is None:
            conv.failed += 1
            return
        conv.total += score
        conv.scored += 1
        group.scores.append(score)
        if score < conv.low_score:
            conv.low_score, conv.low_item = score, item
        if score > conv.high_score:
            conv.high_score, conv.high_item = score, item

    @property
    def quality(self) -> str | None:
        """The quality the rows scored (None until a row names one)."""
        return self._quality

    def summary(self, *, worst: int = 5, n_boot: int = 1000, seed: int = 0, level: float = 0.95,
                lower_is_better: bool = False) -> ByGroup:
        """Every group's statistics, groups in the order of their keys (numbers by value: :func:`natural`),
        so that a rerun, and a file in another order, print the same. ``lower_is_better``: the quality is one
        where a higher score is worse, so the worst conversations are the highest."""
        every = [s for g in self._groups.values() for s in (g.scores,) if len(s)]
        lo = min(min(s) for s in every) if every else None
        hi = max(max(s) for s in every) if every else None
        edges = tuple(np.linspace(lo, hi if hi > lo else lo + 1, BINS + 1).tolist()) \
            if lo is not None and hi is not None else ()
        groups = tuple(_summary(key, self._groups[key], edges, worst, n_boot, seed, level, lower_is_better)
                       for key in sorted(self._groups, key=natural))
        return ByGroup(self.by, groups, edges, tuple(self._methods), self._quality, n_boot, seed, level, worst,
                       lower_is_better)


def natural(key: tuple[str, ...]) -> tuple[tuple[tuple[int, int | str], ...], ...]:
    """A sort key that orders ``2.9`` before ``2.10`` and ``v9`` before ``v10`` (numbers by value)."""
    return tuple(tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part)
                 for text in key)


def _summary(key: tuple[str, ...], group: _Group, edges: tuple[float, ...], worst: int, n_boot: int, seed: int,
             level: float, lower_is_better: bool) -> GroupSummary:
    convs = group.conversations
    scores = np.frombuffer(group.scores, dtype=float) if len(group.scores) else np.empty(0)
    scored = [c for c in convs.values() if c.scored]
    sums = np.array([c.total for c in scored], dtype=float)
    counts = np.array([c.scored for c in scored], dtype=float)
    mean = float(sums.sum() / counts.sum()) if scored else None
    low = high = None
    if scored and has_interval(len(scored)):
        low, high = percentiles(cluster_means(sums, counts, n_boot, seed), level)
    quantiles = dict(zip([n for n, _ in QUANTILES], np.quantile(scores, [q for _, q in QUANTILES]).tolist(),
                         strict=True)) if len(scores) else {}
    histogram = tuple(int(x) for x in np.histogram(scores, bins=np.array(edges))[0]) if edges else ()
    sign = -1.0 if lower_is_better else 1.0
    ranked = sorted(((c.total / c.scored if c.scored else None, cid, c) for cid, c in convs.items()),
                    key=lambda t: (t[0] is None, sign * t[0] if t[0] is not None else 0.0, t[1]))
    worst_convs = tuple(ConversationScore(cid, m, c.scored + c.failed, c.failed,
                                          c.high_item if lower_is_better else c.low_item,
                                          c.high_score if lower_is_better else c.low_score)
                        for m, cid, c in ranked[:worst] if m is not None)
    return GroupSummary(key, group.n_items, sum(c.failed for c in convs.values()), len(convs), mean, low, high,
                        len(scored), quantiles, histogram, worst_convs)
