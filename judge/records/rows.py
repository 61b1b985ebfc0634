"""The per-item row: one schema for every output (``judge score``, ``judge bench``, ``judge run`` cell
files, ``judge serve`` responses), with fixed key order and float rounding so identical runs write
byte-identical files."""

from __future__ import annotations

import math
from typing import Any

from ..data.items import Item
from ..data.reference_copy import reference_copy
from ..scorers.base import Score

#: Decimal places of every float in a row.
DIGITS = 6

#: Row keys, in the order they are written.
ROW_KEYS = ("id", "method", "seed", "quality", "human", "score", "label_probs", "examples", "flags", "estimated",
            "complete", "error", "system", "group", "n_prompt_tokens")
#: The key after ROW_KEYS in the rows of items whose file carried metadata (``Item.meta``), and only in them.
META_KEY = "meta"
#: Keys after those in the rows of a method that reasons first (``reason = N``), and only in them, so that every
#: other method's rows stay as they were: what the judge said (capped at RATIONALE_CHARS, with its full
#: length), the tokens it generated, and the sampled completions whose answer could not be read.
REASON_KEYS = ("rationale", "rationale_chars", "n_generated_tokens", "unparsed")
#: The longest rationale a row holds (a rationale is the judge's, not data: a reader needs its gist).
RATIONALE_CHARS = 2000


def rounded(x: float | None) -> float | None:
    """``x`` rounded to DIGITS places; None for None and non-finite values (JSON has no NaN)."""
    if x is None or not math.isfinite(x):
        return None
    return round(float(x), DIGITS)


def item_flags(item: Item) -> list[str]:
    """Odd but legitimate properties of the input that a reader of the scores should see: the item's
    own (``Item.flags``, e.g. an empty response) and a response that is (nearly) one of its references
    (``response_is_reference`` / ``response_near_reference``, see judge.data.reference_copy)."""
    copy = reference_copy(item)
    return list(item.flags) + ([copy] if copy else [])


def item_row(item: Item, score: Score, method: str, quality: str | None, seed: int | None = None) -> dict[str, Any]:
    """One per-item record.

    ``estimated`` marks scores read from sampled answers (no log-probabilities); ``complete`` is false
    when the backend returned only its top-N tokens, so a label spelling outside them counted as 0.
    ``group`` is the conversation the leakage guard used (omitted for plain same-context groups).
    ``seed`` is the selection seed of LLM methods (None for classic scorers). A method that reasons first
    adds :data:`REASON_KEYS` (``rationale`` None where the item failed); an item with metadata adds ``meta``.
    """
    human = item.human(quality) if quality is not None else None
    row: dict[str, Any] = {
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
    if item.meta:
        row[META_KEY] = dict(item.meta)
    said = score.said
    if said is not None:
        row.update(rationale=said.rationale[:RATIONALE_CHARS] if score.error is None else None,
                   rationale_chars=len(said.rationale), n_generated_tokens=said.n_generated, unparsed=said.unparsed)
    return row
