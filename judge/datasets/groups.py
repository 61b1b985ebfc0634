"""Conversation groups found from hashes of the turn texts, so that a file of any size is grouped in little
memory (the rule itself is :func:`judge.datasets._common.assign_groups`'s, which runs through here).

Each item adds, as 64-bit hashes (blake2b of the text), its turn sequence's prefixes, the consecutive turn
pairs it shows and where they stand, and the sha1 its group would be named by; the texts themselves are
not kept. Matching then runs over sorted arrays (numpy) and a union-find, so an item costs a few dozen
bytes, whether the items are in memory (a loader) or streamed from a file that is read again for the
rows (``judge score`` on a large file). Where two different sequences of the same length tie for a
group's name, the texts of those few items are asked for (``texts``) and compared as the rule says.
Two different texts share a 64-bit hash with a probability of about n²/2⁶⁵ (a few in ten million for
a million items), which would only join two conversations' groups.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from ..data.items import Item
from .contexts import context_texts


def _h(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


def _h2(a: int, b: int) -> int:
    return int.from_bytes(hashlib.blake2b(a.to_bytes(8, "little") + b.to_bytes(8, "little"), digest_size=8).digest(),
                          "little")


def _name(basis: str) -> int:
    """The first 64 bits of the sha1 a group is named by (``conv:`` and its first 16 hex digits)."""
    return int(hashlib.sha1(basis.encode("utf-8", "surrogatepass")).hexdigest()[:16], 16)


def shown_sequences(item: Item) -> list[tuple[str, ...]]:
    """Turn texts an item shows (and so could leak as an example): context + response, context + each
    reference (for turn items), or the dialog. Empty responses add no turn."""
    if item.level != "turn":
        return [context_texts(item)]
    ctx = context_texts(item)
    ends = ([item.response] if item.response else []) + list(item.references)
    return [ctx + (end,) for end in dict.fromkeys(ends)] or [ctx]


class GroupIndex:
    """Items added one at a time (in file order); :meth:`names` gives each its group (see the module docstring)."""

    def __init__(self) -> None:
        self.n = 0
        self._length = array("l")
        self._full = array("Q")  # hash of (level, whole sequence); 0 for an empty one
        self._digest = array("Q")  # the group name's sha1 bits, were this item's sequence the shortest
        self._ctx = (array("Q"), array("q"))  # turn items' whole contexts: (hash, index)
        self._prefix = (array("Q"), array("q"))  # every non-empty prefix of a sequence: (hash, index)
        self._pairs = (array("Q"), array("l"), array("q"))  # consecutive turns shown: (hash, position, index)
        self._ids: dict[int, str] = {}  # items without a sequence: their ids (a lone one is its own group)
        self._links: dict[int, str] = {}

    def add(self, item: Item, link: str | None = None) -> None:
        i = self.n
        self.n += 1
        seq = context_texts(item)
        hashes = [_h(t) for t in seq]
        prefix = 0
        for h in hashes:
            prefix = _h2(prefix, h)
            self._prefix[0].append(prefix)
            self._prefix[1].append(i)
        self._length.append(len(seq))
        self._full.append(_h2(prefix, 1 if item.level == "turn" else 2) if seq else 0)
        self._digest.append(_name("\x1e".join(seq)) if seq else 0)
        if not seq:
            self._ids[i] = item.id
        elif item.level == "turn":
            self._ctx[0].append(prefix)
            self._ctx[1].append(i)
        for shown in shown_sequences(item):
            turn = hashes + [_h(t) for t in shown[len(hashes):]]
            for pos in range(len(shown) - 1):
                self._pairs[0].append(_h2(turn[pos], turn[pos + 1]))
                self._pairs[1].append(pos)
                self._pairs[2].append(i)
        if link is not None:
            self._links[i] = link

    def names(self, texts: Callable[[Sequence[int]], Mapping[int, tuple[str, ...]]]) -> list[str]:
        """Each item's group name, by its position. ``texts(indices)`` gives the turn sequences of the
        items whose texts break a tie (rarely any)."""
        parent = np.arange(self.n, dtype=np.int64)

        def find(x: int) -> int:
            root = x
            while parent[root] != root:
                root = int(parent[root])
            while parent[x] != root:
                parent[x], x = root, int(parent[x])
            return root

        def join(members: Iterable[int]) -> None:
            it = iter(members)
            first = find(next(it))
            for m in it:
                r = find(m)
                if r != first:
                    parent[r] = first

        full = np.frombuffer(self._full, dtype=np.uint64)
        for run in _runs(full, np.flatnonzero(full)):  # rule 1: the same sequence at the same level
            join(run)
        ctx_keys = np.frombuffer(self._ctx[0], dtype=np.uint64)
        ctx_idx = np.frombuffer(self._ctx[1], dtype=np.int64)
        if len(ctx_keys):  # rule 1: a prefix of a sequence that is some turn item's whole context
            keys, first = np.unique(ctx_keys, return_index=True)
            pkeys = np.frombuffer(self._prefix[0], dtype=np.uint64)
            pidx = np.frombuffer(self._prefix[1], dtype=np.int64)
            at = np.clip(np.searchsorted(keys, pkeys), 0, len(keys) - 1)
            hit = keys[at] == pkeys
            for i, j in zip(pidx[hit].tolist(), ctx_idx[first[at[hit]]].tolist(), strict=True):
                join((i, j))
        pair_keys = np.frombuffer(self._pairs[0], dtype=np.uint64)
        pos = np.frombuffer(self._pairs[1], dtype=np.int64)
        pair_idx = np.frombuffer(self._pairs[2], dtype=np.int64)
        for run in _runs(pair_keys, np.arange(len(pair_keys))):  # rule 2: a pair of turns shown at different positions
            if len(np.unique(pos[run])) > 1:
                join(pair_idx[run].tolist())
        if self._links:
            by_key: dict[str, int] = {}
            for i, key in self._links.items():
                join((i, by_key.setdefault(key, i)))
        roots = np.fromiter((find(i) for i in range(self.n)), dtype=np.int64, count=self.n)
        return self._name_components(roots, texts)

    def _name_components(self, roots: np.ndarray, texts: Callable[[Sequence[int]], Mapping[int, tuple[str, ...]]]
                         ) -> list[str]:
        """Each component's name: ``conv:`` + the sha1 of its shortest sequence (ties: the first in text
        order), ``link:`` + its link for a component without any sequence, ``item:`` + the id of a lone
        item without one. Sorted arrays, no structure per component, so a million groups cost little."""
        n = self.n
        if not n:
            return []
        length = np.frombuffer(self._length, dtype=np.int64)
        digest = np.frombuffer(self._digest, dtype=np.uint64)
        key = np.where(length > 0, length, np.iinfo(np.int64).max)  # sequences first, shortest first
        order = np.lexsort((digest, key, roots))
        ordered_roots = roots[order]
        starts = np.flatnonzero(np.r_[True, ordered_roots[1:] != ordered_roots[:-1]])
        sizes = np.diff(np.r_[starts, n])
        first = order[starts]
        # A tie: a member as short as the first but with another sequence.
        tied = (key[order] == np.repeat(key[first], sizes)) & (digest[order] != np.repeat(digest[first], sizes))
        runs = np.repeat(np.arange(len(starts)), sizes)
        tie_runs = np.unique(runs[tied])
        chosen = digest[first].copy()
        if len(tie_runs):
            candidates = {int(r): [int(order[p]) for p in range(starts[r], starts[r] + sizes[r])
                                   if key[order[p]] == key[first[r]]] for r in tie_runs}
            seqs = texts(sorted({i for c in candidates.values() for i in c}))
            for r, members in candidates.items():
                chosen[r] = digest[min(members, key=lambda i: seqs[i])]
        names: list[str] = []
        for r, head in enumerate(first.tolist()):
            if length[head]:
                names.append(f"conv:{int(chosen[r]):016x}")
            elif sizes[r] == 1:
                names.append(f"item:{self._ids[head]}")
            else:  # no member has a sequence: joined by a link; named by the first member's
                lowest = int(order[starts[r]:starts[r] + sizes[r]].min())
                names.append(f"conv:{_name('link:' + self._links.get(lowest, '')):016x}")
        run_of = np.empty(n, dtype=np.int64)
        run_of[order] = runs
        return [names[r] for r in run_of.tolist()]


def _runs(keys: np.ndarray, order: np.ndarray) -> Iterable[list[int]]:
    """Runs of two or more of the positions ``order`` holds whose keys are equal (each run in ``order``'s
    order); runs of one, nearly all of them in a large file, cost nothing."""
    if not len(order):
        return
    ordered = order[np.argsort(keys[order], kind="stable")]
    sorted_keys = keys[ordered]
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    ends = np.r_[starts[1:], len(ordered)]
    for start, end in zip(starts[ends - starts > 1].tolist(), ends[ends - starts > 1].tolist(), strict=True):
        yield ordered[start:end].tolist()
