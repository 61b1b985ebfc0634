"""Next-user-turn sentiment (Ghazarian et al. 2022, "What is wrong with you?"): the user's reaction to a
system turn is a proxy for that turn's quality. VADER's compound score (-1..1) of the next user turn;
dialog level: the mean over the system turns that a user turn follows.

Caveat from the paper: a plain "no" (an answer, not a complaint) reads as negative.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...core.errors import MissingInputError
from ...data.items import USER, Item
from ..base import Score
from .base import ClassicScorer, no_model, system_turn_indices
from .hf import require
from .registry import register_classic


def next_user_turns(item: Item) -> list[str]:
    """The user turns that directly follow a system turn (turn level: the item's ``next_user``)."""
    if item.level == "turn":
        return [item.next_user] if item.next_user else []
    d = item.dialog
    return [d[i + 1].text for i in system_turn_indices(item) if i + 1 < len(d) and d[i + 1].speaker == USER]


class NextUserSentiment(ClassicScorer):
    name = "next-user-sentiment"
    requires = ("next_user",)  # dialog items: the user turns inside the dialog

    def __init__(self) -> None:
        super().__init__(lexicon="VADER compound", dialog_aggregation="mean")
        self.analyzer = require("vader", "scorer 'next-user-sentiment'").SentimentIntensityAnalyzer()

    def check(self, items: Sequence[Item]) -> None:
        for it in items:
            if not next_user_turns(it):
                what = "'next_user'" if it.level == "turn" else "a user turn after a system turn in 'dialog'"
                raise MissingInputError(f"scorer '{self.name}' needs {what}, which this item lacks", record=it.id,
                                 field="next_user" if it.level == "turn" else "dialog")

    def compute(self, items: Sequence[Item]) -> list[Score]:
        return [Score(it.id, float(np.mean([self.analyzer.polarity_scores(u)["compound"]
                                            for u in next_user_turns(it)])))
                for it in items]


@register_classic("next-user-sentiment")
def _sentiment(model: str | None = None, quality: Any = None) -> NextUserSentiment:
    no_model("next-user-sentiment", model)
    return NextUserSentiment()
