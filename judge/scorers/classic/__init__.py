"""Classic (pre-LLM-prompting) dialogue metrics behind the same Scorer interface as the LLM judge.

Each scorer is registered by name with a factory that imports its heavy dependencies lazily.
A scorer declares the inputs it needs (``requires``) and the levels it supports; ``check_inputs``
refuses a dataset that lacks them before any computation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...core.errors import MissingInputError
from ...core.registry import Registry
from ...data.items import Item
from ..base import Scorer

ScorerFactory = Callable[..., Scorer]
#: Classic scorers by name; third-party packages add theirs with ``register_classic`` or an entry point
#: in the group ``judge.scorers``.
SCORERS: Registry[ScorerFactory] = Registry("scorer", "judge.scorers")

#: Inputs a scorer may require, and how to tell whether an item has them.
INPUTS: dict[str, Callable[[Item], bool]] = {
    "context": lambda it: bool(it.context),
    "response": lambda it: it.response is not None,
    "reference": lambda it: bool(it.references),
    "fact": lambda it: bool(it.fact),
    "next_user": lambda it: bool(it.next_user),
    "dialog": lambda it: bool(it.dialog),
}


def register_classic(name: str) -> Callable[[ScorerFactory], ScorerFactory]:
    """Decorator: register ``factory(**options) -> Scorer`` under ``name``."""

    return SCORERS.register(name)


def classic_names() -> list[str]:
    _load_builtins()
    return SCORERS.names()


def create_classic(name: str, **options: Any) -> Scorer:
    """A classic scorer by name, e.g. ``create_classic("length")``."""
    _load_builtins()
    return SCORERS.get(name)(**options)


def check_inputs(scorer_name: str, items: Sequence[Item], requires: Sequence[str], levels: Sequence[str]) -> None:
    """Refuse, before any computation, items that lack an input the scorer needs or are at a wrong level."""
    for it in items:
        if it.level not in levels:
            raise MissingInputError(f"scorer '{scorer_name}' supports {'/'.join(levels)}-level items, not {it.level}",
                             record=it.id, field="level")
        for need in requires:
            if not INPUTS[need](it):
                raise MissingInputError(f"scorer '{scorer_name}' needs '{need}', which this item lacks",
                                 record=it.id, field=need)


def _load_builtins() -> None:
    # Scorer modules register themselves on import; importing them is cheap (heavy SDKs load lazily).
    from . import builtin  # noqa: F401
