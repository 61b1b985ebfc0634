"""Answer types of a prompt: what the model is asked to output, and the label strings to read."""

from __future__ import annotations

from dataclasses import dataclass


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


AnswerType = Rating | YesNo


def candidates(answer: AnswerType) -> list[str]:
    """All candidate strings a backend must look up for this answer type, in a stable order."""
    return [c for forms in answer.variants().values() for c in forms]


def _round_half_up(x: float) -> int:
    return int(x + 0.5) if x >= 0 else -int(-x + 0.5)
