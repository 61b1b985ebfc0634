"""Answer types of a prompt: what the model is asked to output, and the label strings to read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ..core.errors import TemplateError


class Vocabulary(Protocol):
    """What :func:`check_labels` asks of a backend: whether a text is one token of its model, and the model's
    name (declared here so that rendering never imports the backends it feeds)."""

    @property
    def model_id(self) -> str: ...

    def single_token(self, text: str) -> bool | None: ...


@dataclass(frozen=True)
class Rating:
    """An integer rating on [min, max], written in examples as ``value/max``."""

    min: int
    max: int
    kind: str = "rating"

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(str(v) for v in range(self.min, self.max + 1))

    def variants(self) -> dict[str, tuple[str, ...]]:
        """Label -> candidate strings that mean it (bare and with a leading space)."""
        return {lab: (lab, " " + lab) for lab in self.labels}

    def format_label(self, human: float) -> str:
        """How an example's human mean is shown: the rounded mean as ``value/max`` (ties round up)."""
        value = int(min(self.max, max(self.min, _round_half_up(human))))
        return f"{value}/{self.max}"


@dataclass(frozen=True)
class YesNo:
    """A yes/no question; the score is the goodness p(yes) / (p(yes) + p(no))."""

    kind: str = "yesno"
    labels: tuple[str, ...] = ("yes", "no")
    #: An example counts as "Yes" when its human mean is at least this fraction of the way up its scale.
    threshold: float = 0.5

    def variants(self) -> dict[str, tuple[str, ...]]:
        """Label -> case and leading-space variants; backends keep those that are single tokens."""
        out: dict[str, tuple[str, ...]] = {}
        for lab in self.labels:
            forms = (lab, lab.capitalize(), lab.upper())
            out[lab] = tuple(dict.fromkeys(forms + tuple(" " + f for f in forms)))
        return out

    def format_label(self, human: float, lo: float, hi: float) -> str:
        """'Yes' when (human - lo) / (hi - lo) >= threshold, else 'No'."""
        if hi <= lo:
            raise ValueError(f"empty scale [{lo}, {hi}]")
        return "Yes" if (human - lo) / (hi - lo) >= self.threshold else "No"


@dataclass(frozen=True)
class Pairwise:
    """Which of two replies shown side by side is better: ``first`` names the reply shown first (as
    ``response_a``), ``second`` the one shown second, ``tie`` (optional) an allowed tie. The probability of
    each is read as the mass on its spellings, renormalised over the labels
    (:mod:`judge.scorers.pairwise`)."""

    first: str = "A"
    second: str = "B"
    tie: str | None = None
    kind: str = "pairwise"

    @property
    def labels(self) -> tuple[str, ...]:
        return (self.first, self.second) + ((self.tie,) if self.tie else ())

    def variants(self) -> dict[str, tuple[str, ...]]:
        """Label -> the label and its case and leading-space variants (a tie label also capitalised and
        upper case, as yes/no labels are); backends keep those that are single tokens."""
        out: dict[str, tuple[str, ...]] = {}
        for lab in self.labels:
            forms = (lab, lab.capitalize(), lab.upper()) if lab == self.tie else (lab,)
            out[lab] = tuple(dict.fromkeys(forms + tuple(" " + f for f in forms)))
        return out


AnswerType = Rating | YesNo | Pairwise


def candidates(answer: AnswerType) -> list[str]:
    """All candidate strings a backend must look up for this answer type, in a stable order."""
    return [c for forms in answer.variants().values() for c in forms]


def unreadable_labels(answer: AnswerType, single_token: Callable[[str], bool | None]) -> list[str]:
    """Labels none of whose spellings is a single token (``single_token`` asks the model's tokenizer)."""
    return [label for label, forms in answer.variants().items() if not any(single_token(f) for f in forms)]


def check_labels(answer: AnswerType, backend: Vocabulary, *, template: str = "the prompt") -> None:
    """Refuse a template/model pair whose answer labels the model cannot say in one token.

    Scores are read from the next-token distribution, so a label that is several tokens long
    (SmolLM2 spells ``10`` as ``1`` + ``0``) would silently get probability 0 -- and the mass the
    model puts on its first token would count for the label that token spells (``1``). Backends
    that expose their tokenizer answer ``backend.single_token(text)`` (llama.cpp, transformers,
    vLLM); hosted APIs cannot tell (None), and for them the check is skipped (their answers read
    only the labels the server returns as whole tokens).
    """
    if backend.single_token("1") is None:
        return
    bad = unreadable_labels(answer, backend.single_token)
    if bad:
        model = backend.model_id
        raise TemplateError(f"{template}: the answer label(s) {', '.join(repr(b) for b in bad)} are not a single "
                            f"token of {model}'s vocabulary, so their probability cannot be read (another label "
                            "would take it); use a scale whose labels are single tokens (e.g. 1-5) or another model")


def _round_half_up(x: float) -> int:
    return int(x + 0.5) if x >= 0 else -int(-x + 0.5)
