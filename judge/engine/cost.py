"""What a run will cost before it starts: prompt tokens after prefix reuse, and the wall time they take here.

The count is not modelled, it is replayed: the run's own scorers (:func:`judge.engine.build`) run their own
items in the run's own order (:func:`run_rows`, :func:`run_rows_together`: the same lanes, windows and
units), behind the run's own cache keys, on the backend's declared replay (``Backend.cost = "replay"``,
its replay, :data:`judge.backends.registry.REPLAYS`: for llama.cpp the backend with the forward pass taken out,
:mod:`judge.backends.llamacpp_replay`). It reads the model's vocabulary only, tokenizes every prompt exactly
as the backend does (chat template, BOS, a prompt's declared splits) and keeps the backend's own KV
bookkeeping (which batches a prompt keeps from the one before), so its count of tokens evaluated is what the
run evaluates. Answers already in the SQLite cache are served from it and cost nothing; answers the replay
"computes" are remembered in memory only (:class:`DryCache`), so a later cell or ensemble member that the
run would serve from the cache is counted as cached here too. Nothing is written: no cache entry, no result
file.

The replay counts the decodes as well (one per batch), since each has a fixed cost whatever it holds;
tokens and decodes become a time through the rate this machine measured for the model (:mod:`judge.accounting.rates`):
a short calibration through the real backend on first use (``Timed.calibrate``), refined by every real
run. Which methods are counted is decided by what their backend declares (``Backend.cost``), never by its name.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from ..accounting.rates import Rate, Timed, UnreadableRates, rate_key, read_rates, write_rate
from ..backends import Backend, create_backend
from ..backends.registry import backend_cost, replay_backend
from ..core.config import default_cache_path
from ..core.errors import BackendError
from ..data.items import Item
from ..data.pairs import Pair
from ..records.pair_rows import PairRow
from ..records.rows import Row
from ..scorers.units import Lane, LaneCost
from .build import BackendPool, Prepared, backend_key, build
from .cache import Cache, CachedBackend, select
from .compare import compare_rows
from .run import run_rows, run_rows_together
from .spec import MethodSpec


class DryCache(Cache):
    """The SQLite cache read-only, with what the replay computed kept in memory: a hit is an answer the run
    finds in the cache, whether it was there before or an earlier cell of the run put it there."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path).expanduser() if path else default_cache_path()
        self._lock = threading.Lock()
        #: What the replay computed, by table and key, as the cache would hold it.
        self._kept: dict[str, dict[str, str]] = {}
        self._ro: sqlite3.Connection | None = None
        if self.path.exists():
            self._ro = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)

    def read(self, table: str, keys: Sequence[str]) -> dict[str, str]:
        kept = self._kept.get(table, {})
        out = {k: kept[k] for k in keys if k in kept}
        if self._ro is None:
            return out
        try:
            with self._lock:
                out.update(select(self._ro, table, (k for k in keys if k not in out)))
        except sqlite3.OperationalError:  # an older file without this table: nothing cached in it
            pass
        return out

    def write(self, table: str, key: str, backend: str, model: str, value: str) -> None:
        self._kept.setdefault(table, {})[key] = value

    def __len__(self) -> int:
        return len(self._kept.get("dists", {}))

    def close(self) -> None:
        if self._ro is not None:
            self._ro.close()


def estimable(spec: MethodSpec) -> str:
    """How a method's cost is known: ``counted`` (its backend declares a replay: tokens and decodes
    counted exactly), ``free`` (a backend with no model: nothing to time), ``hosted`` (an API's speed is not
    this machine's), ``unknown`` (a backend that declares no way to count), ``none`` (no model: classic
    scorers), ``ensemble`` (members that cannot all be counted). Read from what the method type and the
    backend declare (``MethodType.cost``, ``Backend.cost``).

    An ensemble whose members all run on one counted model is replayed like any other cell: it scores its
    members itself (on its training sets too, for ``lodo``), and the replay's cache turns the answers that
    member cells of the same run computed first into hits, so nothing is counted twice. Members on several
    models or backends are not counted in the ensemble's cell (``ensemble``): one rate cannot time them."""
    members = spec.kind.members(spec)
    if members:
        one_model = len({backend_key(m) for m in members}) == 1
        return "counted" if one_model and all(estimable(m) == "counted" for m in members) else "ensemble"
    if spec.kind.cost is not None:
        return spec.kind.cost
    how = backend_cost(spec.backend)
    return "counted" if how == "replay" else how


class CostPool(BackendPool):
    """:class:`BackendPool` that hands out the backends' replays (behind a :class:`DryCache` where the method
    uses the cache), switching them where the run switches models. Remembers, per backend key, the
    replay's rate identity and the model it names, for the rate lookup."""

    def __init__(self) -> None:
        super().__init__()
        self.identities: dict[str, dict[str, object]] = {}
        self.labels: dict[str, tuple[str, object]] = {}

    def create(self, spec: MethodSpec, settled: Mapping[str, str] | None = None) -> Backend:
        counter = replay_backend(spec.backend, spec.model, spec.generate, **dict(spec.options))
        timed = backend_cost(spec.backend) == "replay"  # a replay is timed at its backend's rate (Timed)
        identity = self.identities[backend_key(spec)] = cast(Timed, counter).rate_identity() if timed else {}
        self.labels[backend_key(spec)] = (counter.model_id, identity.get("threads", "?"))
        return CachedBackend(counter, DryCache(spec.generate.cache_path)) if spec.generate.cache else counter


@dataclass
class CellCost:
    """One cell's share of a run: ``items`` to score, ``cached`` of them needing no model (saved rows,
    answers in the cache), the prompt ``tokens`` evaluated after reuse (None: not known, see ``how``), the
    llama.cpp ``decodes`` they take, and the tokens of rationales ``generated`` (a method that reasons
    first: at most its budget per item, counted whole)."""

    label: str
    spec: MethodSpec
    items: int
    cached: int
    tokens: int | None
    how: str
    decodes: int = 0
    note: str = ""
    generated: int = 0


@dataclass
class Entry:
    """A cell to replay: its label, prepared method, items left to score (pairs, for a method that compares)
    and items already saved."""

    label: str
    prep: Prepared
    todo: Sequence[Item] | Sequence[Pair]
    done: int = 0
    counters: dict[str, int] = field(default_factory=dict)


def _ignore(row: Row | PairRow) -> None:
    pass


def _cached(entry: Entry) -> int:
    """Saved rows plus the items whose answers come from the cache (requests turned into items where a
    method sends several per item)."""
    hits, misses = entry.counters.get("cache_hits", 0), entry.counters.get("cache_misses", 0)
    n = len(entry.todo)
    served = hits if hits + misses == n else round(n * hits / (hits + misses)) if hits + misses else 0
    return entry.done + served


def count_groups(groups: Sequence[Sequence[Entry]], pool: CostPool | None = None,
                 order: Sequence[Entry] | None = None) -> list[CellCost]:
    """Replay ``groups`` (the run's order: a group of several LLM cells of one backend and set is scored
    in one prefix-scheduled pass, as :func:`judge.harness.runner.schedule_groups` makes them) and return
    each cell's cost, in the order of ``order`` (default: as the groups give them)."""
    pool = pool or CostPool()
    out: dict[int, CellCost] = {}
    try:
        for group in groups:
            how = estimable(group[0].prep.spec)
            if how != "counted":
                for e in group:
                    tokens = 0 if how == "none" else None
                    out[id(e)] = CellCost(e.label, e.prep.spec, e.done + len(e.todo), e.done, tokens, how)
                continue
            try:
                replay_group(group, pool)
            except BackendError as exc:  # a model not installed yet: the run itself stops on it, saying so
                pool.close()
                for e in group:
                    out[id(e)] = CellCost(e.label, e.prep.spec, e.done + len(e.todo), e.done, None, "missing",
                                          note=str(exc))
                continue
            for e in group:
                out[id(e)] = CellCost(e.label, e.prep.spec, e.done + len(e.todo), _cached(e),
                                      e.counters.get("tokens_evaluated", 0), how, e.counters.get("decodes", 0),
                                      generated=e.counters.get("tokens_generated", 0))
    finally:
        pool.close()
    return [out[id(e)] for e in (order if order is not None else [e for g in groups for e in g])]


def replay_group(group: Sequence[Entry], pool: BackendPool) -> None:
    """Score the group's items as the run does, on the pool's backends (a replay's counters, or the batch
    pre-pass's recorders: :mod:`judge.engine.batch`); each entry gets the counters that moved for it."""
    live = [e for e in group if e.todo]
    if len(live) > 1:
        lanes: list[Lane] = []
        for e in live:
            lane = build(e.prep, pool).lane()
            if lane is None:
                raise TypeError(f"{e.prep.spec.type} methods declare a share key, but {e.label} states no lane of work")
            lanes.append(lane)
        costs = [LaneCost() for _ in live]
        run_rows_together(lanes, [e.todo for e in live], [e.label for e in live], [None] * len(live),  # type: ignore[misc]
                          [_ignore] * len(live), costs=costs)
        for e, cost in zip(live, costs, strict=True):
            e.counters = cost.counters
    elif live:
        e = live[0]
        before = pool.counters()
        if e.prep.spec.kind.compares:
            compare_rows(build(e.prep, pool), e.todo, e.label, None, _ignore)  # type: ignore[arg-type]
        else:
            run_rows(build(e.prep, pool), e.todo, e.label, None, _ignore)  # type: ignore[arg-type]
        after = pool.counters()
        e.counters = {k: after[k] - before.get(k, 0) for k in after}


#: Times each calibration text is evaluated; the fastest counts.
CALIBRATION_REPEATS = 3


def calibrate(spec: MethodSpec, repeats: int = CALIBRATION_REPEATS) -> Rate:
    """Measure the rate of the method's model here: the real backend, loaded with the method's settings,
    measures itself (:class:`judge.accounting.rates.Timed`: what a backend of ``cost = "replay"`` is)."""
    backend = create_backend(spec.backend, spec.model, spec.generate, **dict(spec.options))
    try:
        return cast(Timed, backend).calibrate(repeats)
    finally:
        backend.close()


def rates_for(pool: CostPool, specs: dict[str, MethodSpec], log: Callable[[str], None],
              measure: Callable[[MethodSpec], Rate] = calibrate) -> dict[str, Rate]:
    """The rate of each backend key in ``specs`` (a method spec per key), from the rate file, measured
    (``measure``) and recorded where the file has none for that model and settings. An unreadable rate
    file is reported through ``log`` and measured again."""
    try:
        known = read_rates()
    except UnreadableRates as exc:
        log(f"note: {exc}; measuring the rates again")
        known = {}
    out: dict[str, Rate] = {}
    for key, spec in specs.items():
        rkey = rate_key(pool.identities[key])
        if rkey not in known:
            model, threads = pool.labels[key]
            log(f"note: no rate measured for {model} ({threads} threads) on this machine: calibrating")
            known[rkey] = measure(spec)
            write_rate(rkey, known[rkey])
        out[key] = known[rkey]
    return out


def counted_spec(spec: MethodSpec) -> MethodSpec:
    """The spec whose model evaluates a cell's counted tokens: an ensemble's first member (``estimable``
    counts an ensemble only when all its members share one model and backend), else the spec itself."""
    members = spec.kind.members(spec)
    return members[0] if members else spec


def duration(seconds: float) -> str:
    """A wall time as a person reads it: ``<1 s``, ``40 s``, ``12 min``, ``4.9 h``."""
    if 0 < seconds < 0.5:
        return "<1 s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def timed(cell: CellCost, rates: dict[str, Rate]) -> float:
    """A counted cell's model time: its tokens, decodes and generated tokens at the rate of the model that
    evaluates them (``rates`` by backend key); 0 for a cell with nothing counted."""
    if cell.how != "counted" or not cell.tokens:
        return 0.0
    return rates[backend_key(counted_spec(cell.spec))].time(cell.tokens, cell.decodes, cell.generated)


def cost_lines(cells: Sequence[CellCost], rates: dict[str, Rate]) -> list[str]:
    """The table ``--check`` prints: one line per cell, then the total (``rates`` by backend key). Where a
    cell generates rationales, their tokens are counted beside the prompt tokens (``+ N generated``) and
    timed at the rate of a generated token."""
    what = {"free": "? (no model)", "hosted": "n/a (hosted API)", "unknown": "n/a (backend not counted)",
            "ensemble": "n/a (mixed members)", "none": "0 (no model)", "missing": "n/a (model not installed)"}
    width = max([len(c.label) for c in cells] + [4])
    lines = [f"{'cell':<{width}}  {'items':>6}  {'cached':>6}  {'prompt tokens (after reuse)':>27}  est. time"]
    used: dict[str, Rate] = {}
    total_s = 0.0
    unknown = False
    for c in cells:
        if c.how == "counted" and c.tokens == 0:
            tokens, est = "0", "0 s"
        elif c.tokens is not None and c.how == "counted":
            key = backend_key(counted_spec(c.spec))
            used[key] = rates[key]
            total_s += timed(c, rates)
            tokens, est = f"{c.tokens:,}", duration(timed(c, rates))
            if c.generated:
                tokens += f" + {c.generated:,} generated"
        else:
            tokens = what[c.how]
            est = "0 s" if c.how in ("free", "none") else "n/a"
            unknown |= c.how in ("hosted", "unknown", "missing", "ensemble")
        lines.append(f"{c.label:<{width}}  {c.items:>6,}  {c.cached:>6,}  {tokens:>27}  {est}")
    items = sum(c.items for c in cells)
    tokens_total = sum(c.tokens or 0 for c in cells if c.how == "counted")
    generated = sum(c.generated for c in cells if c.how == "counted")
    line = f"total: {items:,} items, {tokens_total:,} prompt tokens"
    if generated:
        line += f" + {generated:,} generated (at most: every rationale counted at its whole budget)"
    if used and total_s > 0:
        at = "; ".join(r.describe(generating=bool(generated)) for r in used.values())
        speed = "" if generated else f", {tokens_total / total_s:,.0f} tokens/s"
        line += f", about {duration(total_s)}{speed} at {at}"
    if unknown:
        line += " (cells marked n/a not included)"
    lines.append(line)
    lines += [f"note: {n}" for n in dict.fromkeys(c.note for c in cells if c.note)]
    return lines


def estimate(groups: Sequence[Sequence[Entry]], log: Callable[[str], None],
             measure: Callable[[MethodSpec], Rate] = calibrate,
             order: Sequence[Entry] | None = None) -> tuple[list[CellCost], dict[str, Rate]]:
    """Count ``groups`` and find (or measure) the rates of the models they use: each cell's cost (cells in
    the order of ``order``, default the groups') and the rates by backend key. Benchmarks read these
    numbers; ``--check`` prints them with :func:`cost_lines`."""
    pool = CostPool()
    start = time.perf_counter()
    cells = count_groups(groups, pool, order)
    log(f"judge: counted the prompt tokens of {len(cells)} cells in {time.perf_counter() - start:.1f} s")
    counted = [counted_spec(c.spec) for c in cells if c.how == "counted" and c.tokens]
    specs = {backend_key(spec): spec for spec in counted}
    return cells, rates_for(pool, specs, log, measure)
