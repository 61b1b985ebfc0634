"""Response length in words: the trivial baseline every table should contain."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..items import SYSTEM, Item
from ..scorer import Score
from . import check_inputs, register_classic


class LengthScorer:
    """Number of whitespace-separated words of the response (dialog level: of all system turns)."""

    name = "length"
    requires: tuple[str, ...] = ()
    levels = ("turn", "dialog")

    def score(self, items: Iterable[Item]) -> Iterator[Score]:
        items = list(items)
        check_inputs(self.name, items, self.requires, self.levels)
        for it in items:
            if it.level == "turn":
                text = it.response or ""
            else:
                text = " ".join(t.text for t in it.dialog if t.speaker == SYSTEM)
            yield Score(it.id, float(len(text.split())))

    def describe(self) -> dict[str, object]:
        return {"method": "classic", "scorer": self.name}


@register_classic("length")
def _length(**options: object) -> LengthScorer:
    return LengthScorer()
