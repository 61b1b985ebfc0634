"""In-context example selectors: given a test item, a labelled pool and k, return k examples.

Examples come back in prompt order. Selectors never return the test item itself and, with the
group guard on (the default), never an item of the same group (context / conversation).

Built-in names: ``none`` (zero-shot), ``manual``, ``random``, ``bm25-context``, ``bm25-response``,
``bm25-context-response``. See docs/selectors.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from ..items import Item
from ..qualities import Quality
from .base import ORDERS, RankingSelector, check_order


@runtime_checkable
class Selector(Protocol):
    """Chooses in-context examples for a test item from a pool of labelled candidates."""

    name: str

    def select(self, item: Item, pool: Sequence[Item], k: int) -> list[Item]:
        """k examples (fewer if the pool is smaller) in the order they appear in the prompt."""
        ...

    def describe(self) -> dict[str, object]:
        """Settings that identify this selection (name, seed, guard, ...) for provenance."""
        ...


class ZeroShot(RankingSelector):
    """No examples."""

    name = "none"

    def rank(self, item: Item, pool: Sequence[Item], k: int) -> list[Item]:
        return []


SELECTOR_NAMES = ("none", "manual", "random", "bm25-context", "bm25-response", "bm25-context-response")


def get_selector(
    name: str | None,
    *,
    seed: int = 0,
    group_guard: bool = True,
    manual_set: str | Path | None = None,
    order: str = "ascending",
    quality: str | Quality | None = None,
) -> Selector:
    """A selector by name ("none" for zero-shot). Every selector takes the same options and ignores
    those it does not use: ``seed`` (random), ``group_guard``, ``manual_set`` and ``quality``
    (manual), ``order`` ("ascending": most relevant last, the default; "descending"; "as-selected")."""
    check_order(order)
    common = {"seed": seed, "group_guard": group_guard, "order": order}
    if name in (None, "none", "zero-shot"):
        return ZeroShot(**common)
    if name == "random":
        from .random import RandomSelector

        return RandomSelector(**common)
    if name == "manual":
        from .manual import ManualSelector

        return ManualSelector(manual_set=manual_set, quality=quality, **common)
    from .bm25 import FIELDS, BM25Selector

    if name in FIELDS:
        return BM25Selector(name, **common)
    from ..errors import UnknownNameError

    raise UnknownNameError("selector", str(name), SELECTOR_NAMES)


__all__ = ["ORDERS", "SELECTOR_NAMES", "RankingSelector", "Selector", "ZeroShot", "get_selector"]
