"""Reference-based word-overlap metrics (as evaluated in the HUMOD paper): BLEU-4, ROUGE-L, METEOR.

All take every reference of an item (DailyDialog-Gupta has four). Text is lower-cased and split into
words and punctuation marks. Scores lie in [0, 1]; a response identical to a reference scores 1.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ...core.errors import InputError
from ...data.items import Item
from ..base import Score
from .base import ClassicScorer, no_model
from .hf import require
from .registry import register_classic

_TOKEN = re.compile(r"\w+|[^\w\s]")


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _ngrams(tokens: Sequence[str], n: int) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def bleu(hypothesis: Sequence[str], references: Sequence[Sequence[str]], max_n: int = 4) -> float:
    """Sentence BLEU (Papineni et al. 2002) with multiple references.

    Clipped n-gram precisions (clip = the largest count in any one reference), brevity penalty against
    the reference closest in length (ties: the shorter), 0 without any matching word, and the "exp" smoothing sacrebleu uses for
    sentences: the k-th order with no match counts as 1/2^k matches. Orders longer than the response are
    left out (sacrebleu's effective order).
    """
    if not hypothesis:
        return 0.0
    if not any(_ngrams(hypothesis, 1) & _ngrams(r, 1) for r in references):
        return 0.0  # no word in common: 0, as sacrebleu (smoothing would otherwise lift it)
    log_sum, orders, smooth = 0.0, 0, 1.0
    for n in range(1, max_n + 1):
        hyp = _ngrams(hypothesis, n)
        total = sum(hyp.values())
        if total == 0:
            break
        best: Counter = Counter()
        for ref in references:
            best |= _ngrams(ref, n)
        correct = sum(min(c, best[g]) for g, c in hyp.items())
        if correct == 0:
            smooth *= 2
            p = 1.0 / (smooth * total)
        else:
            p = correct / total
        log_sum += math.log(p)
        orders += 1
    hyp_len = len(hypothesis)
    ref_len = min((abs(len(r) - hyp_len), len(r)) for r in references)[1]
    bp = 1.0 if hyp_len >= ref_len else math.exp(1 - ref_len / hyp_len)
    return bp * math.exp(log_sum / orders)


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def rouge_l(hypothesis: Sequence[str], references: Sequence[Sequence[str]], beta: float = 1.2) -> float:
    """ROUGE-L F-measure (Lin 2004) with recall weighted by ``beta``, the best over the references."""
    best = 0.0
    for ref in references:
        lcs = lcs_length(hypothesis, ref)
        if lcs == 0:
            continue
        p, r = lcs / len(hypothesis), lcs / len(ref)
        best = max(best, (1 + beta**2) * p * r / (r + beta**2 * p))
    return best


class _NoSynonyms:
    """Stands in for WordNet: METEOR's synonym stage then matches nothing (exact + stem only)."""

    @staticmethod
    def synsets(word: str) -> list:
        return []


def meteor(hypothesis: Sequence[str], references: Sequence[Sequence[str]], synonyms: bool = False) -> float:
    """METEOR (Banerjee & Lavie 2005) via nltk: exact and Porter-stem matches (+ WordNet synonyms if asked)."""
    ms = require("nltk.translate.meteor_score", "scorer 'meteor'")
    if synonyms:
        from nltk.corpus import wordnet

        try:
            wordnet.ensure_loaded()
        except LookupError as e:
            raise InputError("METEOR synonyms need the WordNet data: python -m nltk.downloader wordnet",
                             field="synonyms") from e
        return float(ms.meteor_score(references, hypothesis, wordnet=wordnet))
    return float(ms.meteor_score(references, hypothesis, wordnet=_NoSynonyms()))


class OverlapScorer(ClassicScorer):
    requires = ("response", "reference")
    levels = ("turn",)

    def __init__(self, name: str, fn: Any, **settings: Any) -> None:
        super().__init__(tokenizer="lowercase words and punctuation", **settings)
        self.name, self.fn, self.options = name, fn, settings

    def compute(self, items: Sequence[Item]) -> list[Score]:
        out = []
        for it in items:
            hyp = tokenize(it.response or "")
            refs = [tokenize(r) for r in it.references]
            if not hyp:
                out.append(Score(it.id, None, error="response has no words"))
                continue
            out.append(Score(it.id, float(self.fn(hyp, refs, **self.options))))
        return out


@register_classic("bleu4")
def _bleu4(model: str | None = None, quality: Any = None) -> OverlapScorer:
    no_model("bleu4", model)
    return OverlapScorer("bleu4", bleu, max_n=4)


@register_classic("rouge-l")
def _rouge_l(model: str | None = None, quality: Any = None, beta: float = 1.2) -> OverlapScorer:
    no_model("rouge-l", model)
    return OverlapScorer("rouge-l", rouge_l, beta=beta)


@register_classic("meteor")
def _meteor(model: str | None = None, quality: Any = None, synonyms: bool = False) -> OverlapScorer:
    no_model("meteor", model)
    return OverlapScorer("meteor", meteor, synonyms=synonyms)
