"""The order items are shown to raters in, and each item's sampling probability.

The order is a random draw without replacement, seeded, so that the same items, weights and seed give the
same order again (a restarted labeller resumes in it). Uniform by default: every item has probability
1/N. Active selection weights each item (by the judge's uncertainty on it, :func:`uncertainty_weights`)
and draws items one after another with chance proportional to their weights among those left (the
Efraimidis-Spirakis keys ``u ** (1 / w)``, sorted). Each label records its item's ``probability``, the
item's weight over the sum of all weights (its chance on the first draw), so that an estimate can weight
labels by its inverse; a floor keeps every item's weight above zero, so none is unreachable and no
inverse is infinite.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import InputError
from ..records.rows import Row

ORDERS = ("uniform", "uncertainty")
#: The smallest weight an item gets under uncertainty order, as a share of the largest possible (1).
FLOOR = 0.1


@dataclass(frozen=True)
class Order:
    """Item ids in the order shown, with each id's sampling probability; ``kind`` and ``seed`` made it."""

    ids: tuple[str, ...]
    probability: Mapping[str, float]
    kind: str
    seed: int

    positions: Mapping[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "positions", {i: p for p, i in enumerate(self.ids)})


def uniform_order(ids: Sequence[str], seed: int) -> Order:
    """A seeded uniform shuffle: each of the N items has probability 1/N."""
    _check_unique(ids)
    perm = np.random.default_rng(seed).permutation(len(ids))
    return Order(tuple(ids[i] for i in perm), {i: 1 / len(ids) for i in ids}, "uniform", seed)


def weighted_order(ids: Sequence[str], weights: Mapping[str, float], seed: int, kind: str = "uncertainty") -> Order:
    """A seeded draw without replacement with chance proportional to ``weights`` (each > 0)."""
    _check_unique(ids)
    w = np.array([weights[i] for i in ids], dtype=float)
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError("weights must be finite and positive")
    u = np.random.default_rng(seed).random(len(ids))
    keys = np.log(u) / w  # log of u ** (1 / w): the largest keys come first
    order = sorted(range(len(ids)), key=lambda k: (-keys[k], k))
    total = float(w.sum())
    return Order(tuple(ids[k] for k in order), {i: float(x) / total for i, x in zip(ids, w, strict=True)}, kind, seed)


def _check_unique(ids: Sequence[str]) -> None:
    if not ids:
        raise InputError("no items to label", field="INPUT")
    seen: set[str] = set()
    for i in ids:
        if i in seen:
            raise InputError(f"item id {i!r} appears twice: labels are joined by id", record=i, field="id")
        seen.add(i)


def uncertainty(label_probs: Mapping[str, float | None]) -> float:
    """The judge's uncertainty on one item: the entropy of its answer distribution over its labels, as a share
    of the largest possible (0: one label certain; 1: all equally likely)."""
    p = np.array([v for v in label_probs.values() if v is not None and v > 0], dtype=float)
    if len(label_probs) < 2 or p.sum() <= 0:
        return 0.0
    p = p / p.sum()
    return float(-(p * np.log(p)).sum() / math.log(len(label_probs)))


def uncertainty_weights(rows: Sequence[Row], path: str, floor: float = FLOOR) -> dict[str, float]:
    """Each item's weight from a rows file: ``floor + (1 - floor) * uncertainty``, its rows' mean uncertainty
    (several seeds or methods scored it). A row without label probabilities (a failed item, a method that
    reads none) cannot say how unsure the judge was: InputError naming it."""
    by_id: dict[str, list[float]] = defaultdict(list)
    for n, row in enumerate(rows, 1):
        if not row.label_probs:
            raise InputError("a row without label probabilities: --order uncertainty needs the judge's answer "
                             "distribution on every item (a method that reads label probabilities, no failed row)",
                             file=path, record=n, field="label_probs")
        by_id[row.id].append(uncertainty(row.label_probs))
    return {i: floor + (1 - floor) * float(np.mean(u)) for i, u in by_id.items()}
