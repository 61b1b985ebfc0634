"""The one interface every method implements (LLM judges and classic metrics alike), and its result."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ..items import Item


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
    #: False when the backend returned only its top-N tokens, so some label spellings may be missing.
    complete: bool = True
    #: Properties of the item behind this result (``too_long``: the prompt exceeds the window).
    flags: tuple[str, ...] = ()
    n_prompt_tokens: int = 0
    n_evaluated_tokens: int = 0
    #: Most probable next tokens (token, probability), for inspecting odd outputs.
    top: list[tuple[str, float]] = field(default_factory=list)
    #: The model's hidden state at the answer position, from a judge asked for it (``LLMJudge(hidden=True)``,
    #: what a head reads); never written to results.
    vector: list[float] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.value is not None


@runtime_checkable
class Scorer(Protocol):
    """Turns items into scores. ``describe()`` identifies the method in reports."""

    name: str

    def score(self, items: Iterable[Item]) -> Iterator[Score]:
        """One Score per item, in input order; failures are Scores with ``error`` set."""
        ...

    def describe(self) -> dict[str, object]:
        """Settings that identify the method (for provenance and reports)."""
        ...

    def check(self, items: Sequence[Item]) -> None:
        """Raise InputError before any model work when ``items`` cannot be scored by this method
        (a missing input, a template that does not render). Default: nothing to check."""

    def reads(self) -> frozenset[str]:
        """Inputs beyond the conversation and the rated response that the method reads: ``reference``
        (a reference-based method) and ``next_user`` (the user's turn after the rated response: a
        method that uses the future, which a live judge never has). Reports and ``judge serve`` go by
        this declaration. Default: neither."""
        return frozenset()

    def supervised(self) -> bool:
        """Whether it learns from the human ratings of the very items it scores (an ensemble fitting its
        weights on them by cross-validation): reports keep such a method apart. Default: no."""
        return False

    def warm(self) -> None:
        """Do now the work every later ``score`` call needs, so that the first caller does not wait for
        it (an ensemble scores its fixed reference set and fits its weights). Default: nothing."""
        return None

    def fitted(self) -> dict[str, object] | None:
        """What the method learned from human ratings while scoring (an ensemble's fitted weights), so
        that results can show it; None for a method that learns nothing, and before the first
        ``score``. Default: None."""
        return None

    def prompt_settings(self) -> dict[str, object] | None:
        """How the method's prompts reach its model, for what a run records beside a cell's rows so that
        ``judge view`` can show the prompt as the model read it: ``chat`` (sent as one chat message) and
        ``wrapping`` (the text the backend puts before and after a prompt's own, or None when it cannot
        say). None for a method that sends no prompt it could rebuild (the default)."""
        return None
