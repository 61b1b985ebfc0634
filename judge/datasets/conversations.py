"""The registered sets' conversations, found by their texts: the corpus index every loaded item is named by.

Several registered sets rate the same conversations: FED-Turn cuts its turns from the FED-Dial dialogs
(every FED-Turn context is a prefix of one), the original releases (``fed``, ``usr-*``, ``gupta-csv``)
hold the same items as their DSTC10 copies, and the three DailyDialog sets (Zhao, Gupta, GRADE) each
sampled the DailyDialog test dialogues, a few of them the same ones. Each set's loader groups its own
items (``Item.group``); a split that hashed those groups set by set would put a conversation in the dev
half of one set and the test half of another, so a choice made on one set's dev half would have read
another set's test conversations, and ``lodo`` weights learned on one set would have seen the scored
set's conversations.

:func:`conversation_names` therefore joins the groups of the registered sets of one corpus (the sets'
records say which: :mod:`judge.datasets.benchmarks`) when their texts meet by one of three rules:

- **prefix**: one item's whole context is a turn-wise prefix of another set's item's turns (texts as
  loaded: FED-Turn and FED-Dial hold the same texts; ignoring case and punctuation here would join the
  Mitsuku conversations that open alike);
- **pair**: two items of different sets share a pair of consecutive turns (compared without case, spaces
  or punctuation, since the copies tokenise differently: ``do n't`` / ``don't``) at different distances
  from their starts or, both at the start, with ``MIN_OPENING_PAIR`` letters or more between them;
- **window**: a set that cuts short windows out of longer dialogues (DailyDialog-Zhao, the GRADE sets)
  has an item whose context opens with a turn of ``MIN_WINDOW_TURN`` letters or more that another item
  of the corpus shows after its first turn (a later context turn or a reference, never a system's
  reply, which may be retrieved from any dialogue): the window continues that item's dialogue. One
  shared turn is enough here, where a pair is not found: GRADE's two-turn windows overlap another
  window or a DailyDialog-Gupta reference by a single turn (an interview and a "sheet with a hole"
  dialogue of Gupta's sample, an aisle-seat dialogue inside GRADE's). Only windows open this way: a
  stock greeting that opens many conversations ("hello, how are you today?") never links two of them.

Every group of a joined component is named after the component's group in its corpus' first set present
(its *anchor*: FED-Dial for FED, whose dialogs hold the whole conversations); every other group keeps
its own name. :func:`write_index` writes the names with the items' content fingerprints, and with the
pieces of their contexts (:mod:`judge.datasets.contexts`), to ``conversations.json``
(:mod:`judge.datasets.identity`), which every loaded item is named by, so the
split of a registered set is a fixed function of its texts: the same wherever its file lies, whatever it
is called and whichever other registered files are present.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.components import components
from ..core.io import atomic_write_text
from ..data.items import Item
from .benchmarks import DATASETS, corpus_sets, dataset_info, indexed
from .contexts import index_entry, known_sequences
from .formats import load_items
from .groups import shown_sequences
from .identity import INDEX, INDEX_FORMAT, fingerprint, halves_digest, normalised

#: Two items of different sets that open with the same two turns share a conversation when those
#: turns hold this many letters and digits together: "Hi!" / "Hi there." opens many unrelated ones.
MIN_OPENING_PAIR = 40
#: A window joins the dialogue another item shows when the turn it opens with holds this many letters and
#: digits ("anything wrong with it?" is 19; "here you are" and "can i help you" are common text).
MIN_WINDOW_TURN = 16
#: The rules that join conversations across items (see the module doc); the halves of earlier versions
#: are reproduced with fewer: none before the sets were joined at all, prefix and pair before windows.
RULES = ("prefix", "pair", "window")

Node = tuple[str, str]  # (set name, group)


def node_of(name: str, item: Item) -> Node:
    """An item's group in a set, the unit the rules join."""
    return (name, item.group or f"item:{item.id}")


def load_unidentified(name: str, data_dir: str | Path) -> list[Item]:
    """A registered set's items as its loader gives them (the index is built from these)."""
    info = dataset_info(name)
    return load_items(Path(data_dir) / info.path, format=info.format, dataset=info.name, identified=False)


def conversation_names(sets: Mapping[str, Sequence[Item]], rules: Sequence[str] = RULES) -> dict[Node, str]:
    """(set, group) -> the name of its conversation, for every group of ``sets`` (registered set name ->
    its unidentified items): the groups each rule joins within a corpus are named after their anchor's
    (see the module doc), every other group after itself."""
    unknown = sorted(set(rules) - set(RULES))
    if unknown:
        raise ValueError(f"unknown rules {unknown}; known: {RULES}")
    out: dict[Node, str] = {}
    for corpus in dict.fromkeys(DATASETS[n].corpus for n in sets):
        order = [n for n in corpus_sets(corpus) if n in sets]
        nodes = [(node_of(n, it), it) for n in order for it in sets[n]]
        out.update(_components(nodes, order, rules))
    return out


def _components(nodes: list[tuple[Node, Item]], order: Sequence[str], rules: Sequence[str]) -> dict[Node, str]:
    links = {"prefix": _prefix_links, "pair": _pair_links, "window": _window_links}
    rank = {n: i for i, n in enumerate(order)}
    out: dict[Node, str] = {}
    for members in components((node for node, _ in nodes), (ln for rule in rules for ln in links[rule](nodes))):
        anchor = min(members, key=lambda m: (rank[m[0]], m[0], m[1]))
        for m in members:
            out[m] = anchor[1]
    return out


def _sequences(item: Item, exact: bool = False) -> list[tuple[str, ...]]:
    """The turns an item shows (normalised, or only stripped when ``exact``): context + response,
    context + each reference, or the dialog."""
    text = str.strip if exact else normalised
    return [tuple(map(text, shown)) for shown in shown_sequences(item)]


def _prefix_links(nodes: Iterable[tuple[Node, Item]]) -> list[tuple[Node, Node]]:
    """Rule "prefix" across sets: a turn item's whole context (no turn blank) starts another set's item's
    turns, text for text as the loaders compare them (FED-Turn and FED-Dial hold the same texts; ignoring
    case and punctuation here would join the Mitsuku conversations that open alike)."""
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
    """Rule "pair" across sets: two consecutive (non-empty) turns in common, at different positions, or both
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


def later_turns(item: Item) -> list[str]:
    """The corpus' own turns an item shows after its first: later context turns and the references (the
    dialogue's next turn among them), or a dialog's later turns; never the rated reply."""
    turns = [t.text for t in (item.context if item.level == "turn" else item.dialog)][1:]
    return turns + (list(item.references) if item.level == "turn" else [])


def window_opening(item: Item) -> str | None:
    """The normalised turn a window opens with, when it is long enough to tell its dialogue apart."""
    if item.level != "turn" or not item.context:
        return None
    first = normalised(item.context[0].text)
    return first if len(first) >= MIN_WINDOW_TURN else None


def _window_links(nodes: Iterable[tuple[Node, Item]]) -> list[tuple[Node, Node]]:
    """Rule "window" (within and across sets): a window of a set that cuts windows opens with a turn another
    item shows later (see the module doc)."""
    nodes = list(nodes)
    openings: dict[str, set[Node]] = {}
    for node, it in nodes:
        first = window_opening(it) if DATASETS[node[0]].windows else None
        if first is not None:
            openings.setdefault(first, set()).add(node)
    out = []
    for node, it in nodes:
        for text in map(normalised, later_turns(it)):
            out += [(node, other) for other in sorted(openings.get(text, ())) if other != node]
    return out


#: The sets whose conversations the halves' digest reads (:func:`judge.datasets.identity.index_digest`): those
#: registered when committed run summaries began to record it. A set registered later joins no conversation
#: of theirs under a new name (tests/test_set_reliable_eval.py checks it), so their halves and the digest stay;
#: its own halves are pinned item by item (tests/test_split.py).
DIGEST_SETS = ("fed-turn", "fed-dial", "topical-usr", "persona-usr", "dailydialog-zhao", "dailydialog-gupta",
               "dailydialog-grade", "empathetic-grade", "persona-zhao", "convai2-grade", "fed", "usr-topical",
               "usr-persona", "gupta-csv")


def present_sets(data_dir: str | Path) -> list[str]:
    """The registered sets of an indexed corpus (:func:`judge.datasets.benchmarks.indexed`) whose files are under
    ``data_dir``, in the records' order."""
    return [n for n, d in DATASETS.items() if indexed(d.corpus) and (Path(data_dir) / d.path).is_file()]


def build_index(data_dir: str | Path, rules: Sequence[str] = RULES) -> dict[str, Any]:
    """The content of ``conversations.json`` for the registered files under ``data_dir``: per conversation
    name the fingerprints of its items, and per set its file's sha256 and counts (what the index was built
    from). A few fingerprints belong to two conversations (two Mitsuku conversations open with the same
    canned exchange, "Hi!" in one, "Hi" in the other): their items are told apart by the rest of their
    group (:func:`judge.datasets.identity.identify`)."""
    sets = {n: load_unidentified(n, data_dir) for n in present_sets(data_dir)}
    names = conversation_names(sets, rules)
    conversations: dict[str, set[str]] = {}
    digested: dict[str, set[str]] = {}
    members: dict[str, list[Item]] = {}
    for n, items in sets.items():
        for it in items:
            conversations.setdefault(names[node_of(n, it)], set()).add(fingerprint(it))
            members.setdefault(names[node_of(n, it)], []).append(it)
            if n in DIGEST_SETS:
                digested.setdefault(names[node_of(n, it)], set()).add(fingerprint(it))
    contexts = {name: index_entry(known_sequences(its)) for name, its in sorted(members.items())}
    about = {n: {"sha256": hashlib.sha256((Path(data_dir) / DATASETS[n].path).read_bytes()).hexdigest(),
                 "items": len(items), "conversations": len({names[node_of(n, it)] for it in items})}
             for n, items in sets.items()}
    return {"format": INDEX_FORMAT, "version": 2, "rules": list(rules),
            "about": "the registered sets' conversations by content (item fingerprints) and by context (hashes "
                     "of their contexts' pieces, judge.datasets.contexts); written by "
                     "judge.datasets.conversations.write_index from the files listed in 'sets'",
            "sets": about, "halves_digest": halves_digest(digested), "conversations": {name: sorted(fps) for name, fps in sorted(conversations.items())},
            "contexts": {name: seqs for name, seqs in contexts.items() if seqs}}


#: The index's keys that map each conversation to a list, written one conversation per line.
PER_CONVERSATION = ("conversations", "contexts")


def index_text(index: Mapping[str, Any]) -> str:
    """The index as its file holds it: one conversation per line, so a change reads as a short diff."""
    head = {k: v for k, v in index.items() if k not in PER_CONVERSATION}
    lines = [json.dumps(head, indent=1)[:-2] + ","]
    blocks = [key for key in PER_CONVERSATION if key in index]
    for b, key in enumerate(blocks):
        lines.append(f" {json.dumps(key)}: {{")
        entries = list(index[key].items())
        lines += [f"  {json.dumps(name)}: {json.dumps(values)}{',' if i < len(entries) - 1 else ''}"
                  for i, (name, values) in enumerate(entries)]
        lines.append(" }" + ("," if b < len(blocks) - 1 else ""))
    return "\n".join(lines) + "\n}\n"


def write_index(data_dir: str | Path, path: str | Path = INDEX) -> dict[str, Any]:
    """Build the index from ``data_dir`` and write it (atomically); returns it. Run it when a registered
    set, a loader or a rule changes: ``python -c "from judge.datasets.conversations import write_index;
    write_index('../shared/data')"``; the tests fail until the committed file equals what it writes."""
    index = build_index(data_dir)
    atomic_write_text(path, index_text(index))
    return index
