"""``bm25-context``, ``bm25-response``, ``bm25-context-response``: the pool items most similar to the
test item by BM25 (Okapi, ``rank_bm25.BM25Okapi`` with its defaults k1=1.5, b=0.75, epsilon=0.25).

Text per field: ``context`` is the context turns (turn level) or the whole dialog (dialog level),
``response`` the response (turn level) or the system's turns (dialog level), ``context-response``
both joined. Tokens: the text lowercased and split on everything that is not a letter or digit
(whitespace and punctuation; "don't" -> "don", "t"). The index over a pool is built once and reused
for every query on that pool; ties in score are broken by pool order (earlier first).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence

from ..data.items import Item
from ..data.qualities import Quality
from .base import Selector
from .guard import eligible

FIELDS = {"bm25-context": "context", "bm25-response": "response", "bm25-context-response": "context-response"}

_TOKEN = re.compile(r"[^\W_]+")


def tokenize(text: str) -> list[str]:
    """Lowercase, then split on whitespace and punctuation (runs of letters/digits are tokens)."""
    return _TOKEN.findall(text.lower())


def field_text(item: Item, field: str) -> str:
    """The text BM25 compares on for ``field`` ("context", "response" or "context-response")."""
    if field == "context":
        return item.context_text()
    if field == "response":
        return item.response_text()
    if field == "context-response":
        return item.context_text() + "\n" + item.response_text()
    raise ValueError(f"unknown BM25 field {field!r}")


class _Index:
    """BM25 over one pool's field texts."""

    def __init__(self, pool: Sequence[Item], field: str) -> None:
        from rank_bm25 import BM25Okapi

        self.docs = [tokenize(field_text(it, field)) for it in pool]
        # rank_bm25 divides by the mean document length: a pool of empty texts has no index.
        self.bm25 = BM25Okapi(self.docs) if any(self.docs) else None

    def scores(self, query: list[str]) -> list[float]:
        if self.bm25 is None or not query:
            return [0.0] * len(self.docs)
        return [float(s) for s in self.bm25.get_scores(query)]


class BM25Selector(Selector):
    """Top-k allowed pool items by BM25 score of the test item's field text against theirs."""

    def __init__(self, name: str, *, seed: int = 0, group_guard: bool = True, order: str = "ascending") -> None:
        super().__init__(seed=seed, group_guard=group_guard, order=order)
        self.name = name
        self.field = FIELDS[name]
        # Indexes by pool identity (the ids, in order): a handful of pools per run at most.
        self._indexes: OrderedDict[tuple[str, ...], _Index] = OrderedDict()

    def index(self, pool: Sequence[Item]) -> _Index:
        """The pool's index, built on first use and cached (keyed by the pool's ids in order)."""
        key = tuple(it.id for it in pool)
        idx = self._indexes.get(key)
        if idx is None:
            idx = _Index(pool, self.field)
            self._indexes[key] = idx
            while len(self._indexes) > 4:
                self._indexes.popitem(last=False)
        return idx

    def scores(self, item: Item, pool: Sequence[Item]) -> list[float]:
        """BM25 score of every pool item against ``item`` (pool order)."""
        return self.index(pool).scores(tokenize(field_text(item, self.field)))

    def rank(self, item: Item, pool: Sequence[Item], k: int, quality: Quality | None = None) -> list[Item]:
        if k <= 0 or not pool:
            return []
        scores = self.scores(item, pool)
        order = sorted(eligible(item, pool, self.group_guard), key=lambda i: (-scores[i], i))
        return [pool[i] for i in order[:k]]

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "field": self.field}


def create(name: str, *, seed: int = 0, group_guard: bool = True, order: str = "ascending",
           **_unused: object) -> BM25Selector:
    """Registry factory (one per field: ``bm25-context``, ``bm25-response``, ``bm25-context-response``)."""
    return BM25Selector(name, seed=seed, group_guard=group_guard, order=order)
