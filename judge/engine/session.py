"""A run's life, written once: every command that judges (``judge score``, ``bench``, ``run`` with its
``[[compare]]`` cells, ``compare``, ``serve``) goes through a :class:`Session`.

A run is given as the entries it will judge (:class:`judge.engine.cost.Entry`: a prepared method and the items
or pairs it has left), grouped as the run schedules them, and typed :class:`RunOptions` that say how, not what:
where the model work runs (here, or on a Ray cluster's actors: :class:`RayOptions`), whether a progress bar
shows, where messages go. The sequence is the same for every command:

1. ``--check``: the cost table of the entries, then the money table of their hosted cells (:meth:`check`);
   nothing is loaded or sent.
2. :meth:`plan` (once, or a chunk at a time for a streamed file): the cost cap (``--max-cost``) refuses a run
   estimated above it, the provider batch (``--batch``, as the backend's options say) collects the requests the
   cache lacks, and what Ray cannot do is refused, all before anything is written.
3. :meth:`open`: the backends' pool (loaded here, or on the cluster's actors), and the batches sent through it.
4. :meth:`rows`: a prepared method built on that pool, its rows handed to the entry's sink in order.
5. :meth:`close` (or the end of a ``with`` block): what the session opened is closed; :meth:`counters` still
   says what the run used.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, TypeVar

from tqdm import tqdm

from ..backends.base import Prompt
from ..core.errors import InputError
from ..core.settings import setting
from ..data.items import Item
from ..data.pairs import Pair
from ..records.pair_rows import PairRow
from ..records.rows import Row
from ..scorers.base import Scorer
from .batch import BatchPlan
from .build import POOLS, BackendPool, build
from .compare import compare_rows
from .cost import Entry, calibrate, cost_lines, estimate
from .hosted_cost import Budget, count_hosted, money_lines
from .ray_options import RayOptions
from .run import run_rows
from .spec import Prepared

__all__ = ["RunOptions", "Session", "Sink"]

#: What a run writes: a :class:`Row` per item, or a :class:`PairRow` per pair for a method that compares.
Written = TypeVar("Written", bound=Row | PairRow)
#: Where a run's rows go (a file, a table, a list), each as soon as it and every earlier one are done.
Sink = Callable[[Written], object]


def _stderr(msg: str) -> None:
    tqdm.write(msg, file=sys.stderr)  # above a progress bar, when one shows


@dataclass(frozen=True)
class RunOptions:
    """How a run's work is done, whatever it judges: ``ray`` (None: here) says where the model work runs,
    ``progress`` whether a bar shows on a terminal, ``log`` where the run's messages go. The cache and the
    provider batch are the method's own settings (``generate.cache``, the backend's options; batches are
    recorded in ``batches/`` beside the cache)."""

    ray: RayOptions | None = None
    progress: bool = setting("no progress bar (rate, ETA) on stderr (it is shown only when stderr is a terminal)", True,
                             flag="--no-progress")
    log: Callable[[str], None] = field(default=_stderr, compare=False)


class Session:
    """One run, from its cost check to its counters (see the module's doc). Use as a context manager after
    :meth:`plan`: ``with Session(options).plan(groups) as run: run.rows(...)``."""

    def __init__(self, options: RunOptions | None = None) -> None:
        self.options = options or RunOptions()
        self._budget = Budget()
        self._batches = BatchPlan()
        self._backends: BackendPool | None = None

    def check(self, groups: Sequence[Sequence[Entry]], order: Sequence[Entry] | None = None,
              measure: Callable[..., Any] | None = None) -> list[str]:
        """``--check``: the cost table of ``groups`` (cells in the order of ``order``, default the groups'), then
        the money table of their hosted cells (:mod:`judge.engine.hosted_cost`). Nothing is loaded or sent."""
        return cost_lines(*estimate(groups, self.options.log, measure or calibrate, order)) + \
            money_lines(count_hosted(groups))

    def plan(self, groups: Sequence[Sequence[Entry]]) -> Session:
        """Count ``groups`` (the run's order) against the cost cap, refusing the run above it, and collect the
        requests their provider batches will answer; a batch on a Ray cluster is refused. Nothing is written:
        call it before the run's first file. Called once per chunk of a file streamed a chunk at a time."""
        capped = self._budget.add(groups)
        self._batches.collect(groups)
        if self.options.ray is not None and self._batches.pending:
            raise InputError("a run on a Ray cluster answers requests on its actors, not through a provider's batch: "
                             "drop --ray or the batch options", field="--batch")
        if self.options.ray is not None and capped:  # each actor's purse counts its own spend, never their sum
            raise InputError("a run on a Ray cluster spends on its actors, each apart: --max-cost cannot bound "
                             "their sum; drop --ray or --max-cost", field="--max-cost")
        return self

    def open(self) -> Session:
        """The backends' pool (here, or with ``ray`` on the cluster's actors, the cache and outputs kept here),
        and the collected batches sent through it (their usage is the run's)."""
        if self.options.ray is None:
            self._backends = BackendPool()
        else:  # the ray extra, imported only then
            self._backends = POOLS.get("ray")(self.options.ray, self.options.log)
        try:
            self._batches.send(self._backends, self.options.log)
        except BaseException:
            self.close()
            raise
        return self

    @property
    def backends(self) -> BackendPool:
        """The open pool the run's methods get their backends from."""
        if self._backends is None:
            raise RuntimeError("the session is not open")
        return self._backends

    def build(self, prep: Prepared) -> Scorer:
        """The scorer of ``prep`` on the session's backends (the model loads on first use)."""
        return build(prep, self.backends)

    def prompts(self, prep: Prepared, shown: Sequence[tuple[Item, Sequence[str]]], chat: bool) -> list[Prompt] | None:
        """The prompts ``prep`` sends for ``shown`` (each item with the ids of the examples its prompt showed), as
        :meth:`rows` would send them, with nothing loaded or sent: what ``judge view`` rebuilds beside a finished
        run's rows. None for a method that sends no prompt template (``MethodType.prompts``)."""
        return prep.spec.kind.prompts(prep, shown, chat)

    def rows(self, prep: Prepared, todo: Iterable[Item] | Sequence[Pair], *sinks: Sink[Written] | None,
             progress: Callable[[int], None] | None = None, quality: str | None, seed: int | None = None,
             judge: Scorer | None = None) -> int:
        """Build ``prep`` on the session's backends (or use ``judge``, built from it) and hand the row of each item
        (pair, for a method that compares) of ``todo`` to every one of ``sinks``, in order, as soon as it and
        every earlier one are done. Returns the number that failed."""
        judge = judge or self.build(prep)
        live = [s for s in sinks if s is not None]

        def write(row: Written) -> None:
            for sink in live:
                sink(row)

        if prep.spec.kind.compares:
            return compare_rows(judge, todo, prep.spec.name, quality, write, progress)  # type: ignore[arg-type]
        return run_rows(judge, todo, prep.spec.name, quality, write, progress, seed=seed)  # type: ignore[arg-type]

    def bar(self, total: int, desc: str, unit: str, initial: int = 0, leave: bool = False) -> Any:
        """The run's progress bar on stderr: a rate and the time left on a terminal, nothing elsewhere."""
        return tqdm(total=total, initial=initial, desc=desc, unit=unit, file=sys.stderr, leave=leave,
                    disable=None if self.options.progress else True, dynamic_ncols=True)

    def counters(self) -> dict[str, int]:
        """What the run used over every backend it held (cache hits and misses, API usage and cost)."""
        return self._backends.counters() if self._backends is not None else {}

    def close(self) -> None:
        """Close the backends (a closed pool still counts what they used)."""
        if self._backends is not None:
            self._backends.close()

    def __enter__(self) -> Session:
        return self.open()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
