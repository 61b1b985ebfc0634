"""Conversations shared across registered sets, so that one conversation lands in one half everywhere.

Several registered sets rate the same conversations: FED-Turn cuts its turns from the FED-Dial
dialogs (every FED-Turn context is a prefix of one), the original releases (``fed``, ``usr-*``,
``gupta-csv``) hold the same items as their DSTC10 copies, and the three DailyDialog sets (Zhao,
Gupta, GRADE) each sampled the DailyDialog test dialogues, a few of them the same ones. Each set's
loader groups its own items (``Item.group``); a split that hashed those groups set by set would put a
conversation in the dev half of one set and the test half of another, so a choice made on one set's
dev half could have read another set's test conversations, and ``lodo`` weights learned on one set
would have seen the scored set's conversations.

:func:`link_conversations` therefore sets ``Item.conversation`` on the items of a registered set:
the groups of the sets of its :data:`FAMILIES` entry are joined across sets when their texts meet
by the loaders' two rules -- one item's context is a turn-wise prefix of another's turns (texts as
loaded), or two items share a pair of consecutive turns (compared without case, spaces or punctuation,
since the copies tokenise differently: ``do n't`` / ``don't``) at different distances from their
starts or, long enough, both at the start -- and every
item of a joined component is named after the component's group in the family's first set present
(its *anchor*: FED-Dial for FED, whose dialogs hold the whole conversations). The split hashes that
name (:func:`judge.datasets.split.conversation_of`), so the anchor's halves stay as they were and the
other sets' items follow their conversation. Items no other set shares keep ``conversation`` None and
split by their group as before.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ..items import Item

#: Registered sets drawn from one corpus, anchor first. Sets in one entry may share conversations;
#: sets in different entries were checked not to (docs/harness.md, "Development and test halves").
#: persona-zhao and convai2-grade (PersonaChat / ConvAI2) are not shipped, so nothing is known of them.
FAMILIES: tuple[tuple[str, ...], ...] = (
    ("fed-dial", "fed-turn", "fed"),
    ("dailydialog-zhao", "dailydialog-gupta", "dailydialog-grade", "gupta-csv"),
    ("topical-usr", "usr-topical"),
    ("persona-usr", "usr-persona"),
)

#: Two items of different sets that open with the same two turns share a conversation when those
#: turns hold this many letters and digits together: "Hi!" / "Hi there." opens many unrelated ones.
MIN_OPENING_PAIR = 40

Node = tuple[str, str]  # (set name, group)
_cache: dict[tuple[object, ...], dict[Node, str]] = {}


def family_of(name: str) -> tuple[str, ...]:
    """The registered sets that may share conversations with ``name`` (itself included, anchor first)."""
    return next((f for f in FAMILIES if name in f), (name,))


def normalised(text: str) -> str:
    """A turn's text for comparisons across sets: lower case, letters and digits only."""
    return re.sub(r"[\W_]+", "", text.casefold())


def link_conversations(name: str, items: Sequence[Item], data_dir: str | Path) -> None:
    """Set ``conversation`` on the items of registered set ``name`` (in place) from the conversations
    it shares with the other sets of its family whose files are under ``data_dir``."""
    family = family_of(name)
    if len(family) < 2:
        return
    links = family_links(family, data_dir)
    for it in items:
        it.conversation = links.get((name, it.group or f"item:{it.id}"))


def family_links(family: tuple[str, ...], data_dir: str | Path) -> dict[Node, str]:
    """(set, group) -> shared conversation name for every group that meets a group of another set of
    ``family`` (read from ``data_dir``); cached by the files' paths, sizes and times."""
    from .benchmarks import dataset_info

    paths = [(n, Path(data_dir) / dataset_info(n).path) for n in family]
    present = [(n, p) for n, p in paths if p.is_file()]
    key = (family, *((str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for _, p in present))
    if key not in _cache:
        _cache[key] = shared_conversations({n: _load_unlinked(n, p) for n, p in present}, family)
    return _cache[key]


def _load_unlinked(name: str, path: Path) -> list[Item]:
    from . import load_items
    from .benchmarks import dataset_info

    return load_items(path, format=dataset_info(name).format, dataset=name)


def shared_conversations(sets: Mapping[str, Sequence[Item]], order: Sequence[str]) -> dict[Node, str]:
    """The cross-set components of the sets' groups (see the module doc), each group named after the
    smallest group of the component's first set in ``order``; groups no other set shares are absent."""
    parent: dict[Node, Node] = {}

    def find(x: Node) -> Node:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: Node, b: Node) -> None:
        parent[find(a)] = find(b)

    nodes: list[tuple[Node, Item]] = [((n, it.group or f"item:{it.id}"), it) for n, its in sets.items() for it in its]
    for node, _ in nodes:
        find(node)
    for a, b in _prefix_links(nodes) + _pair_links(nodes):
        union(a, b)
    components: dict[Node, list[Node]] = {}
    for node in parent:
        components.setdefault(find(node), []).append(node)
    rank = {n: i for i, n in enumerate(order)}
    out: dict[Node, str] = {}
    for members in components.values():
        if len({s for s, _ in members}) < 2:
            continue
        anchor = min(members, key=lambda m: (rank.get(m[0], len(rank)), m[0], m[1]))
        for m in members:
            out[m] = anchor[1]
    return out


def _sequences(item: Item, exact: bool = False) -> list[tuple[str, ...]]:
    """The turns an item shows (normalised, or only stripped when ``exact``): context + response,
    context + each reference, or the dialog."""
    text = str.strip if exact else normalised
    ctx = tuple(text(t.text) for t in (item.context if item.level == "turn" else item.dialog))
    if item.level != "turn":
        return [ctx]
    ends = ([item.response] if item.response else []) + list(item.references)
    return [ctx + (text(e),) for e in dict.fromkeys(ends)] or [ctx]


def _prefix_links(nodes: Iterable[tuple[Node, Item]]) -> list[tuple[Node, Node]]:
    """Rule 1 across sets: a turn item's whole context (no turn blank) starts another set's item's turns,
    text for text as the loaders compare them (FED-Turn and FED-Dial hold the same texts; ignoring case
    and punctuation here would join the Mitsuku conversations that open alike)."""
    nodes = list(nodes)
    contexts: dict[tuple[str, ...], list[Node]] = {}
    for node, it in nodes:
        ctx = tuple(t.text.strip() for t in it.context)
        if it.level == "turn" and ctx and all(ctx):
            contexts.setdefault(ctx, []).append(node)
    out = []
    for node, it in nodes:
        for seq in _sequences(it, exact=True):
            for k in range(1, len(seq) + 1):
                out += [(node, other) for other in contexts.get(seq[:k], ()) if other[0] != node[0]]
    return out


def _pair_links(nodes: Iterable[tuple[Node, Item]]) -> list[tuple[Node, Node]]:
    """Rule 2 across sets: two consecutive (non-empty) turns in common, at different positions, or both
    opening their items with ``MIN_OPENING_PAIR`` characters or more between them. Elsewhere a pair at
    one position is no evidence: FED's Mitsuku answers "how are you" with the same long canned line in
    many conversations, at the same turn."""
    where: dict[tuple[str, str], dict[int, set[Node]]] = {}
    for node, it in nodes:
        for seq in _sequences(it):
            for pos, (a, b) in enumerate(itertools.pairwise(seq)):
                if a and b:
                    where.setdefault((a, b), {}).setdefault(pos, set()).add(node)
    out = []
    for (a, b), by_pos in where.items():
        here = set().union(*by_pos.values())
        if len({s for s, _ in here}) < 2:  # a pair within one set is its loader's business
            continue
        if len(by_pos) > 1 or (set(by_pos) == {0} and len(a) + len(b) >= MIN_OPENING_PAIR):
            first = min(here)
            out += [(first, other) for other in here if other != first]
    return out
