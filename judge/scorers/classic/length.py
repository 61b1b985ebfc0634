"""Response length in words: the trivial baseline every table should contain."""

from __future__ import annotations

from collections.abc import Sequence

from ...data.items import SYSTEM, Item
from ..base import Score
from .base import ClassicScorer, no_model
from .registry import register_classic


class LengthScorer(ClassicScorer):
    """Number of whitespace-separated words of the response (dialog level: of all system turns)."""

    name = "length"

    def compute(self, items: Sequence[Item]) -> list[Score]:
        out = []
        for it in items:
            if it.level == "turn":
                text = it.response or ""
            else:
                text = " ".join(t.text for t in it.dialog if t.speaker == SYSTEM)
            out.append(Score(it.id, float(len(text.split()))))
        return out


@register_classic("length")
def _length(quality: object = None, model: str | None = None, **options: object) -> LengthScorer:
    no_model("length", model)
    return LengthScorer()
