"""A conversation is known by its content: the fingerprint every loaded item carries (``Item.conversation``).

Every guard that keeps a conversation on one side reads it: the dev/test split hashes it
(:mod:`judge.datasets.split`), ``lodo`` never learns on a set that shares one with the scored set, a head
refuses items of the conversations it learned from, and two names for one set are told apart from two
sets. A name, a path or a file format says nothing about what a file holds, so none of them decides:

- **Registered sets.** Their conversations are listed once, by content, in ``conversations.json`` beside
  this module (written by :func:`judge.datasets.conversations.write_index` from the registered files and
  checked against them by the tests): every item's content fingerprint with the name of the conversation
  it belongs to across the sets of its corpus (FED-Turn's turns and the FED-Dial dialog they were cut
  from, the original releases and their DSTC10 copies, the DailyDialog sets' shared dialogues). Any file
  holding those items (a release file given by path, a copy, a re-export with other case, spacing or
  punctuation, a JSONL made from them) gets the registered names, so the registered halves and refusals,
  whatever it is called and whatever other files are present.
- **An item of a registered conversation in other words**: a new reply to one of its contexts, its texts
  with speaker labels or turn numbers, its context pasted as lines of one turn or cut to its last turns.
  Its content fingerprint matches nothing, but its context is a run of a registered conversation's (the
  rule: :mod:`judge.datasets.contexts`), and it gets that conversation's name.
- **Other conversations** are named by their own content: the normalised text of the shortest turn
  sequence of the item's group (the loader's conversation grouping), so a copy or re-export of a user's
  file gets the same names as the original.

The fingerprint of an item is a hash of its turns' normalised texts (lower case, letters and digits only:
``do n't`` and ``don't`` are one text), level first; references, facts and speakers are left out, as
exports differ in those.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from ..core.components import components
from ..data.items import Item, conversation_of
from .benchmarks import DATASETS
from .contexts import ContextIndex, context_texts, pieces

#: The registered sets' conversations by content (generated; see the module doc).
INDEX = Path(__file__).with_name("conversations.json")
INDEX_FORMAT = "judge-conversations"


_NOT_TEXT = re.compile(r"[\W_]+")


@lru_cache(maxsize=1 << 16)
def normalised(text: str) -> str:
    """A turn's text for comparisons across files: lower case, letters and digits only (kept for reuse: a
    file's contexts repeat their turns)."""
    return _NOT_TEXT.sub("", text.casefold())


def shown_turns(item: Item) -> tuple[str, ...]:
    """The texts an item shows, in order: its context and its response, or its dialog."""
    if item.level == "turn":
        return (*(t.text for t in item.context), item.response or "")
    return tuple(t.text for t in item.dialog)


def fingerprint(item: Item) -> str:
    """The item's content fingerprint: a hash of its level and its turns' normalised texts."""
    basis = "\x1e".join([item.level, *map(normalised, shown_turns(item))])
    return hashlib.sha256(basis.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@cache
def _index() -> Mapping[str, Any]:
    data = json.loads(INDEX.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("format") != INDEX_FORMAT:
        raise ValueError(f"{INDEX}: not a conversation index")
    return data


@cache
def known_conversations() -> Mapping[str, tuple[str, ...]]:
    """Item fingerprint -> the conversations holding an item of that content, for every item of the
    registered sets (``conversations.json``; one conversation but for a few canned exchanges)."""
    out: dict[str, tuple[str, ...]] = {}
    for name, fps in _index()["conversations"].items():
        for fp in fps:
            out[fp] = (*out.get(fp, ()), name)
    return out


@cache
def known_contexts() -> ContextIndex:
    """The registered conversations' contexts (``conversations.json``, key ``contexts``), which an item whose
    content no registered set holds is matched by (:mod:`judge.datasets.contexts`)."""
    return ContextIndex.from_index(_index().get("contexts", {}))


@cache
def index_digest() -> str:
    """A short digest of the registered sets' conversations (``conversations.json``): the halves of every
    registered set are a fixed function of it, so a run summary that records it says which halves it
    scored (``judge results collect``). It reads the conversations' item fingerprints only: the contexts
    beside them name no registered item otherwise, so adding them moved no half. An index that stores
    ``halves_digest`` gives that: the same digest over the conversations of the sets registered when
    summaries began to record it (:data:`judge.datasets.conversations.DIGEST_SETS`), which a set registered
    later leaves as they were."""
    stored = _index().get("halves_digest")
    if isinstance(stored, str):
        return stored
    return halves_digest(_index()["conversations"])


def halves_digest(conversations: Mapping[str, Iterable[str]]) -> str:
    """The digest of a conversation index's ``conversations`` (name -> item fingerprints)."""
    data = {name: sorted(fps) for name, fps in conversations.items()}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def content_name(items: Sequence[Item]) -> str:
    """The name of a conversation no registered set holds, from its content: a hash of the normalised
    texts of its items' shortest turn sequence (ties: the smallest text), or of the items' fingerprints
    when none shows a turn before its response."""
    seqs = [tuple(map(normalised, context_texts(it))) for it in items]
    nonempty = [s for s in seqs if any(s)]
    if nonempty:
        shortest: tuple[str, ...] = min(nonempty, key=lambda s: (len(s), s))
        basis = "\x1e".join(shortest)
    else:
        basis = "\x1d".join(sorted(map(fingerprint, items)))
    return "conv:" + hashlib.sha1(("text:" + basis).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def identify(items: Iterable[Item], known: Mapping[str, tuple[str, ...]] | None = None,
             contexts: ContextIndex | None = None) -> None:
    """Set ``conversation`` on freshly loaded items (in place): an item a registered set holds gets the name
    of that set's conversation, and so does an item whose context is a run of a registered conversation's
    (:mod:`judge.datasets.contexts`: a new reply, labels in the texts, a context cut short) or, too short
    to name one itself, is continued by the context of an item so named (the opening exchange of a
    conversation whose later turns the file holds too); the other items of its group (the loader's
    grouping: one conversation) follow them; a group no registered set holds is named by its content
    (:func:`content_name`). An item that two registered conversations could hold takes the one its group's
    other items name, else the first by name."""
    known = known_conversations() if known is None else known
    contexts = known_contexts() if contexts is None else contexts
    items = list(items)
    candidates = {id(it): known.get(fingerprint(it)) or contexts.matches(it) for it in items}
    unnamed = [it for it in items if not candidates[id(it)]]
    if unnamed and len(unnamed) < len(items):
        continued = _continued((it, candidates[id(it)][0]) for it in items if len(candidates[id(it)]) == 1)
        for it in unnamed:
            candidates[id(it)] = tuple(sorted(continued.get(pieces(context_texts(it)), ())))
    groups: dict[str, list[Item]] = {}
    for it in items:
        groups.setdefault(it.group or f"item:{it.id}", []).append(it)
    for members in groups.values():
        sure = sorted({c[0] for it in members if len(c := candidates[id(it)]) == 1})
        found = sure or sorted({n for it in members for n in candidates[id(it)]})
        fallback = found[0] if found else content_name(members)
        for it in members:
            mine = candidates[id(it)]
            it.conversation = (mine[0] if len(mine) == 1 else
                               next((n for n in sure if n in mine), min(mine)) if mine else fallback)


def _continued(named: Iterable[tuple[Item, str]]) -> dict[tuple[str, ...], set[str]]:
    """Every proper prefix of the named items' context pieces -> the conversations of the items it begins."""
    out: dict[tuple[str, ...], set[str]] = {}
    for it, name in named:
        seq = pieces(context_texts(it))
        for k in range(1, len(seq)):
            out.setdefault(seq[:k], set()).add(name)
    return out


def may_share(a: str | None, b: str | None) -> bool:
    """Whether sets named ``a`` and ``b`` can hold one conversation: two registered sets only when their records
    name one corpus (a ConvAI query and a DailyDialog one that read "What do you mean ?" have one name by their
    text, not one conversation); a set that is not registered (a user's file) may hold any."""
    known_a, known_b = DATASETS.get(a or ""), DATASETS.get(b or "")
    return known_a is None or known_b is None or known_a.corpus == known_b.corpus


def families(sets: Mapping[str, Iterable[Item]]) -> dict[str, str]:
    """Each set's family: the first (in the mapping's order) of the sets it shares a conversation with
    (:func:`may_share`), directly or through another set. Sets of one family are left out together wherever a
    set must be kept away from what was learned on the others (a head's cross-validation, ``judge fit
    --without-each``)."""
    conversations = {name: set(map(conversation_of, items)) for name, items in sets.items()}
    names = list(sets)
    links = [(a, b) for i, a in enumerate(names) for b in names[:i]
             if may_share(a, b) and conversations[a] & conversations[b]]
    return {name: group[0] for group in components(names, links) for name in group}
