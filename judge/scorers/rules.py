"""Scoring rules: turn a next-token label distribution into a number (pure functions).

* Top-K rating weighting (rule ``topk``, the paper's): take the K most probable rating labels
  r_1..r_K with probabilities p_1..p_K, w_i = p_i / sum_j p_j, score = sum_i r_i * w_i.
* Expected rating (rule ``expected``, as in G-EVAL): the same weighting over ALL labels of the
  scale, score = sum_r r * p_r / sum_r p_r. Unlike top-K it keeps the mass of unlikely labels, so a
  model torn between 1 and 5 scores 3, not the more likely of the two.
* Goodness: p(yes) / (p(yes) + p(no)). For a yes/no answer both rules give it (it is the expected
  value of yes = 1, no = 0).

A label's probability is the sum over its single-token spellings ("2" and " 2"; "Yes", "yes",
" yes", ...) that the backend could read. Spellings it could not read (multi-token, or outside a
top-N list) are absent from the input and contribute nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from ..core.errors import UnknownNameError
from ..prompts.answers import AnswerType, Rating, YesNo


class ScoringError(ValueError):
    """The distribution carries no probability on any label (reported per item, never hidden)."""


#: Largest log-probability accepted (exactly 0 can come out as a hair above after rounding).
_LOGPROB_SLACK = 1e-6


def label_probs(logprobs: Mapping[str, float | None], answer: AnswerType) -> dict[str, float]:
    """Probability of each label of ``answer``: the sum of exp(logprob) over its readable spellings."""
    out: dict[str, float] = {}
    for label, forms in answer.variants().items():
        readable = [(f, lp) for f in forms if (lp := logprobs.get(f)) is not None]
        for form, lp in readable:
            # A log-probability is <= 0 (a little slack for rounding); NaN or a positive value means a
            # broken backend answer: fail the item with the reason rather than score it (or overflow).
            if not lp <= _LOGPROB_SLACK:
                raise ScoringError(f"invalid log-probability {lp!r} for {form!r}")
        out[label] = math.fsum(math.exp(lp) for _, lp in readable)
    return out


def topk_rating(probs: Mapping[str, float], k: int = 3) -> float:
    """Paper's top-K rating weighting over integer labels ("0", "1", ...); ties keep the lower rating first."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    ranked = sorted(((p, int(lab)) for lab, p in probs.items() if p > 0), key=lambda t: (-t[0], t[1]))[:k]
    total = math.fsum(p for p, _ in ranked)
    if not ranked or total <= 0:
        raise ScoringError("no probability on any rating label")
    return math.fsum(r * p for p, r in ranked) / total


def expected_rating(probs: Mapping[str, float]) -> float:
    """Probability-weighted mean over every integer label in ``probs`` (all labels of the scale)."""
    if any(p < 0 for p in probs.values()):
        raise ValueError("probabilities must be non-negative")
    total = math.fsum(probs.values())
    if total <= 0:
        raise ScoringError("no probability on any rating label")
    return math.fsum(int(lab) * p for lab, p in probs.items()) / total


#: A rating rule: (label probabilities, top_k) -> score.
RatingRule = Callable[[Mapping[str, float], int], float]

#: Scoring rules for rating answers by name (the methods' ``rule`` setting). ``topk`` is the default.
RULES: dict[str, RatingRule] = {"topk": topk_rating,
                                "expected": lambda probs, _k: expected_rating(probs)}  # every label counts: no k
DEFAULT_RULE = "topk"


def goodness(p_yes: float, p_no: float) -> float:
    """p(yes) / (p(yes) + p(no))."""
    if p_yes < 0 or p_no < 0:
        raise ValueError("probabilities must be non-negative")
    if p_yes + p_no <= 0:
        raise ScoringError("no probability on 'yes' or 'no'")
    return p_yes / (p_yes + p_no)


def score_distribution(
    logprobs: Mapping[str, float | None], answer: AnswerType, top_k: int = 3, rule: str = DEFAULT_RULE
) -> tuple[float, dict[str, float]]:
    """Score one distribution with the rating rule ``rule`` (see RULES): returns (score, label
    probabilities). Raises ScoringError if no label has probability, UnknownNameError for a bad rule."""
    if rule not in RULES:
        raise UnknownNameError("scoring rule", rule, RULES)
    probs = label_probs(logprobs, answer)
    if isinstance(answer, Rating):
        return RULES[rule](probs, top_k), probs
    if isinstance(answer, YesNo):
        return goodness(probs["yes"], probs["no"]), probs
    raise TypeError(f"unknown answer type {answer!r}")
