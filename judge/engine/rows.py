"""The per-item row: one schema for every output (``judge score``, ``judge bench``, ``judge run`` cell
files, ``judge serve`` responses), with fixed key order and float rounding so identical runs write
byte-identical files."""

from __future__ import annotations

import math
from typing import Any

from ..items import Item
from ..scorers.base import Score

#: Decimal places of every float in a row.
DIGITS = 6

#: Row keys, in the order they are written.
ROW_KEYS = ("id", "method", "seed", "quality", "human", "score", "label_probs", "examples", "flags", "estimated",
            "complete", "error", "system", "group", "n_prompt_tokens")


def rounded(x: float | None) -> float | None:
    """``x`` rounded to DIGITS places; None for None and non-finite values (JSON has no NaN)."""
    if x is None or not math.isfinite(x):
        return None
    return round(float(x), DIGITS)


def item_flags(item: Item) -> list[str]:
    """Odd but legitimate properties of the input that a reader of the scores should see (``Item.flags``)."""
    return list(item.flags)


def item_row(item: Item, score: Score, method: str, quality: str | None, seed: int | None = None) -> dict[str, Any]:
    """One per-item record.

    ``estimated`` marks scores read from sampled answers (no log-probabilities); ``complete`` is false
    when the backend returned only its top-N tokens, so a label spelling outside them counted as 0.
    ``group`` is the conversation the leakage guard used (omitted for plain same-context groups).
    ``seed`` is the selection seed of LLM methods (None for classic scorers).
    """
    human = item.human(quality) if quality is not None else None
    return {
        "id": item.id,
        "method": method,
        "seed": seed,
        "quality": quality,
        "human": rounded(human),
        "score": rounded(score.value) if score.error is None else None,
        "label_probs": None if score.label_probs is None else {k: rounded(v) for k, v in score.label_probs.items()},
        "examples": list(score.examples),
        "flags": item_flags(item) + [f for f in score.flags if f],
        "estimated": score.estimated,
        "complete": score.complete,
        "error": score.error,
        "system": item.system,
        "group": item.group if item.group is None or not item.group.startswith("ctx:") else None,
        "n_prompt_tokens": score.n_prompt_tokens,
    }
