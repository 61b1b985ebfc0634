"""The leakage guard: which pool items may be shown as examples for a test item.

A candidate is never the test item itself (same id). With the group guard on (the default) it
also never shares the test item's ``group`` (its context, conversation or dialog): several rated
responses to one context (USR, DailyDialog-Gupta) or turns cut from one FED conversation would
otherwise show the model a human label for (almost) the item it is judging.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..data.items import Item


def allowed(item: Item, candidate: Item, group_guard: bool = True) -> bool:
    """True when ``candidate`` may be an in-context example for ``item``."""
    if candidate.id == item.id:
        return False
    return not (group_guard and candidate.group == item.group)


def eligible(item: Item, pool: Sequence[Item], group_guard: bool = True) -> list[int]:
    """Indices (in pool order) of the candidates that may be examples for ``item``."""
    return [i for i, cand in enumerate(pool) if allowed(item, cand, group_guard)]
