"""In-context example selectors: given a test item, a labelled pool and k, return k examples.

Examples come back in prompt order. Selectors never return the test item itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ..items import Item


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


class ZeroShot:
    """No examples."""

    name = "none"

    def select(self, item: Item, pool: Sequence[Item], k: int) -> list[Item]:
        return []

    def describe(self) -> dict[str, object]:
        return {"selector": self.name}


def get_selector(name: str | None, **options: object) -> Selector:
    """A selector by name ("none" for zero-shot)."""
    if name in (None, "none", "zero-shot"):
        return ZeroShot()
    from ..errors import UnknownNameError

    raise UnknownNameError("selector", str(name), ["none"])


__all__ = ["Selector", "ZeroShot", "get_selector"]
