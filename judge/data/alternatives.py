"""Other replies to the same conversation, for prompts that compare (``reads = ["alternatives"]``).

Several rated sets hold several systems' replies to one context (Topical-USR six, DailyDialog-Zhao
about nine, Persona-USR and DailyDialog-Gupta five, DailyDialog-Grade and Empathetic-Grade two;
FED-Turn rates each context once). A judge that sees them side by side can tell a generic or
off-topic reply from the ones that engage, which a reply read alone does not show. The replies shown
are texts only, never their ratings, and every reply of a context sees the same list (its own reply
included, in one fixed order), so the prompts of one context share everything up to the reply they
ask about."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from .items import Item

#: The template read (``reads = ["alternatives"]``) that shows them.
READ = "alternatives"

#: context key (:func:`context_key`) -> the distinct reply texts of that context, in their shown order.
Alternatives = Mapping[str, tuple[str, ...]]


def context_key(item: Item) -> str:
    """What makes two replies answers to the same thing: the same turns before them and the same
    background fact (Topical-USR repeats conversations with another fact). Not the item's group: a
    group may name a whole conversation, whose turns are rated at different points."""
    turns = "\x1e".join(f"{t.speaker}\x1f{t.text}" for t in item.context)
    return f"{turns}\x1d{item.fact or ''}"


def alternatives_by_context(population: Iterable[Item]) -> dict[str, tuple[str, ...]]:
    """The replies of each turn-level context in ``population``: distinct texts, ordered by a hash of
    the text, so that the order says nothing of which system wrote a reply or where it sat in the file."""
    texts: dict[str, set[str]] = {}
    for it in population:
        if it.level == "turn":
            texts.setdefault(context_key(it), set()).add(it.response or "")
    return {key: _ordered(ts) for key, ts in texts.items()}


def lists_for(reads: frozenset[str], population: Iterable[Item]) -> Alternatives | None:
    """The lists a template with these declared ``reads`` shows, drawn from ``population`` (None: it
    declares no ``alternatives`` and shows none)."""
    return alternatives_by_context(population) if READ in reads else None


def alternatives_for(item: Item, by_context: Alternatives | None) -> tuple[str, ...]:
    """The replies ``item``'s prompt shows: those of its context, its own among them (an item whose
    context the population lacks sees its own reply alone). Dialog-level items, and templates that
    show no list (``by_context`` None), have none."""
    if by_context is None or item.level != "turn":
        return ()
    known = by_context.get(context_key(item), ())
    own = item.response or ""
    return known if own in known else _ordered({own, *known})


def _ordered(texts: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(texts, key=lambda t: (hashlib.sha256(t.encode("utf-8")).hexdigest(), t)))
