"""``random``: examples drawn uniformly from the allowed pool, seeded per (seed, test item).

The generator for an item is ``random.Random(f"{seed}:{item.id}")`` (Python seeds string seeds
through SHA-512, so this is the same on every machine and Python 3 version), so an item's examples
depend only on the seed, its id and the pool, never on which other items are scored or in what order.
"""

from __future__ import annotations

import random as _random
from collections.abc import Sequence

from ..data.items import Item
from ..data.qualities import Quality
from .base import Selector
from .guard import eligible


class RandomSelector(Selector):
    """k examples sampled without replacement; the draw order counts as the relevance rank."""

    name = "random"

    def rank(self, item: Item, pool: Sequence[Item], k: int, quality: Quality | None = None) -> list[Item]:
        if k <= 0:
            return []
        allowed = eligible(item, pool, self.group_guard)
        rng = _random.Random(f"{self.seed}:{item.id}")
        return [pool[i] for i in rng.sample(allowed, min(k, len(allowed)))]


def create(name: str, *, seed: int = 0, group_guard: bool = True, order: str = "ascending",
           **_unused: object) -> RandomSelector:
    """Registry factory."""
    return RandomSelector(seed=seed, group_guard=group_guard, order=order)
