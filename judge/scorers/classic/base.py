"""Common shape of the classic scorers: input checks before any computation, per-item failures kept."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ...core.errors import InputError
from ...data.items import SYSTEM, Item
from ..base import Score, Scorer
from .registry import check_inputs

#: Inputs whose use changes what kind of method a scorer is (see ``Scorer.reads``).
DECLARED_READS = frozenset({"reference", "next_user"})


class ClassicScorer(Scorer):
    """Subclasses set ``name``, ``requires``, ``levels`` and implement ``compute(items) -> list[Score]``."""

    name = "classic"
    requires: tuple[str, ...] = ()
    levels: tuple[str, ...] = ("turn", "dialog")

    def __init__(self, **settings: Any) -> None:
        #: What describe() reports: every option that changes the numbers.
        self.settings = settings

    def check(self, items: Sequence[Item]) -> None:
        check_inputs(self.name, items, self.requires, self.levels)

    def reads(self) -> frozenset[str]:
        """The declared ``requires`` that reports tell apart (a reference, the next user turn)."""
        return frozenset(self.requires) & DECLARED_READS

    def score(self, items: Iterable[Item]) -> Iterator[Score]:
        items = list(items)
        self.check(items)
        yield from self.compute(items)

    def compute(self, items: Sequence[Item]) -> list[Score]:
        raise NotImplementedError

    def describe(self) -> dict[str, object]:
        return {"method": "classic", "scorer": self.name, **self.settings}


def no_model(name: str, model: str | None) -> None:
    """Scorers without a model refuse ``--scorer-model`` rather than silently ignoring it."""
    if model is not None:
        raise InputError(f"scorer '{name}' uses no model, but model '{model}' was given", field="model")


def system_turn_indices(item: Item) -> list[int]:
    """Positions of the system's turns in a dialog (the side being evaluated)."""
    return [i for i, t in enumerate(item.dialog) if t.speaker == SYSTEM]
