"""The one interface every method implements (LLM judges and classic metrics alike), and its result."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from ..backends.base import Backend
from ..backends.requests import Answer, Request
from ..data.items import Item


@dataclass(frozen=True)
class Said:
    """What a judge that reasons said for one item: its rationale (thinking it showed included), the tokens
    it generated (every sampled completion and reasoning token included) and, for a distribution estimated
    from sampled completions, how many had no answer line that could be read."""

    rationale: str
    n_generated: int
    unparsed: int = 0


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
    #: What the judge said before its answer, from a method that reasons (``reason = N``); set on every score
    #: of such a method (a failed item's is empty), None for every other method.
    said: Said | None = None
    #: Short SHA-256 of the prompt text the model read and of the template's source that rendered it (None
    #: for a method that sends no prompt): rows record them so that a prompt rebuilt later can be checked.
    prompt_sha: str | None = None
    template_sha: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.value is not None


@dataclass(frozen=True)
class OrderAnswer:
    """One order of a pair as a pairwise judge read it (:mod:`judge.scorers.pairwise`): the label
    probabilities as read (``label_probs``: the mass on each label's spellings), p(a's reply is better) from
    them renormalised over the labels (a tie counting half), and the order's verdict (``a``, ``b`` or
    ``tie``: its most probable label)."""

    order: str
    label_probs: dict[str, float]
    p_a: float
    winner: str


@dataclass
class PairScore(Score):
    """A pair's result: ``value`` is the preference for system a (mean of p(a better) over the orders read,
    in [0, 1]); ``orders`` what each order read; ``winner`` the verdict (``a``, ``b`` or ``tie``: both
    orders must agree, else a tie); ``consistent`` whether they agreed (None with one order); ``tie`` the
    mean probability of the tie label (None when the template has none)."""

    orders: tuple[OrderAnswer, ...] = ()
    winner: str | None = None
    consistent: bool | None = None
    tie: float | None = None


@dataclass(frozen=True)
class ItemWork:
    """One item's share of a lane: the requests its score needs, and how their answers (in request order)
    become that score. ``finish`` stays with the scorer that made it (it is never shipped): an executor
    answers the requests wherever it runs them, and the answers come back to it."""

    requests: tuple[Request, ...]
    finish: Callable[[Sequence[Answer]], Score]


class Keyed(Protocol):
    """What a lane scores: an item, or a pair of replies (:class:`judge.data.pairs.Pair`); the engine reads its
    ``id`` only (to keep the lanes of one pass on the same things in one window)."""

    @property
    def id(self) -> str: ...


#: The things one lane scores (contravariant: a lane of items is planned with items).
K_contra = TypeVar("K_contra", contravariant=True)


class Lane(Protocol[K_contra]):
    """A scorer whose work is requests to one backend: what the engine schedules with the other lanes of
    that backend in one prefix-ordered pass, cut into units of work (:mod:`judge.scorers.units`). Its items
    are :class:`judge.data.items.Item` s for every method that scores replies one at a time, and
    :class:`judge.data.pairs.Pair` s for a pairwise judge."""

    @property
    def backend(self) -> Backend:
        """The backend that answers the requests (lanes of one pass share one backend object)."""
        ...

    @property
    def window(self) -> int:
        """Items planned together: their requests are ordered by prefix across the window (and across the
        lanes of the pass), and memory is bounded by it. 1: strictly item by item."""
        ...

    @property
    def batch_size(self) -> int:
        """Requests per backend call: the most one unit of work holds."""
        ...

    def needs_items(self) -> bool:
        """Whether :meth:`plan` reads every item of the call (examples or other replies drawn from them),
        so that they cannot stream."""
        ...

    def plan(self, items: Sequence[K_contra] | None) -> Callable[[K_contra], ItemWork]:
        """What each item of this call needs (``items``: every item of the call when :meth:`needs_items`,
        else None). Building an item's requests costs no backend call (a tokenizer may be read)."""
        ...


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

    def lane(self) -> Lane[Any] | None:
        """Its work as requests to one backend (:class:`Lane`), for the engine to schedule with the other
        lanes of that backend and cut into units of work that an executor (this process, or workers
        elsewhere) answers; None (the default) for a scorer that scores by itself (classic scorers,
        ensembles, which combine their members' lanes)."""
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
