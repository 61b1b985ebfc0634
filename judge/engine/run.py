"""Running a scorer over items: rows in input order, streamed to whatever writes them.

``judge score`` streams these rows into one file; ``judge run`` (and ``judge bench``, a one-cell run)
appends them to its cell files, one fsynced line per item; ``judge serve`` returns them over HTTP.
Results that finish out of order inside a backend window (prompts sorted for prefix reuse) are
already in the SQLite cache when they finish, so a killed run loses at most the prompts in flight.
Several LLM methods of one model on the same items run in one pass (:func:`run_rows_together`), their
prompts ordered by prefix across methods (:mod:`judge.engine.schedule`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..items import Item
from ..scorers.base import Scorer
from ..scorers.llm import LLMJudge
from .rows import item_row
from .schedule import LaneCost, score_together


def score_rows(
    scorer: Scorer, items: Sequence[Item], method: str, quality: str | None, seed: int | None = None
) -> Iterator[dict[str, Any]]:
    """One row per item, in ``items`` order (failed items included, with their ``error``)."""
    for item, score in zip(items, scorer.score(items), strict=True):
        if score.item_id != item.id:
            raise RuntimeError(f"scorer returned item {score.item_id!r} where {item.id!r} was expected")
        yield item_row(item, score, method, quality, seed)


def run_rows(
    scorer: Scorer,
    items: Sequence[Item],
    method: str,
    quality: str | None,
    write: Callable[[dict[str, Any]], None],
    progress: Callable[[int], None] | None = None,
    seed: int | None = None,
) -> int:
    """Score ``items`` and hand each row to ``write`` as soon as it and every earlier row are done.
    Returns the number of failed items."""
    failed = 0
    for row in score_rows(scorer, items, method, quality, seed):
        write(row)
        failed += row["error"] is not None
        if progress is not None:
            progress(1)
    return failed


def run_rows_together(
    judges: Sequence[LLMJudge],
    items: Sequence[Sequence[Item]],
    methods: Sequence[str],
    qualities: Sequence[str | None],
    writes: Sequence[Callable[[dict[str, Any]], None]],
    progress: Callable[[int], None] | None = None,
    seeds: Sequence[int | None] | None = None,
    costs: Sequence[LaneCost] | None = None,
) -> int:
    """:func:`run_rows` for several LLM methods of one backend in one prefix-scheduled pass
    (:func:`judge.engine.schedule.score_together`): method i's rows go to ``writes[i]`` in
    ``items[i]`` order, the same rows it writes alone. Returns the number of failed items."""
    seeds = seeds if seeds is not None else [None] * len(judges)
    taken = [0] * len(judges)
    failed = 0
    for lane, score in score_together(judges, items, costs=costs):
        item = items[lane][taken[lane]]
        taken[lane] += 1
        if score.item_id != item.id:
            raise RuntimeError(f"scorer returned item {score.item_id!r} where {item.id!r} was expected")
        row = item_row(item, score, methods[lane], qualities[lane], seeds[lane])
        writes[lane](row)
        failed += row["error"] is not None
        if progress is not None:
            progress(1)
    return failed
