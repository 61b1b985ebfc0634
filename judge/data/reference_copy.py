"""Rated responses that are (nearly) one of the item's references.

On four benchmark sets some rated replies are a reference: the original human reply, which is also the
set's reference, on Topical-USR, Persona-USR and DailyDialog-Zhao, and two generic model replies that equal
one of the item's references on DailyDialog-Gupta. A reference-based
scorer gives those items its top score and people rate them high, so it gains on them for free. The
harness flags such items on every row and reports each reference-based correlation a second time
without them; this module decides which items they are.

Texts are compared after normalising: lower case, punctuation removed, white space folded.
``response_is_reference``: the normalised response equals a normalised reference.
``response_near_reference``: otherwise, the token-level similarity (``difflib`` ratio over the
normalised word sequences, 2·matches / total length) with some reference is at least
:data:`NEAR_COPY` (0.9): a reference with a word changed, dropped or added in a reply of ten words
or more, typically a re-tokenised or re-typed copy.
"""

from __future__ import annotations

import difflib
import unicodedata

from .items import Item

#: Flag of an item whose response equals one of its references (normalised).
IS_REFERENCE = "response_is_reference"
#: Flag of an item whose response is a near copy of one of its references.
NEAR_REFERENCE = "response_near_reference"
#: Token similarity from which a response counts as a near copy of a reference.
NEAR_COPY = 0.9


def normalise(text: str) -> list[str]:
    """Lower-cased words with punctuation removed (``"Cash, credit card?"`` -> ``["cash", "credit", "card"]``)."""
    kept = "".join(" " if unicodedata.category(ch).startswith("P") else ch for ch in text.lower())
    return kept.split()


def reference_copy(item: Item) -> str | None:
    """:data:`IS_REFERENCE`, :data:`NEAR_REFERENCE` or None for a turn-level item with references."""
    if item.level != "turn" or not item.references or not (item.response or "").strip():
        return None
    response = normalise(item.response or "")
    refs = [normalise(r) for r in item.references]
    if not response:
        return None
    if any(r == response for r in refs):
        return IS_REFERENCE
    best = max(difflib.SequenceMatcher(None, response, r, autojunk=False).ratio() for r in refs)
    return NEAR_REFERENCE if best >= NEAR_COPY else None
