"""The selector contract, and what every built-in selector shares: the leakage guard, example order
and provenance."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from ..core.errors import UnknownNameError
from ..data.items import Item
from ..data.qualities import Quality

#: Example orders. The selector ranks candidates most relevant first; the order puts them in the prompt:
#: "ascending" (default): relevance grows towards the test item, the most relevant example is last;
#: "descending": the most relevant example comes first;
#: "as-selected": the selector's own order (rank order for BM25 and random, file order for manual sets).
ORDERS = ("ascending", "descending", "as-selected")


def check_order(order: str) -> str:
    if order not in ORDERS:
        raise UnknownNameError("example order", str(order), ORDERS)
    return order


class Selector(ABC):
    """Chooses in-context examples for a test item from a pool of labelled candidates.

    ``rank`` is the one method to implement: up to k allowed examples, most relevant first. The judge
    uses ``rank`` and ``arrange`` together so that, when examples do not fit the context window, the
    least relevant are dropped first whatever the display order; ``select`` is ``arrange(rank(...))``.
    ``check`` validates a run's items and pool before any model loads (default: nothing to check).
    """

    name = "base"
    #: The examples are chosen without looking at the test item: every item shows the same ones (the leakage
    #: guard aside, which swaps in a stand-in for an item of an example's own conversation). The prompts'
    #: text then matches up to the end of the examples, which llama.cpp evaluates once per run instead of
    #: once per item (``PromptTemplate.instructions_chars``). Default: no (examples chosen per item).
    fixed_examples: ClassVar[bool] = False

    def __init__(self, *, seed: int = 0, group_guard: bool = True, order: str = "ascending") -> None:
        self.seed = int(seed)
        self.group_guard = bool(group_guard)
        self.order = check_order(order)

    @abstractmethod
    def rank(self, item: Item, pool: Sequence[Item], k: int, quality: Quality | None = None) -> list[Item]:
        """Up to k allowed examples for ``item``, most relevant first (``quality``: what is rated)."""

    def check(self, items: Sequence[Item], pool: Sequence[Item], quality: Quality | None) -> None:  # noqa: B027
        """Raise InputError now if scoring ``items`` with examples from ``pool`` cannot work (default:
        nothing to check; optional on purpose, so not abstract)."""

    def native_order(self, ranked: list[Item]) -> list[Item]:
        """The selector's own display order of a ranked list ("as-selected"): rank order by default."""
        return list(ranked)

    def arrange(self, ranked: Sequence[Item]) -> list[Item]:
        """Prompt order of a ranked (most relevant first) list, per ``self.order``."""
        ranked = list(ranked)
        if self.order == "ascending":
            return ranked[::-1]
        if self.order == "descending":
            return ranked
        return self.native_order(ranked)

    def select(self, item: Item, pool: Sequence[Item], k: int, quality: Quality | None = None) -> list[Item]:
        """k examples (fewer if the pool is smaller) in prompt order."""
        if k <= 0:
            return []
        return self.arrange(self.rank(item, pool, k, quality))

    def describe(self) -> dict[str, object]:
        """Settings that identify this selection (name, seed, guard, order) for provenance."""
        return {"selector": self.name, "seed": self.seed, "group_guard": self.group_guard, "order": self.order}
