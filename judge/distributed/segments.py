"""Which actor answers which piece of a window: contiguous runs, so that each keeps the prefixes it evaluated.

A window's uncached requests come in prefix order (:func:`judge.scorers.units.plan`): the prompts of one
family, the items of one conversation, one template's instructions, run back to back, and a backend that
reuses its KV cache evaluates what they share once. :class:`Segments` keeps that when several actors
answer the window: each gets one contiguous run of the window's pieces, cut where consecutive pieces share
the least (between families, not inside one), of about equal estimated cost, and takes them front to back.
An actor that runs out takes the back half of the largest run left (cut the same way), so actors finish
together however unequal their speed, and each still evaluates contiguous work. Pieces of an actor that
died come back as a run of their own, which the next actor to run out takes first.

Pure bookkeeping over piece indices and costs (no Ray, no model), so that it is tested alone.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field


@dataclass
class Run:
    """Consecutive pieces (indices, in order) and the worker taking them (None: nobody yet)."""

    pieces: list[int]
    owner: Hashable | None = None


@dataclass
class Segments:
    """The pieces of one window (``costs[i]``: piece i's estimated cost; ``joins[i]``: how much piece i shares
    with piece i - 1, so a cut before it loses that much reuse; ``joins[0]`` is ignored) shared out among
    ``workers`` (see the module docstring)."""

    costs: Sequence[float]
    joins: Sequence[float]
    workers: Sequence[Hashable]
    runs: list[Run] = field(default_factory=list)

    def __post_init__(self) -> None:
        parts = max(1, len(self.workers))
        bounds = cuts(self.costs, self.joins, range(len(self.costs)), parts)
        owners: list[Hashable | None] = list(self.workers) or [None]
        self.runs = [Run(list(range(a, b)), owners[k]) for k, (a, b) in enumerate(itertools.pairwise(bounds))
                     if b > a]

    def left(self) -> int:
        """Pieces not yet taken."""
        return sum(len(r.pieces) for r in self.runs)

    def take(self, worker: Hashable, steal: bool = True) -> int | None:
        """The next piece for ``worker``: the front of its own run, else of an ownerless run (an actor's that
        died), else (``steal``: the worker has run out, nothing queued) the front of the back half of the
        costliest run left; None when there is none. A worker that still has work queued never steals: it
        would take the only piece of a worker not yet fed."""
        own = next((r for r in self.runs if r.owner == worker and r.pieces), None)
        if own is None:
            own = next((r for r in self.runs if r.owner is None and r.pieces), None)
            if own is not None:
                own.owner = worker
        if own is None and steal:
            own = self._steal(worker)
        if own is None:
            return None
        piece = own.pieces.pop(0)
        self.runs = [r for r in self.runs if r.pieces]
        return piece

    def _steal(self, worker: Hashable) -> Run | None:
        runs = [r for r in self.runs if r.pieces]
        if not runs:
            return None
        victim = max(runs, key=lambda r: sum(self.costs[p] for p in r.pieces))
        if len(victim.pieces) == 1:
            victim.owner = worker
            return victim
        at = cuts(self.costs, self.joins, victim.pieces, 2)[1]
        back = Run(victim.pieces[at:], worker)
        victim.pieces = victim.pieces[:at]
        self.runs.append(back)
        return back

    def give_back(self, pieces: Iterable[int]) -> None:
        """Pieces that were taken but not answered (their actor died): a run of their own, in order, that
        nobody owns; the remaining run of a dead worker is freed with :meth:`forget`."""
        back = sorted(pieces)
        if back:
            self.runs.insert(0, Run(back))

    def forget(self, worker: Hashable) -> None:
        """``worker`` is gone: its run (what it had not taken yet) goes to whoever runs out first."""
        for run in self.runs:
            if run.owner == worker:
                run.owner = None


def cuts(costs: Sequence[float], joins: Sequence[float], pieces: Sequence[int], parts: int) -> list[int]:
    """Where to cut ``pieces`` (indices into ``costs``, consecutive) into ``parts`` runs of about equal cost:
    positions into ``pieces``, from 0 to ``len(pieces)``. Each cut is the position, among those within a
    quarter of a run's cost of the even share, that loses the least shared prefix (``joins`` of the piece after
    it), the nearest to the even share among equals."""
    n = len(pieces)
    if parts <= 1 or n <= 1:
        return [0, n]
    if n <= parts:  # a piece each, for as many as there are
        return list(range(n + 1))
    before = [0.0]
    for p in pieces:
        before.append(before[-1] + costs[p])
    total = before[-1]
    share = total / parts
    out = [0]
    for k in range(1, parts):
        target = k * share
        lo = out[-1] + 1
        hi = n - (parts - k)  # leave a piece for each later run
        near = [i for i in range(lo, hi + 1) if abs(before[i] - target) <= share / 4]
        if not near:
            near = [min(range(lo, hi + 1), key=lambda i: abs(before[i] - target))]
        out.append(min(near, key=lambda i: (joins[pieces[i]], abs(before[i] - target))))
    out.append(n)
    return out
