"""The one interface every method implements (LLM judges and classic metrics alike), and its result."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .items import Item


@dataclass
class Score:
    """One item's result: the number (None when it failed), where it came from, and why it failed."""

    item_id: str
    value: float | None
    #: Probability of each answer label (LLM judges), e.g. {"yes": .6, "no": .3}.
    label_probs: dict[str, float] | None = None
    #: Ids of the in-context examples shown.
    examples: list[str] = field(default_factory=list)
    error: str | None = None
    #: The distribution was estimated from sampled answers, not read from log-probabilities.
    estimated: bool = False
    n_prompt_tokens: int = 0
    n_evaluated_tokens: int = 0
    #: Most probable next tokens (token, probability), for inspecting odd outputs.
    top: list[tuple[str, float]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None and self.value is not None

    def to_json(self, digits: int = 6) -> dict[str, Any]:
        """A JSON-ready dict with fixed float rounding (byte-identical output across identical runs)."""

        def r(x: float | None) -> float | None:
            return None if x is None else round(float(x), digits)

        out: dict[str, Any] = {"id": self.item_id, "score": r(self.value)}
        if self.label_probs is not None:
            out["label_probs"] = {k: r(v) for k, v in self.label_probs.items()}
        out["examples"] = list(self.examples)
        if self.estimated:
            out["estimated"] = True
        if self.error is not None:
            out["error"] = self.error
        out["n_prompt_tokens"] = self.n_prompt_tokens
        return out


@runtime_checkable
class Scorer(Protocol):
    """Turns items into scores. ``describe()`` identifies the method in reports."""

    name: str

    def score(self, items: Iterable[Item]) -> Iterator[Score]:
        """One Score per item, in input order; failures are Scores with ``error`` set."""
        ...

    def describe(self) -> dict[str, object]:
        ...
