"""Classic (pre-LLM-prompting) dialogue metrics behind the same Scorer interface as the LLM judge.

Each scorer is registered by name with a factory that imports its heavy dependencies lazily.
A scorer declares the inputs it needs (``requires``) and the levels it supports; ``check_inputs``
refuses a dataset that lacks them before any computation.
"""

from __future__ import annotations

from typing import Any

from ..base import Scorer

# The built-in scorer modules register themselves on import; importing them is cheap (heavy SDKs load lazily).
from . import builtin  # noqa: F401
from .registry import INPUTS, SCORERS, ScorerFactory, check_inputs, register_classic

__all__ = ["INPUTS", "SCORERS", "ScorerFactory", "check_inputs", "classic_names", "create_classic", "register_classic"]


def classic_names() -> list[str]:
    return SCORERS.names()


def create_classic(name: str, **options: Any) -> Scorer:
    """A classic scorer by name, e.g. ``create_classic("length")``."""
    return SCORERS.get(name)(**options)
