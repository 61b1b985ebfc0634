"""Pairs of replies to one context: what a pairwise judge compares (:mod:`judge.scorers.pairwise`).

Two replies answer *the same context* when their items have the same turns before them and the same
background fact: :func:`judge.data.alternatives.context_key`, the one notion the listwise prompts use too
(Topical-USR repeats a conversation with another fact, and those are other contexts). Pairs come from
the data people have:

* one file holding several systems' replies to each context (the DSTC10 sets, a log of A/B traffic):
  :func:`pairs_within` pairs the replies of different ``system`` s within each context, every two systems
  or each system against a ``baseline``;
* two files, one per system (``judge compare old.jsonl new.jsonl``): :func:`pairs_between` pairs them item
  by item, by matching ids, or where the ids differ by matching contexts;
* a set whose records *are* pairs with a human preference each (PandaLM, LLMBar:
  :mod:`judge.datasets.pair_sets`): :func:`pairs_within` pairs exactly the two replies of each record, and
  the pair carries the record's label (:class:`PairLabel`: the preferred side per annotator, ties where the
  set has them, or one gold side).

Bad pairing is bad input, named by file and record before any model loads: an item without a system, a
dialog-level item (a dialog has no context shared with another), ids or contexts that do not match across
two files, a file where no context has two systems. A file of one system per context (or of dialogs only)
is a :class:`~judge.core.errors.MissingInputError`, a property of the set: ``judge run`` lists a ``[[compare]]``
cell on such a set as skipped. In a file that has pairs, a context with one system's replies, and a
dialog-level item, is left out and counted (:attr:`Pairing.notes`), never silently.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import InputError, MissingInputError
from .alternatives import context_key
from .items import Item, conversation_of


def context_id(item: Item) -> str:
    """A short stable name of an item's context (:func:`judge.data.alternatives.context_key`), for rows."""
    return "ctx:" + hashlib.sha1(context_key(item).encode("utf-8", "surrogatepass")).hexdigest()[:16]


#: ``Item.meta`` keys of an item of a response-pair set: the record it belongs to (both its replies share it)
#: and how the set labels its pairs (:data:`LABEL_KINDS`).
PAIR_KEY = "labelled_pair"
LABEL_KEY = "label_kind"
#: The quality whose ratings hold each annotator's vote on a reply of a pair: 1 preferred, 0 not, 0.5 a tie.
PREFERRED = "preferred"
#: ``annotators``: several people each gave a side or a tie, the label is their majority; ``gold``: one label.
LABEL_KINDS = ("annotators", "gold")
#: What one vote or label says: the pair's first reply is better, the second, or neither (a tie).
SIDES = ("a", "b", "tie")


@dataclass(frozen=True)
class PairLabel:
    """The human preference on one pair: each annotator's vote (``a``, ``b`` or ``tie``), in the file's
    order, and how the set means them (:data:`LABEL_KINDS`). The label a judge is scored against is
    :attr:`side`: the gold vote, or the annotators' majority (a tie when most voted tie; None when no side
    has a majority, which three annotators and three answers allow)."""

    votes: tuple[str, ...]
    kind: str = "annotators"

    @property
    def side(self) -> str | None:
        """The label: the gold side, else the side more than half the annotators chose (else None)."""
        if self.kind == "gold":
            return self.votes[0]
        for s in SIDES:
            if 2 * self.votes.count(s) > len(self.votes):
                return s
        return None


@dataclass(frozen=True)
class Pair:
    """Two replies to one context: ``a`` by ``system_a`` and ``b`` by ``system_b``. Which one a prompt shows
    first is the judge's business (both orders by default), not the pair's. ``label``: the human preference
    where the set gives one per pair (:class:`PairLabel`), else None."""

    a: Item
    b: Item
    system_a: str
    system_b: str
    label: PairLabel | None = None

    @property
    def id(self) -> str:
        """``<id of a> vs <id of b>``, or the id both share (two files matched by id)."""
        return self.a.id if self.a.id == self.b.id else f"{self.a.id} vs {self.b.id}"

    @property
    def context(self) -> str:
        """The context both replies answer (:func:`context_id`)."""
        return context_id(self.a)

    @property
    def group(self) -> str:
        """The conversation the pair belongs to, which bootstraps resample (``conversation_of`` its first
        item: the name shared across registered sets, else its group)."""
        return conversation_of(self.a)


@dataclass
class Pairing:
    """The pairs found, the contexts they come from, and the contexts left out with a single system."""

    pairs: list[Pair]
    systems: list[str]
    #: Contexts with a reply of one system only (nothing to compare), left out.
    single: int = 0
    notes: list[str] = field(default_factory=list)


def _check_turn_level(items: Sequence[Item], file: str) -> None:
    for it in items:
        if it.level != "turn":
            raise MissingInputError("a dialog-level item has no context shared with another reply: pairs compare "
                                    "replies to one context (turn-level items: context + response)", file=file,
                                    record=it.id, field="dialog")


def pairs_within(items: Sequence[Item], *, file: str, systems: Sequence[str] | None = None,
                 baseline: str | None = None) -> Pairing:
    """The pairs of one file: within each context (in file order), the replies of every two different
    systems (systems in their order of first appearance in the file, the earlier one as ``a``), or with a
    ``baseline`` each other system's replies (``a``) against the baseline's (``b``). ``systems`` keeps only
    those systems. Two replies of one system to one context are both compared with the others. Dialog-level
    items and contexts with one system's replies are left out and counted (:attr:`Pairing.notes`); a file
    with nothing left to compare is refused."""
    dialogs = sum(1 for it in items if it.level != "turn")
    items = [it for it in items if it.level == "turn"]
    for it in items:
        if not it.system:
            raise MissingInputError("comparing the systems of one file needs each item's 'system' (or compare two "
                                    "files, one per system: judge compare A.jsonl B.jsonl)", file=file,
                                    record=it.id, field="system")
    known = list(dict.fromkeys(str(it.system) for it in items))
    wanted = _chosen(systems, baseline, known, file)
    if any(PAIR_KEY in it.meta for it in items):
        return _declared_pairs(items, wanted, baseline, known, file, dialogs)
    by_context: dict[str, list[Item]] = {}
    for it in items:
        if str(it.system) in wanted:
            by_context.setdefault(context_key(it), []).append(it)
    rank = {s: i for i, s in enumerate(known)}
    pairs: list[Pair] = []
    single = 0
    for replies in by_context.values():
        found = _context_pairs(replies, rank, baseline)
        single += not found
        pairs.extend(found)
    if not pairs:
        what = f"baseline '{baseline}' and another system" if baseline else "two systems"
        where = "only dialog-level items (a dialog shares no context with another reply)" if not items else (
            f"no context has replies of {what} (one system per context)")
        raise MissingInputError(f"{where}: nothing to compare", file=file, record=items[0].id if items else None,
                                field="system" if items else "dialog")
    used = {s for p in pairs for s in (p.system_a, p.system_b)}
    notes = [f"{n} {what} left out: {why}" for n, what, why in (
        (single, "contexts" if single != 1 else "context", "replies of one system only, nothing to compare"),
        (dialogs, "dialog-level items" if dialogs != 1 else "dialog-level item",
         "a dialog shares no context with another reply")) if n]
    return Pairing(pairs, [s for s in known if s in used], single, notes=notes)


def _declared_pairs(items: Sequence[Item], wanted: set[str], baseline: str | None, known: list[str], file: str,
                    dialogs: int) -> Pairing:
    """The pairs of a response-pair set: the two items of each record (``meta["labelled_pair"]``), the first as ``a``,
    with the record's label; of the chosen systems (with a ``baseline``, the pairs that hold it)."""
    records: dict[Any, list[Item]] = {}
    for it in items:
        if PAIR_KEY not in it.meta:
            raise InputError("the file pairs its replies record by record, and this item names no pair", file=file,
                             record=it.id, field=f"meta.{PAIR_KEY}")
        records.setdefault(it.meta[PAIR_KEY], []).append(it)
    pairs = []
    for key, two in records.items():
        if len(two) != 2:
            raise InputError(f"pair {key} has {len(two)} replies, not two", file=file, record=two[0].id,
                             field=f"meta.{PAIR_KEY}")
        a, b = two
        sa, sb = str(a.system), str(b.system)
        if not {sa, sb} <= wanted or (baseline is not None and baseline not in (sa, sb)):
            continue
        pairs.append(Pair(a, b, sa, sb, pair_label(a, b, file)))
    if not pairs:
        raise MissingInputError("no pair of the file is between the systems chosen: nothing to compare", file=file,
                                field="--systems")
    used = {s for p in pairs for s in (p.system_a, p.system_b)}
    notes = [f"{dialogs} dialog-level item{'s' if dialogs != 1 else ''} left out: a dialog shares no context with "
             "another reply"] if dialogs else []
    return Pairing(pairs, [s for s in known if s in used], notes=notes)


def pair_label(a: Item, b: Item, file: str) -> PairLabel | None:
    """The human preference on the pair (a, b) of a response-pair set, from each reply's votes
    (``annotations["preferred"]``, one per annotator, the two replies' summing to 1) and the set's kind of
    label (``meta["label_kind"]``); None where neither reply carries votes."""
    va, vb = a.annotations.get(PREFERRED), b.annotations.get(PREFERRED)
    if va is None and vb is None:
        return None
    if va is None or vb is None or len(va) != len(vb) or any(abs(x + y - 1.0) > 1e-9 for x, y in zip(va, vb)):
        raise InputError(f"the two replies' votes ({va} and {vb}) do not split each annotator's preference between "
                         "them (1 and 0, or 0.5 each for a tie)", file=file, record=a.id, field=PREFERRED)
    kind = str(a.meta.get(LABEL_KEY, "annotators"))
    if kind not in LABEL_KINDS:
        raise InputError(f"expected one of {', '.join(LABEL_KINDS)}, got {kind!r}", file=file, record=a.id,
                         field=f"meta.{LABEL_KEY}")
    votes = tuple("a" if x == 1.0 else "b" if x == 0.0 else "tie" if x == 0.5 else "" for x in va)
    if "" in votes or not votes or (kind == "gold" and (len(votes) != 1 or votes[0] == "tie")):
        raise InputError(f"expected votes of 1, 0 or 0.5 (a gold label: one vote, no tie), got {va}", file=file,
                         record=a.id, field=PREFERRED)
    return PairLabel(votes, kind)


def label_fields(pair: Pair) -> dict[str, Any]:
    """The pair row's keys for the human label (only where the pair has one): ``label`` (the side it is scored
    against, or None), ``label_kind`` and ``votes`` (per annotator)."""
    if pair.label is None:
        return {}
    return {"label": pair.label.side, "label_kind": pair.label.kind, "votes": tuple(pair.label.votes)}


def _chosen(systems: Sequence[str] | None, baseline: str | None, known: list[str], file: str) -> set[str]:
    """The systems to compare (``--systems``, with the ``--baseline``), each checked against the file's."""
    named = [*(systems or ()), *([baseline] if baseline else [])]
    for name in named:
        if name not in known:
            raise InputError(f"no item of the file is by system '{name}' (systems: {', '.join(known)})", file=file,
                             field="--baseline" if name == baseline else "--systems")
    if systems is not None and len(set(systems) | ({baseline} if baseline else set())) < 2:
        raise InputError("name two systems or more to compare", field="--systems")
    return set(systems) | ({baseline} if baseline else set()) if systems is not None else set(known)


def _context_pairs(replies: Sequence[Item], rank: dict[str, int], baseline: str | None) -> list[Pair]:
    """The pairs of one context's replies (see :func:`pairs_within`)."""
    out = []
    for i, x in enumerate(replies):
        for y in replies[i + 1:]:
            sx, sy = str(x.system), str(y.system)
            if sx == sy:
                continue
            if baseline is not None:
                if baseline not in (sx, sy):
                    continue
                a, b = (x, y) if sy == baseline else (y, x)
            else:
                a, b = (x, y) if rank[sx] <= rank[sy] else (y, x)
            out.append(Pair(a, b, str(a.system), str(b.system)))
    return out


def pairs_between(items_a: Sequence[Item], items_b: Sequence[Item], *, file_a: str, file_b: str) -> Pairing:
    """The pairs of two files, one system each (named by :func:`system_names`): item by item by
    matching ids when the files share ids (then every id of one must be in the other, with the same
    context), else by matching contexts (each context once in each file)."""
    _check_turn_level(items_a, file_a)
    _check_turn_level(items_b, file_b)
    sa, sb = system_names(file_a, file_b, items_a, items_b)
    ids_b = {it.id: it for it in items_b}
    if any(it.id in ids_b for it in items_a):
        _all_matched(items_a, ids_b, file_a, file_b, "id")
        ids_a = {it.id: it for it in items_a}
        _all_matched(items_b, ids_a, file_b, file_a, "id")
        pairs = []
        for a in items_a:
            b = ids_b[a.id]
            if context_key(a) != context_key(b):
                raise InputError(f"the item with this id in {file_b} answers another context (other turns or "
                                 "background): pairs compare replies to one context", file=file_a, record=a.id,
                                 field="context")
            pairs.append(Pair(a, b, sa, sb))
        return Pairing(pairs, [sa, sb])
    by_a = _one_per_context(items_a, file_a)
    by_b = _one_per_context(items_b, file_b)
    _all_matched(items_a, by_b, file_a, file_b, "context")
    _all_matched(items_b, by_a, file_b, file_a, "context")
    return Pairing([Pair(a, by_b[context_key(a)], sa, sb) for a in items_a], [sa, sb])


def _one_per_context(items: Sequence[Item], file: str) -> dict[str, Item]:
    out: dict[str, Item] = {}
    for it in items:
        key = context_key(it)
        if key in out:
            raise InputError(f"two items of the file answer this context ({out[key].id} and {it.id}) and the ids "
                             "differ from the other file's: match the files by id", file=file, record=it.id,
                             field="context")
        out[key] = it
    return out


def _all_matched(items: Iterable[Item], other: dict[str, Item], file: str, other_file: str, by: str) -> None:
    """Every item of ``file`` has its match in ``other`` (by ``id`` or by ``context``); else the first that
    has none, named."""
    for it in items:
        key = it.id if by == "id" else context_key(it)
        if key not in other:
            what = "no item with this id" if by == "id" else "no item answering this context (no id matches either)"
            raise InputError(f"{other_file} has {what}: two files are compared item by item", file=file,
                             record=it.id, field="id" if by == "id" else "context")


def system_names(file_a: str, file_b: str, items_a: Sequence[Item] = (), items_b: Sequence[Item] = ()
                 ) -> tuple[str, str]:
    """Names for the systems of two files: the ``system`` every item of each file names, when each file names
    one and the two differ; else the files' stems, or their paths where the stems are equal."""
    named = [{it.system for it in items} for items in (items_a, items_b)]
    if all(len(n) == 1 and None not in n for n in named) and named[0] != named[1]:
        return str(next(iter(named[0]))), str(next(iter(named[1])))
    a, b = Path(file_a).stem, Path(file_b).stem
    return (a, b) if a != b else (str(Path(file_a).with_suffix("")), str(Path(file_b).with_suffix("")))


def sample_contexts(pairs: Sequence[Pair], n: int | None, seed: int) -> list[Pair]:
    """The pairs of ``n`` contexts drawn with a seeded RNG (every context for None), kept in order."""
    contexts = list(dict.fromkeys(p.context for p in pairs))
    if n is None or n >= len(contexts):
        return list(pairs)
    keep = {contexts[i] for i in random.Random(seed).sample(range(len(contexts)), n)}
    return [p for p in pairs if p.context in keep]
