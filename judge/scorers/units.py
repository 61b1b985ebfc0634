"""The unit of work: how the lanes of one backend become backend calls, and how their answers become scores.

Every method that runs a model states its work the same way (:class:`judge.scorers.base.Lane`): per item,
the requests its score needs (:class:`judge.backends.requests.Request`: a ``label`` read, a ``hidden``
state with it, the ``sequence`` log-probabilities of a reply) and how their answers make the score
(:class:`judge.scorers.base.ItemWork`). A *pass* is the lanes that share one backend (the methods whose
type declares one ``share_key``: ``judge run`` cells of one model and set, an ensemble's members of one
model; or one method alone). This module cuts a pass into units and runs them:

* :func:`plan` takes the pass's items a window at a time (``window`` distinct items, in order of first
  appearance over the lanes, so that a window holds the same items for every lane that scores them),
  asks each lane for its items' requests, sorts the window's requests by prompt when the backend reuses
  the previous prompt's KV prefix (``capabilities.prefix_reuse``: the prompts of one item, and the text
  shared by every item, run back to back; ties keep lane order), and cuts them into :class:`Unit` s:
  runs of consecutive requests of one lane, at most the lane's ``batch_size``. A :class:`Window` holds
  its units in that order, and per lane what each item's answers feed (``ItemWork``, kept here).
* An :class:`Executor` answers units. :class:`LocalExecutor` is one backend in this process, unit after
  unit, each a backend call (behind the SQLite cache when the method uses it), charging each unit's time
  and counters to its lane (:class:`LaneCost`).
* :func:`run_lanes` feeds each answer to the item it belongs to (``Unit.feeds``) and yields each lane's
  scores in its items' order as soon as they and every earlier one of the lane are done.

A unit is data only (a lane index, requests, and for each request the item position and slot it feeds),
so it pickles: the units of a window can be shipped to workers that each hold a backend built from the
same spec (:func:`judge.engine.build.backend_key` names which), answered there in any order, and their
answers fed back here, where the scores, the rows and the cache are written. Each unit keeps what a pass
shares: one backend, its requests in prefix order (consecutive units of a window continue one another's
prefixes, so a worker given a contiguous run of them reuses as this process does), and every request of
an item in one window. A request's cache key is :func:`judge.engine.cache.request_key` (backend identity and
request), so a driver can look every request up, and send only the misses, before anything runs.

What consumes this: :func:`judge.engine.run.run_rows` and :func:`judge.engine.run.run_rows_together`
(``judge score``, ``judge run`` cells, ``judge serve``), ensembles' members
(:func:`judge.methods.ensemble.score_members`), a lane scorer's own ``score`` (:func:`score_lane`),
and ``--check``'s replay (:mod:`judge.engine.cost`), which runs the same plan on a backend that counts tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from time import perf_counter
from typing import Any, Protocol
from weakref import WeakKeyDictionary

from ..backends.base import Backend
from ..backends.requests import Answer, Request, ask
from .base import Item, ItemWork, Keyed, Lane, Score


@dataclass(frozen=True)
class Feed:
    """Where one answer goes: the item at ``item`` (its position in the lane's items) and which of that
    item's requests it answers (``slot``)."""

    item: int
    slot: int


@dataclass(frozen=True)
class Unit:
    """One backend call's worth of work: requests of one lane (its index in the pass), in the order they
    are to be evaluated, and what each answer feeds. Data only: it pickles."""

    lane: int
    requests: tuple[Request, ...]
    feeds: tuple[Feed, ...]


@dataclass
class Window:
    """The units of one window of a pass, in evaluation order, and per lane the work of each of its items
    planned in this window (by position), which turns their answers into scores."""

    units: list[Unit]
    works: list[dict[int, ItemWork]]


@dataclass
class LaneCost:
    """What one lane's share of a pass cost: seconds in its planning (prompt building) and backend calls,
    and the backend's counters (cache hits, misses, tokens evaluated, ...) that moved during them."""

    seconds: float = 0.0
    counters: dict[str, int] = field(default_factory=dict)

    def add(self, seconds: float, before: Mapping[str, int], after: Mapping[str, int]) -> None:
        self.charge(seconds, {key: after[key] - before.get(key, 0) for key in after})

    def charge(self, seconds: float, moved: Mapping[str, int]) -> None:
        """Add ``seconds`` and what each counter moved (an executor that answered the work elsewhere and
        was told what it cost there)."""
        self.seconds += seconds
        for key, delta in moved.items():
            self.counters[key] = self.counters.get(key, 0) + delta


class _Meter:
    """Charges what a piece of work cost (time, counters moved) to a lane's :class:`LaneCost`."""

    def __init__(self, backend: Backend, costs: Sequence[LaneCost] | None) -> None:
        self.backend = backend
        self.costs = costs

    def start(self) -> tuple[float, dict[str, int]]:
        return perf_counter(), self.backend.counters() if self.costs is not None else {}

    def stop(self, lane: int, started: tuple[float, dict[str, int]]) -> None:
        if self.costs is not None:
            self.costs[lane].add(perf_counter() - started[0], started[1], self.backend.counters())


class Executor(Protocol):
    """Answers units. ``run`` yields (index into ``units``, the unit's answers in request order) as each
    unit is answered, in any order; every unit exactly once."""

    def run(self, units: Sequence[Unit]) -> Iterator[tuple[int, Sequence[Answer]]]: ...

    def breadth(self) -> int:
        """How many workers answer its units at once (default 1): a pass plans windows this many times the
        lanes' own, so that each worker gets a share of every window and few wait at a window's end."""
        return 1


class LocalExecutor(Executor):
    """The units answered in this process by ``backend``, one backend call each, in order. ``costs`` (one
    per lane) receive each unit's time and the counters it moved."""

    def __init__(self, backend: Backend, costs: Sequence[LaneCost] | None = None) -> None:
        self.backend = backend
        self._meter = _Meter(backend, costs)

    def run(self, units: Sequence[Unit]) -> Iterator[tuple[int, Sequence[Answer]]]:
        for i, unit in enumerate(units):
            started = self._meter.start()
            answers = ask(self.backend, unit.requests)
            self._meter.stop(unit.lane, started)
            yield i, answers


#: ``executor(backend, costs)`` of each backend whose model runs elsewhere (:func:`answer_elsewhere`).
ExecutorFactory = Callable[[Any, Sequence[LaneCost] | None], Executor]
_ELSEWHERE: WeakKeyDictionary[Backend, ExecutorFactory] = WeakKeyDictionary()


def answer_elsewhere(backend: Backend, executor: ExecutorFactory) -> None:
    """Have ``executor(backend, costs)`` answer the units of every pass on ``backend``: the layer of a backend
    whose model runs elsewhere (a Ray cluster's driver, :mod:`judge.distributed`) registers the executor that
    ships units there and charges what they cost. The backend contract knows nothing of it."""
    _ELSEWHERE[backend] = executor


def executor_for(backend: Backend, costs: Sequence[LaneCost] | None = None) -> Executor:
    """What answers the units of a pass on ``backend``: the executor registered for it (:func:`answer_elsewhere`),
    else this process (:class:`LocalExecutor`)."""
    make = _ELSEWHERE.get(backend)
    return make(backend, costs) if make is not None else LocalExecutor(backend, costs)


def pass_backend(lanes: Sequence[Lane[Any]]) -> Backend:
    """The one backend the lanes of a pass share (ValueError when they do not)."""
    backend = lanes[0].backend
    if any(lane.backend is not backend for lane in lanes):
        raise ValueError("lanes scheduled together must share one backend")
    return backend


def _windows(items: Sequence[Iterable[Keyed]], size: int) -> Iterator[list[list[tuple[int, Keyed]]]]:
    """Per window, per lane, the (position, item) pairs it takes. One lane streams its items ``size`` at a
    time; several take ``size`` distinct ids at a time, in order of first appearance over the lanes (lane
    after lane), so each window holds the same items for every lane that scores them."""
    if len(items) == 1:
        it, pos = iter(items[0]), 0
        while chunk := list(islice(it, size)):
            yield [list(enumerate(chunk, pos))]
            pos += len(chunk)
        return
    lists = [list(its) for its in items]
    rank: dict[str, int] = {}
    for its in lists:
        for item in its:
            rank.setdefault(item.id, len(rank))
    at = [0] * len(lists)  # next position of each lane to take into a window
    for start in range(0, len(rank), size):
        end = start + size
        taken = []
        for lane, its in enumerate(lists):
            first = at[lane]
            while at[lane] < len(its) and rank[its[at[lane]].id] < end:
                at[lane] += 1
            taken.append(list(enumerate(its[first:at[lane]], first)))
        yield taken


def plan(lanes: Sequence[Lane[Any]], items: Sequence[Iterable[Keyed]], *, window: int | None = None,
         costs: Sequence[LaneCost] | None = None) -> Iterator[Window]:
    """The pass of ``lanes`` (one backend) over ``items[i]`` for lane i, as windows of units (see the module
    docstring). ``window``: distinct items per window (default: the smallest of the lanes'). Planning is
    lazy: a window's requests are built when it is reached, so memory is bounded by the window. ``costs``
    (one per lane) receive the time each lane spends building its items' requests."""
    if len(lanes) != len(items):
        raise ValueError(f"{len(lanes)} lanes for {len(items)} item lists")
    if not lanes:
        return
    backend = pass_backend(lanes)
    meter = _Meter(backend, costs)
    calls = [list(its) if lane.needs_items() else its for lane, its in zip(lanes, items, strict=True)]
    planners = [lane.plan(its if lane.needs_items() else None)  # type: ignore[arg-type]
                for lane, its in zip(lanes, calls, strict=True)]
    size = max(1, window or min(lane.window for lane in lanes))
    reuse = backend.capabilities.prefix_reuse
    for taken in _windows(calls, size):
        works: list[dict[int, ItemWork]] = [{} for _ in lanes]
        jobs: list[tuple[Request, int, Feed]] = []
        for lane, pairs in enumerate(taken):
            started = meter.start()
            for pos, item in pairs:
                work = planners[lane](item)
                works[lane][pos] = work
                jobs.extend((request, lane, Feed(pos, slot)) for slot, request in enumerate(work.requests))
            meter.stop(lane, started)
        if reuse:
            # Requests sharing a prefix run back to back; ties (one prompt, several lanes) keep lane order.
            jobs.sort(key=lambda job: (*job[0].order(), job[1]))
        yield Window(_units(jobs, [lane.batch_size for lane in lanes]), works)


def _units(jobs: Sequence[tuple[Request, int, Feed]], batch_sizes: Sequence[int]) -> list[Unit]:
    """Runs of consecutive requests of one lane, each at most that lane's batch size."""
    units = []
    k = 0
    while k < len(jobs):
        lane = jobs[k][1]
        end = k + 1
        while end < len(jobs) and end - k < batch_sizes[lane] and jobs[end][1] == lane:
            end += 1
        run = jobs[k:end]
        units.append(Unit(lane, tuple(job[0] for job in run), tuple(job[2] for job in run)))
        k = end
    return units


def run_lanes(lanes: Sequence[Lane[Any]], items: Sequence[Iterable[Keyed]], *, executor: Executor | None = None,
              costs: Sequence[LaneCost] | None = None, window: int | None = None) -> Iterator[tuple[int, Score]]:
    """Score ``items[i]`` with ``lanes[i]`` for every i in one pass; yields ``(i, score)``.

    Each lane's scores come in its own items' order, as soon as they and every earlier one of that lane
    are done (scores of different lanes interleave). ``executor`` answers the units (default: the one the
    lanes' backend has registered, else that backend in this process: :func:`executor_for`), on windows of the
    lanes' ``window`` items times its ``breadth()`` unless ``window`` is given; ``costs`` (one per lane)
    receive the time and counters of that lane's share. Each lane gets exactly what it gets alone: the same requests, backend
    calls holding requests of that lane only (so cache keys and per-lane counters are its own), and its
    scores in its own order."""
    if not lanes:
        return
    executor = executor or executor_for(pass_backend(lanes), costs)
    window = window or min(lane.window for lane in lanes) * executor.breadth()
    done: list[dict[int, Score]] = [{} for _ in lanes]
    nxt = [0] * len(lanes)
    for win in plan(lanes, items, window=window, costs=costs):
        answers: list[dict[int, list[Answer | None]]] = [
            {pos: [None] * len(work.requests) for pos, work in lane_works.items()} for lane_works in win.works]
        left = [{pos: len(work.requests) for pos, work in lane_works.items()} for lane_works in win.works]
        for lane, lane_works in enumerate(win.works):
            for pos, work in lane_works.items():
                if not work.requests:  # an item that needs no answer is scored at once
                    done[lane][pos] = work.finish(())
        yield from _ready(done, nxt)
        answered: set[int] = set()
        for index, unit_answers in executor.run(win.units):
            if index in answered:
                raise RuntimeError(f"the executor answered unit {index} of a window twice")
            answered.add(index)
            unit = win.units[index]
            lane = unit.lane
            for feed, answer in zip(unit.feeds, unit_answers, strict=True):
                answers[lane][feed.item][feed.slot] = answer
                left[lane][feed.item] -= 1
                if not left[lane][feed.item]:
                    work = win.works[lane][feed.item]
                    done[lane][feed.item] = work.finish(answers[lane].pop(feed.item))  # type: ignore[arg-type]
            yield from _ready(done, nxt, lane)
        if len(answered) != len(win.units):  # no item is ever dropped: a lost unit stops the pass
            raise RuntimeError(f"the executor answered {len(answered)} of a window's {len(win.units)} units")


def _ready(done: list[dict[int, Score]], nxt: list[int], lane: int | None = None) -> Iterator[tuple[int, Score]]:
    """The scores of ``lane`` (every lane: None) that are next in their lane's order, in order."""
    for i in range(len(done)) if lane is None else (lane,):
        while nxt[i] in done[i]:
            yield i, done[i].pop(nxt[i])
            nxt[i] += 1


def score_lane(lane: Lane[Item], items: Iterable[Item]) -> Iterator[Score]:
    """A lane's scores of ``items``, in order, answered by its own backend in this process (or where the layer
    around it has its units answered, :func:`answer_elsewhere`): what a lane scorer's ``score`` is."""
    for _, score in run_lanes([lane], [items]):
        yield score
