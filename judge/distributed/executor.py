"""The executor that answers a pass's units on Ray actors, with the cache and the outputs kept on the driver.

For each window of units (:func:`judge.scorers.units.run_lanes` hands them over in prefix order):

1. Every request is looked up in the driver's SQLite cache under the key the driver's backend identity gives
   it (:func:`judge.engine.cache.lookup`); a request asked twice in the window (two methods sending one prompt) is
   shipped once, as a local run computes it once and serves the second from the cache. A unit whose answers
   are all cached is answered at once.
2. The misses, unit by unit in the window's order, are cut into pieces (a run of one unit's requests, at most
   the window's misses over :data:`PIECES_PER_ACTOR` per actor) and shared out among the live actors as
   contiguous runs (:class:`judge.distributed.segments.Segments`), at most :data:`IN_FLIGHT` pieces queued at
   each, so that each actor evaluates consecutive prompts and reuses their shared prefixes.
3. Replies come back in any order; each answer is stored in the cache as it arrives (:func:`judge.engine.cache.store`,
   so a driver killed now keeps it) and fills its unit, which is yielded once complete, with the time since the
   last unit and the counters its pieces moved on the actors charged to its lane.
4. An actor that dies gives its queued pieces back to the others and is replaced
   (:class:`judge.distributed.actors.ActorGroup`); every unit is yielded exactly once, so no item is lost or
   scored twice.

Answers do not depend on where, in what order or in what company a request is evaluated (the engine's
batches are fixed by each prompt alone: :mod:`judge.backends.llamacpp`), so the rows equal a local run's.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from math import ceil
from typing import Any, Protocol

from ..backends.base import Backend
from ..backends.requests import Answer, Request
from ..core.errors import BackendError
from ..engine.cache import Cache, lookup, request_key, store
from ..scorers.units import Executor, LaneCost, Unit
from .actors import Actor, ActorGroup
from .segments import Segments
from .worker import Reply

#: Pieces each actor gets of a window, about: more balance the actors' load at a window's end, fewer keep
#: longer runs of shared prefixes on one actor.
PIECES_PER_ACTOR = 4
#: Pieces queued at an actor at once: the next is there when one finishes, so no actor waits for the driver.
IN_FLIGHT = 2
#: Seconds without a live actor (all dead or waiting for room on the cluster) before the run stops.
STALL_SECONDS = 900.0


@dataclass
class Piece:
    """Consecutive requests of one unit (their positions in it, and their cache keys) shipped together."""

    unit: int
    slots: list[int]
    keys: list[str]
    cost: float = 0.0


@dataclass
class _Pending:
    """A unit being answered: its answers so far, how many are missing, what it cost on the actors."""

    answers: list[Answer | None]
    missing: int
    moved: dict[str, int] = field(default_factory=dict)


class Driver(Protocol):
    """What the executor answers for: the backend identity that names cache keys, the cache (None: off), the
    group of Ray actors the pieces go to, how many actors share them, and where what each piece moved is added
    up (:class:`judge.distributed.backend.RayBackend`)."""

    cache: Cache | None
    group: ActorGroup

    @property
    def identity(self) -> Backend: ...

    @property
    def width(self) -> int: ...

    def moved(self, into: dict[str, int], delta: dict[str, int]) -> None: ...


class RayExecutor(Executor):
    """The steps of the module docstring: pieces answered on the actors of ``driver``, at most :data:`IN_FLIGHT`
    queued at each; an actor that dies gives its pieces back and is replaced. ``costs`` (one per lane) receive
    each unit's share."""

    def __init__(self, driver: Driver, costs: Sequence[LaneCost] | None) -> None:
        self.driver = driver
        self.costs = costs
        self._clock = time.perf_counter()
        self.ray = driver.group.ray
        self.group = driver.group

    def breadth(self) -> int:
        return self.driver.width

    def run(self, units: Sequence[Unit]) -> Iterator[tuple[int, Sequence[Answer]]]:
        self._clock = time.perf_counter()
        pending = [_Pending([None] * len(u.requests), len(u.requests)) for u in units]
        waiting = self._look_up(units, pending)
        for i, p in enumerate(pending):
            if not p.missing:
                yield self._done(units, pending, i)
        pieces = self._pieces(units, waiting)
        if pieces:
            yield from self._ship(units, pending, waiting, pieces)

    # -- 1. the cache -----------------------------------------------------------------------------------
    def _look_up(self, units: Sequence[Unit], pending: list[_Pending]) -> dict[str, list[tuple[int, int]]]:
        """Fill what the cache holds; return the requests to ship by key: for each, every (unit, slot) it
        answers, the first of them shipped."""
        driver = self.driver
        waiting: dict[str, list[tuple[int, int]]] = {}
        for i, unit in enumerate(units):
            found = lookup(driver.cache, driver.identity, unit.requests) if driver.cache is not None else None
            for slot, request in enumerate(unit.requests):
                hit = found[slot] if found is not None else None
                if hit is not None:
                    self._fill(pending[i], slot, hit)
                    driver.moved(pending[i].moved, {"cache_hits": 1})
                    continue
                key = request_key(driver.identity, request)
                if driver.cache is not None:
                    # A repeat is shipped once and counted as the local cache counts it: a miss in the same
                    # backend call, a hit in a later one.
                    later = key in waiting and waiting[key][0][0] != i
                    driver.moved(pending[i].moved, {"cache_hits" if later else "cache_misses": 1})
                waiting.setdefault(key, []).append((i, slot))
        return waiting

    # -- 2. pieces ------------------------------------------------------------------------------------
    def _pieces(self, units: Sequence[Unit], waiting: dict[str, list[tuple[int, int]]]) -> list[Piece]:
        """The shipped requests (the first of each key) cut into pieces, unit by unit, in the window's order."""
        shipped: dict[int, list[tuple[int, str]]] = {}
        for key, places in waiting.items():
            unit, slot = places[0]
            shipped.setdefault(unit, []).append((slot, key))
        total = sum(len(s) for s in shipped.values())
        if not total:
            return []
        size = max(1, ceil(total / (PIECES_PER_ACTOR * max(1, self.driver.width))))
        pieces = []
        for unit in sorted(shipped):
            slots = sorted(shipped[unit])
            for start in range(0, len(slots), size):
                run = slots[start:start + size]
                pieces.append(Piece(unit, [s for s, _ in run], [k for _, k in run],
                                    _cost([units[unit].requests[s] for s, _ in run])))
        return pieces

    @staticmethod
    def _segments(units: Sequence[Unit], pieces: list[Piece], workers: Sequence[Hashable]) -> Segments:
        """The pieces shared out among ``workers``, cut where consecutive pieces share the least."""
        joins = [0.0] + [_shared(units[a.unit].requests[a.slots[-1]], units[b.unit].requests[b.slots[0]])
                         for a, b in itertools.pairwise(pieces)]
        return Segments([p.cost for p in pieces], joins, workers)

    # -- 3. answers -----------------------------------------------------------------------------------
    def _answered(self, units: Sequence[Unit], pending: list[_Pending], waiting: dict[str, list[tuple[int, int]]],
                  piece: Piece, reply: Reply) -> Iterator[tuple[int, Sequence[Answer]]]:
        """Store a piece's answers (in the cache, when it is on), fill every place each answers, and yield the
        units that are complete now."""
        driver = self.driver
        driver.moved(pending[piece.unit].moved, reply.moved)
        for slot, key, answer in zip(piece.slots, piece.keys, reply.answers, strict=True):
            if driver.cache is not None:
                answer = store(driver.cache, driver.identity, units[piece.unit].requests[slot], answer)
            for u, s in waiting[key]:
                self._fill(pending[u], s, answer)
                if not pending[u].missing:
                    yield self._done(units, pending, u)

    @staticmethod
    def _fill(p: _Pending, slot: int, answer: Answer) -> None:
        p.answers[slot] = answer
        p.missing -= 1

    def _done(self, units: Sequence[Unit], pending: list[_Pending], i: int) -> tuple[int, Sequence[Answer]]:
        """Unit ``i``'s answers, charging its lane the time since the last unit and what its pieces moved."""
        now = time.perf_counter()
        if self.costs is not None:
            self.costs[units[i].lane].charge(now - self._clock, pending[i].moved)
        self._clock = now
        return i, pending[i].answers  # type: ignore[return-value]

    def _ship(self, units: Sequence[Unit], pending: list[_Pending], waiting: dict[str, list[tuple[int, int]]],
              pieces: list[Piece]) -> Iterator[tuple[int, Sequence[Answer]]]:
        """Answer every piece on the actors, each reply through :meth:`_answered`; yields the units it completes."""
        ray, group = self.ray, self.group
        group.start()
        segments = self._segments(units, pieces, [id(a) for a in group.live()])
        flight: dict[Any, tuple[Actor, int]] = {}
        answered = 0
        stalled = time.monotonic()

        def feed(actor: Actor) -> None:
            while (queued := sum(1 for a, _ in flight.values() if a is actor)) < IN_FLIGHT:
                k = segments.take(id(actor), steal=not queued)  # steal only when it has run out
                if k is None:
                    return
                piece = pieces[k]
                flight[actor.handle.answer.remote([units[piece.unit].requests[s] for s in piece.slots])] = (actor, k)

        for actor in group.live():
            feed(actor)
        while answered < len(pieces):
            ready, _ = ray.wait([*flight, *group.starting()], num_returns=1, timeout=10.0)
            if not ready:
                if not group.live() and time.monotonic() - stalled > STALL_SECONDS:
                    raise BackendError(f"no Ray actor has been alive for {STALL_SECONDS:.0f} s: the cluster has no "
                                       f"room for an actor of {group.needs()}")
                continue
            ref = ready[0]
            if ref not in flight:  # an actor said hello
                hello = group.said_hello(ref)
                if hello is not None:
                    stalled = time.monotonic()
                    feed(hello)
                continue
            actor, k = flight.pop(ref)
            try:
                reply = ray.get(ref)
            except ray.exceptions.RayActorError as exc:
                lost = [k, *(q for a, q in flight.values() if a is actor)]
                for r in [r for r, (a, _) in flight.items() if a is actor]:
                    del flight[r]
                segments.give_back(lost)
                segments.forget(id(actor))
                group.died(actor, exc, len(lost))
                for other in group.live():
                    feed(other)
                continue
            except ray.exceptions.RayTaskError as exc:  # the actor raised: a defect, not a fault to retry
                raise BackendError(f"a Ray actor failed to answer ({actor.where()}): {exc}") from None
            stalled = time.monotonic()
            answered += 1
            piece = pieces[k]
            group.count_work(actor, len({units[piece.unit].feeds[s].item for s in piece.slots}))
            yield from self._answered(units, pending, waiting, piece, reply)
            feed(actor)


def common_prefix(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    lo, hi = 0, n  # the longest shared prefix is in [lo, hi]: halve it, comparing slices (C speed)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _cost(requests: Sequence[Request]) -> float:
    """What a run of requests costs to evaluate, about: its characters, less what each shares with the one
    before (a backend that reuses its KV cache evaluates that once)."""
    total, prev = 0.0, ""
    for r in requests:
        text = r.prompt.text + r.continuation
        total += len(text) - common_prefix(prev, text)
        prev = text
    return total + len(requests)


def _shared(a: Request, b: Request) -> float:
    """Characters two consecutive requests share at their start (what a cut between them loses)."""
    return float(common_prefix(a.prompt.text, b.prompt.text))
