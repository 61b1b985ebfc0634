"""Out-of-distribution scores for dialogue breakdown detection (Nedelchev 2023, ch. 7).

``max-softmax``: the maximum softmax probability (Hendrycks & Gimpel 2017) at each response position;
a response is as in-distribution as its least confident position (``reduce="min"``) or on average
(``reduce="mean"``, which equals lm-maxprob at turn level).
``likelihood-ratio``: log P_model(response | context) - log P_background(response | context), summed
over the response's tokens (text log-likelihoods, comparable across tokenizers; Ren et al. 2019).
Dialog level: the mean over system turns (a breakdown score, not a sum).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...core.errors import InputError
from ...data.items import Item
from ..base import Score
from . import hf
from .lm import join_turns, resolve_separator, token_stats
from .lm_likelihood import LikelihoodScorer, utterance_requests
from .registry import register_classic


def _requests(items: Sequence[Item], context: str) -> tuple[list[tuple[list[str], str]], list[int]]:
    reqs, owner = [], []
    for n, it in enumerate(items):
        for r in utterance_requests(it, context):
            reqs.append(r)
            owner.append(n)
    return reqs, owner


def _per_item(values: Sequence[float], owner: Sequence[int], n: int) -> list[list[float]]:
    out: list[list[float]] = [[] for _ in range(n)]
    for i, v in zip(owner, values):
        out[i].append(v)
    return out


def lm_stats(model: str, reqs: Sequence[tuple[list[str], str]], separator: str, batch_size: int,
             max_tokens: int, what: str) -> list[Any]:
    tok, net = hf.load(model, "causal-lm", what)
    sep = resolve_separator(separator, tok)
    return token_stats(tok, net, [(join_turns(p, sep), u) for p, u in reqs], batch_size=batch_size,
                       max_tokens=max_tokens)


class MaxSoftmax(LikelihoodScorer):
    def __init__(self, model: str, reduce: str = "min", **options: Any) -> None:
        if reduce not in ("min", "mean"):
            raise InputError(f"reduce must be 'min' or 'mean', not {reduce!r}", field="reduce")
        super().__init__("max-softmax", model, statistic="maxprob", **options)
        self.reduce = reduce
        self.settings.update(reduce=reduce, aggregation="per utterance, mean over dialog")

    def compute(self, items: Sequence[Item]) -> list[Score]:
        reqs, owner = _requests(items, self.context)
        stats = lm_stats(self.model, reqs, self.separator, self.batch_size, self.max_tokens, "scorer 'max-softmax'")
        f = np.min if self.reduce == "min" else np.mean
        vals = [float(f(s.maxprob)) if len(s.maxprob) else float("nan") for s in stats]
        return _scores(items, _per_item(vals, owner, len(items)))


class LikelihoodRatio(LikelihoodScorer):
    def __init__(self, model: str, background: str, **options: Any) -> None:
        super().__init__("likelihood-ratio", model, statistic="prob", **options)
        self.background = background
        self.settings.update(background=background, aggregation="summed log-prob per utterance, mean over dialog")
        del self.settings["statistic"]

    def compute(self, items: Sequence[Item]) -> list[Score]:
        reqs, owner = _requests(items, self.context)
        fg = lm_stats(self.model, reqs, self.separator, self.batch_size, self.max_tokens, "scorer 'likelihood-ratio'")
        bg = lm_stats(self.background, reqs, self.separator, self.batch_size, self.max_tokens,
                      "scorer 'likelihood-ratio'")
        vals = [float(a.logp.sum() - b.logp.sum()) if len(a.logp) and len(b.logp) else float("nan")
                for a, b in zip(fg, bg)]
        return _scores(items, _per_item(vals, owner, len(items)))


def _scores(items: Sequence[Item], per_item: list[list[float]]) -> list[Score]:
    out = []
    for it, vals in zip(items, per_item):
        if not vals or any(np.isnan(vals)):
            out.append(Score(it.id, None, error="an utterance has no tokens"))
        else:
            out.append(Score(it.id, float(np.mean(vals))))
    return out


@register_classic("max-softmax")
def _max_softmax(model: str | None = None, quality: Any = None, **options: Any) -> MaxSoftmax:
    return MaxSoftmax(model or "gpt2", **options)


@register_classic("likelihood-ratio")
def _likelihood_ratio(model: str | None = None, quality: Any = None, background: str = "gpt2",
                      **options: Any) -> LikelihoodRatio:
    return LikelihoodRatio(model or "microsoft/DialoGPT-medium", background, **options)
