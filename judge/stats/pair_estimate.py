"""Win rates on the human scale from a pairwise judge (``judge compare`` pair rows) and people's ratings of a
random few of the items: for each pair of systems, the chance that people prefer the first system's reply
(a tie counting half), PPI++ over conversations as :mod:`judge.stats.estimate` does for means.

A pair counts as labelled when both of its replies carry a label (each the mean of its raters'); the human
verdict is 1 when the first reply's label is higher, 0 when lower, 1/2 when equal. If the labelled items are
a uniform random sample of the items, the pairs with both items labelled are a uniform random sample of the
pairs, so the same check and estimator apply. Labels with sampling probabilities are refused here: a pair's
chance of being labelled would be the product of two items' chances only for independent draws, which an
ordered labelling is not.

The systems of a pair are put in name order (``A vs B`` with A before B), and the judge's preference and
the verdict turned to the first system's side, so that each pair of systems is one group whatever order the
judge read them in.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.errors import InputError
from ..records.labels import Label
from ..records.pair_rows import PairRow
from .estimate import Joined, Scored, item_labels, mean_label


def _flipped(pair: PairRow) -> bool:
    return pair.system_b < pair.system_a


def scored_pairs(pairs: Sequence[PairRow]) -> Scored:
    """Each pair as a unit of the group ``A vs B`` (name order), scored by p(A's reply is better)."""
    groups, scores = [], []
    for p in pairs:
        first, second = (p.system_b, p.system_a) if _flipped(p) else (p.system_a, p.system_b)
        groups.append(f"{first} vs {second}")
        pref = p.preference if p.error is None else None
        scores.append(None if pref is None else (1.0 - pref if _flipped(p) else pref))
    return Scored([p.id for p in pairs], groups, [p.group for p in pairs], scores, pairs[0].quality if pairs else None)


def join_pair_labels(pairs: Sequence[PairRow], labels: Sequence[Label], quality: str | None, file: str) -> Joined:
    """Each pair's human verdict for the first system (name order) from its two items' labels."""
    items = {x for p in pairs for x in (p.item_a, p.item_b)}
    per_item, n_raters = item_labels(labels, quality, items, file)
    if any(ls[0].probability is not None for ls in per_item.values()):
        raise InputError("win rates take a uniform random sample of labelled items: labels with a sampling "
                         "probability are not supported for pair rows", file=file, field="probability")
    label = np.full(len(pairs), np.nan)
    for i, p in enumerate(pairs):
        if p.item_a in per_item and p.item_b in per_item:
            a, b = mean_label(per_item[p.item_a], quality), mean_label(per_item[p.item_b], quality)  # type: ignore[arg-type]
            verdict = 1.0 if a > b else 0.0 if a < b else 0.5
            label[i] = 1.0 - verdict if _flipped(p) else verdict
    return Joined(label, np.isfinite(label).astype(float), n_raters, False)


def verdicts_from_rows(pairs: Sequence[PairRow]) -> Joined:
    """The pair rows' own human ratings as the labels (``--labels-from-rows``): every pair rated on both sides."""
    label = np.full(len(pairs), np.nan)
    for i, p in enumerate(pairs):
        if p.human_a is not None and p.human_b is not None:
            verdict = 1.0 if p.human_a > p.human_b else 0.0 if p.human_a < p.human_b else 0.5
            label[i] = 1.0 - verdict if _flipped(p) else verdict
    return Joined(label, np.isfinite(label).astype(float), 0, False)
