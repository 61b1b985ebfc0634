"""Running a scorer over items: rows in input order, streamed to whatever writes them.

``judge score`` streams these rows into one file; ``judge run`` (and ``judge bench``, a one-cell run)
appends them to its cell files, one fsynced line per item; ``judge serve`` returns them over HTTP.
Results that finish out of order inside a backend window (prompts sorted for prefix reuse) are
already in the SQLite cache when they finish, so a killed run loses at most the prompts in flight.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..items import Item
from ..scorers.base import Scorer
from .rows import item_row


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
