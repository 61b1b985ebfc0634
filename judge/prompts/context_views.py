"""What of an item a prompt shows: the conversation as given, or the reply without it.

A judge's "yes" mixes two things: how good the reply is on its own (fluent, specific, polite) and how
well it answers this conversation. Asking the same question about the reply with its conversation
removed (``context = "none"``) measures the first alone; an ensemble that subtracts it (a negative
weight) keeps what the conversation adds, a contrast in the way the likelihood PMI contrasts
p(reply | context) with p(reply).
"""

from __future__ import annotations

from dataclasses import replace

from ..data.items import SYSTEM, Item

#: ``given``: the item as it is. ``none``: turn level, the reply with no conversation and no background
#: fact; dialog level, the system's turns alone (the user's removed).
CONTEXT_VIEWS = ("given", "none")


def in_view(item: Item, view: str) -> Item:
    """``item`` as a prompt with ``view`` shows it (the item itself for ``given``; a copy otherwise, with
    the same id, group and labels, so examples, caches and statistics treat it as the same item)."""
    if view == "given":
        return item
    if view != "none":
        raise ValueError(f"context must be one of {', '.join(CONTEXT_VIEWS)}, got {view!r}")
    if item.level == "dialog":
        return replace(item, dialog=tuple(t for t in item.dialog if t.speaker == SYSTEM), fact=None)
    return replace(item, context=(), fact=None)
