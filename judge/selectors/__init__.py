"""In-context example selectors: given a test item, a labelled pool and k, return k examples.

Examples come back in prompt order. Selectors never return the test item itself and, with the
group guard on (the default), never an item of the same group (context / conversation).

Built-in names: ``none`` (zero-shot), ``manual``, ``random``, ``bm25-context``, ``bm25-response``,
``bm25-context-response``. Others register through :data:`SELECTORS`. See docs/selectors.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ..core.registry import Registry
from ..data.items import Item
from ..data.qualities import Quality
from .base import ORDERS, Selector, check_order


class ZeroShot(Selector):
    """No examples."""

    name = "none"

    def rank(self, item: Item, pool: Sequence[Item], k: int, quality: Quality | None = None) -> list[Item]:
        return []


#: ``factory(name, *, seed, group_guard, order, manual_set) -> Selector``; options a selector does
#: not use are ignored, so every name takes the same keyword options.
SelectorFactory = Callable[..., Selector]
SELECTORS: Registry[SelectorFactory] = Registry("selector", "judge.selectors")
def _zero_shot(name: str, *, seed: int = 0, group_guard: bool = True, order: str = "ascending",
               **_unused: object) -> ZeroShot:
    return ZeroShot(seed=seed, group_guard=group_guard, order=order)


SELECTORS.register("none", aliases=("zero-shot",))(_zero_shot)
SELECTORS.register_lazy("random", "judge.selectors.random:create")
SELECTORS.register_lazy("manual", "judge.selectors.manual:create")
for _field in ("bm25-context", "bm25-response", "bm25-context-response"):
    SELECTORS.register_lazy(_field, "judge.selectors.bm25:create")

SELECTOR_NAMES = ("none", "manual", "random", "bm25-context", "bm25-response", "bm25-context-response")



def get_selector(name: str | None, *, seed: int = 0, group_guard: bool = True, manual_set: str | Path | None = None,
                 order: str = "ascending") -> Selector:
    """A selector by name ("none" for zero-shot). Every selector takes the same options and ignores
    those it does not use: ``seed`` (random), ``group_guard``, ``manual_set`` (manual), ``order``
    ("ascending": most relevant last, the default; "descending"; "as-selected")."""
    check_order(order)
    canonical = SELECTORS.canonical(name or "none")
    return SELECTORS.get(canonical)(canonical, seed=seed, group_guard=group_guard, order=order,
                                    manual_set=manual_set)


__all__ = ["ORDERS", "SELECTORS", "SELECTOR_NAMES", "Selector", "ZeroShot", "get_selector"]
