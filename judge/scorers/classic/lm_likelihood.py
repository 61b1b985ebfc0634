"""Causal-LM likelihood scorers of Nedelchev (2023): LM likelihood (ch. 5), "what would an LM say"
max-prob (ch. 5.3.3/7) and a dialog model's "opinion" (ch. 8), all with the u-avg-d-sum aggregation.

u-avg-d-sum: an utterance's score is the average of its tokens' plain probabilities (not log-probs);
a dialog's score is the sum of its system utterances' scores; a turn-level item is scored by its response.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...core.errors import InputError, MissingInputError
from ...data.items import Item
from ..base import Score
from . import hf
from .base import ClassicScorer, system_turn_indices
from .lm import TokenStats, join_turns, resolve_separator, token_stats
from .registry import register_classic


def utterance_requests(item: Item, context: str) -> list[tuple[list[str], str]]:
    """(preceding turn texts, utterance) for every utterance of the item that is scored."""
    if item.level == "turn":
        prev = [t.text for t in item.context]
        return [(prev[-1:] if context == "pair" else prev, item.response or "")]
    texts = [t.text for t in item.dialog]
    return [(texts[i - 1:i] if context == "pair" else texts[:i], texts[i]) for i in system_turn_indices(item)]


def min_max(values: Sequence[float | None]) -> list[float | None]:
    """Min-max normalisation over the scored population (monotone: correlations are unchanged)."""
    ok = [v for v in values if v is not None]
    if not ok:
        return list(values)
    lo, hi = min(ok), max(ok)
    return [None if v is None else (0.0 if hi == lo else (v - lo) / (hi - lo)) for v in values]


class LikelihoodScorer(ClassicScorer):
    """Average token probability per utterance (actual token, or the most probable token), summed per dialog."""

    requires = ("response",)

    def __init__(self, name: str, model: str, *, statistic: str, context: str = "full", separator: str = "\n",
                 batch_size: int = 8, max_tokens: int = 1024, normalize: bool = False,
                 threads: int | None = None) -> None:
        if statistic not in ("prob", "maxprob"):
            raise InputError(f"statistic must be prob or maxprob, not {statistic!r}", field="statistic")
        if context not in ("full", "pair"):
            raise InputError(f"context must be 'full' or 'pair', not {context!r}", field="context")
        super().__init__(model=model, statistic=statistic, context=context, separator=separator,
                         aggregation="u-avg-d-sum", max_tokens=max_tokens, normalize=normalize)
        self.name = name
        self.model = model
        self.statistic, self.context, self.separator = statistic, context, separator
        self.batch_size, self.max_tokens, self.normalize = batch_size, max_tokens, normalize
        hf.set_threads(threads)

    def check(self, items: Sequence[Item]) -> None:
        super().check([it for it in items if it.level == "turn"])
        for it in items:
            if it.level == "dialog" and not system_turn_indices(it):
                raise MissingInputError(f"scorer '{self.name}' needs system turns in the dialog", record=it.id,
                                 field="dialog")
            if it.level not in self.levels:
                raise MissingInputError(f"scorer '{self.name}' does not support {it.level}-level items", record=it.id)

    def compute(self, items: Sequence[Item]) -> list[Score]:
        tok, net = hf.load(self.model, "causal-lm", f"scorer '{self.name}'")
        sep = resolve_separator(self.separator, tok)
        pairs, owner = [], []
        for n, it in enumerate(items):
            for prev, utt in utterance_requests(it, self.context):
                pairs.append((join_turns(prev, sep), utt))
                owner.append(n)
        stats = token_stats(tok, net, pairs, batch_size=self.batch_size, max_tokens=self.max_tokens)
        per_item: list[list[TokenStats]] = [[] for _ in items]
        for n, s in zip(owner, stats):
            per_item[n].append(s)
        values: list[float | None] = []
        errors: list[str | None] = []
        for utts in per_item:
            if any(len(s.logp) == 0 for s in utts):
                values.append(None)
                errors.append("an utterance has no tokens")
                continue
            u = [float(np.mean(s.prob if self.statistic == "prob" else s.maxprob)) for s in utts]
            values.append(float(np.sum(u)))
            errors.append(None)
        if self.normalize:
            values = min_max(values)
        return [Score(it.id, v, error=e, n_evaluated_tokens=sum(len(s.logp) for s in utts))
                for it, v, e, utts in zip(items, values, errors, per_item)]


def _options(options: dict[str, Any]) -> dict[str, Any]:
    options.pop("quality", None)  # the likelihood does not depend on the rated quality
    return options


@register_classic("lm-likelihood")
def _lm_likelihood(model: str | None = None, **options: Any) -> LikelihoodScorer:
    return LikelihoodScorer("lm-likelihood", model or "gpt2", statistic="prob", **_options(options))


@register_classic("lm-maxprob")
def _lm_maxprob(model: str | None = None, **options: Any) -> LikelihoodScorer:
    return LikelihoodScorer("lm-maxprob", model or "gpt2", statistic="maxprob", **_options(options))


@register_classic("dialog-opinion")
def _dialog_opinion(model: str | None = None, **options: Any) -> LikelihoodScorer:
    options = _options(options)
    options.setdefault("separator", "eos")  # DialoGPT separates turns with <|endoftext|>
    return LikelihoodScorer("dialog-opinion", model or "microsoft/DialoGPT-medium", statistic="prob", **options)
