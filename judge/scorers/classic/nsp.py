"""BERT next-sentence prediction (Nedelchev 2023, ch. 5): P(IsNext) of (previous utterance, utterance)
from BERT's NSP head. Turn level: (last context turn, response); dialog level: the sum over the pairs
that end in a system turn (``pairs="all"``: every consecutive pair).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.errors import InputError, MissingInputError
from ...data.items import Item
from ..base import Score
from . import hf
from .base import ClassicScorer, system_turn_indices
from .registry import register_classic


def nsp_probabilities(tok: Any, net: Any, pairs: Sequence[tuple[str, str]], batch_size: int = 16,
                      max_tokens: int = 512) -> list[float]:
    """P(IsNext) for each (first, second) pair; label 0 of BERT's NSP head is "is next"."""
    import torch

    out: list[float] = []
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start:start + batch_size]
        enc = tok([a for a, _ in chunk], [b for _, b in chunk], padding=True, truncation="longest_first",
                  max_length=max_tokens, return_tensors="pt")
        with torch.inference_mode():
            logits = net(**enc).logits
        out.extend(torch.softmax(logits.float(), -1)[:, 0].tolist())
    return out


class NextSentenceScorer(ClassicScorer):
    name = "bert-nsp"
    requires = ("context", "response")

    def __init__(self, model: str, pairs: str = "system", batch_size: int = 16, threads: int | None = None) -> None:
        if pairs not in ("system", "all"):
            raise InputError(f"pairs must be 'system' or 'all', not {pairs!r}", field="pairs")
        super().__init__(model=model, pairs=pairs, dialog_aggregation="sum")
        self.model, self.pairs, self.batch_size, self.threads = model, pairs, batch_size, threads

    def check(self, items: Sequence[Item]) -> None:
        super().check([it for it in items if it.level == "turn"])
        for it in items:
            if it.level == "dialog" and not self.item_pairs(it):
                raise MissingInputError("scorer 'bert-nsp' needs at least two turns", record=it.id, field="dialog")

    def item_pairs(self, it: Item) -> list[tuple[str, str]]:
        if it.level == "turn":
            return [(it.context[-1].text, it.response or "")]
        d = it.dialog
        ends = system_turn_indices(it) if self.pairs == "system" else range(len(d))
        return [(d[i - 1].text, d[i].text) for i in ends if i > 0]

    def compute(self, items: Sequence[Item]) -> list[Score]:
        tok, net = hf.load(self.model, "nsp", "scorer 'bert-nsp'")
        hf.set_threads(self.threads)
        per_item = [self.item_pairs(it) for it in items]
        probs = iter(nsp_probabilities(tok, net, [p for ps in per_item for p in ps], self.batch_size))
        return [Score(it.id, float(sum(next(probs) for _ in ps))) for it, ps in zip(items, per_item)]


@register_classic("bert-nsp")
def _bert_nsp(model: str | None = None, quality: Any = None, **options: Any) -> NextSentenceScorer:
    return NextSentenceScorer(model or "bert-base-uncased", **options)
