"""Running a scorer over items: rows in input order, streamed to whatever writes them.

``judge score`` streams these rows into one file; ``judge run`` (and ``judge bench``, a one-cell run)
appends them to its cell files, one fsynced line per item; ``judge serve`` returns them over HTTP.
Results that finish out of order inside a backend window (prompts sorted for prefix reuse) are
already in the SQLite cache when they finish, so a killed run loses at most the prompts in flight.
Several methods of one model on the same items run in one pass (:func:`run_rows_together`), their
requests ordered by prefix across methods (:mod:`judge.scorers.units`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence

from ..data.items import Item
from ..records.rows import Row, item_row
from ..scorers.base import Lane, Scorer
from ..scorers.units import Executor, LaneCost, run_lanes


def score_rows(
    scorer: Scorer, items: Iterable[Item], method: str, quality: str | None, seed: int | None = None
) -> Iterator[Row]:
    """One row per item, in ``items`` order (failed items included, with their ``error``). ``items`` may be
    an iterator: it is read as the scorer reads it (a lane a window at a time), and only the items read
    and not yet scored are held here."""
    pending: deque[Item] = deque()

    def read(its: Iterable[Item]) -> Iterator[Item]:
        for item in its:
            pending.append(item)
            yield item

    for score in scorer.score(read(items)):
        item = pending.popleft()
        if score.item_id != item.id:
            raise RuntimeError(f"scorer returned item {score.item_id!r} where {item.id!r} was expected")
        yield item_row(item, score, method, quality, seed)
    if pending:
        raise RuntimeError(f"scorer returned no score for item {pending[0].id!r}")


def run_rows(
    scorer: Scorer,
    items: Iterable[Item],
    method: str,
    quality: str | None,
    write: Callable[[Row], None],
    progress: Callable[[int], None] | None = None,
    seed: int | None = None,
) -> int:
    """Score ``items`` and hand each row to ``write`` as soon as it and every earlier row are done.
    Returns the number of failed items."""
    failed = 0
    for row in score_rows(scorer, items, method, quality, seed):
        write(row)
        failed += row.error is not None
        if progress is not None:
            progress(1)
    return failed


def run_rows_together(
    lanes: Sequence[Lane],
    items: Sequence[Sequence[Item]],
    methods: Sequence[str],
    qualities: Sequence[str | None],
    writes: Sequence[Callable[[Row], None]],
    progress: Callable[[int], None] | None = None,
    seeds: Sequence[int | None] | None = None,
    costs: Sequence[LaneCost] | None = None,
    executor: Executor | None = None,
) -> int:
    """:func:`run_rows` for several lanes of one backend (scorers whose type shares a pass) in one
    prefix-ordered pass (:func:`judge.scorers.units.run_lanes`): lane i's rows go to ``writes[i]`` in
    ``items[i]`` order, the same rows it writes alone. Returns the number of failed items."""
    seeds = seeds if seeds is not None else [None] * len(lanes)
    taken = [0] * len(lanes)
    failed = 0
    for lane, score in run_lanes(lanes, items, costs=costs, executor=executor):
        item = items[lane][taken[lane]]
        taken[lane] += 1
        if score.item_id != item.id:
            raise RuntimeError(f"scorer returned item {score.item_id!r} where {item.id!r} was expected")
        row = item_row(item, score, methods[lane], qualities[lane], seeds[lane])
        writes[lane](row)
        failed += row.error is not None
        if progress is not None:
            progress(1)
    return failed
