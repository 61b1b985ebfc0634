"""What ``judge estimate`` reads, made into the statistics' inputs (:mod:`judge.stats.estimate`): scored rows or
``judge compare``'s pair rows as scored units (group, conversation, the judge's score), and a labels file
joined to them by item id.

Pairs: a pair counts as labelled when both of its replies carry a label (each the mean of its raters'); the human
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

from collections.abc import Collection, Sequence

import numpy as np

from ..core.errors import InputError
from ..records.grouping import conversation, field_value
from ..records.labels import Label, latest_labels
from ..records.pair_rows import PairRow
from ..records.rows import Row
from ..stats.estimate import Joined, Scored


def scored_rows(rows: Sequence[Row], by: str = "system") -> Scored:
    """Rows grouped by ``by`` (:func:`field_value`: a row without the field is an error) and resampled by
    :func:`conversation`, as every other report over rows groups and resamples them."""
    return Scored([r.id for r in rows], [field_value(r, by) for r in rows], [conversation(r) for r in rows],
                  [r.score for r in rows], rows[0].quality if rows else None)


def item_labels(labels: Sequence[Label], quality: str | None, known: Collection[str], file: str,
                elsewhere: Collection[str] = ()) -> tuple[dict[str, list[Label]], int, int]:
    """Each labelled item's labels of ``quality`` (each rater's latest), checked, the number of raters, and the
    number of labelled items skipped as in ``elsewhere`` (the rows of a results folder's other cells) only: a
    results folder's labels serve all its cells, so a cell may have none of them (none left but some skipped)."""
    per_item: dict[str, list[Label]] = {}
    raters: set[str | None] = set()
    outside: set[str] = set()
    for one in latest_labels(list(labels)).values():
        if quality is None or quality not in one.scores:
            continue
        if one.id not in known and one.id in elsewhere:
            outside.add(one.id)
            continue
        if one.id not in known:
            raise InputError(f"labelled item {one.id!r} is not in the rows", file=file, record=one.id, field="id")
        if one.probability is not None and not 0 < one.probability <= 1:
            raise InputError(f"probability must be in (0, 1], got {one.probability}", file=file, record=one.id,
                             field="probability")
        per_item.setdefault(one.id, []).append(one)
        raters.add(one.rater)
    if not per_item and not outside:
        raise InputError(f"no label of quality {quality!r}", file=file, field="scores")
    return per_item, len(raters), len(outside)


def mean_label(labels: Sequence[Label], quality: str) -> float:
    """An item's label: the mean of its raters' ratings."""
    return float(np.mean([one.scores[quality] for one in labels]))


def join_labels(ids: Sequence[str], labels: Sequence[Label], quality: str | None, file: str,
                elsewhere: Collection[str] = ()) -> Joined:
    """The labels of ``quality`` joined to the rows ``ids``: raters averaged per item, probabilities inverted; a
    label of an item in ``elsewhere`` (another cell's rows) only is skipped and counted."""
    index = {r: i for i, r in enumerate(ids)}
    per_item, n_raters, outside = item_labels(labels, quality, index, file, elsewhere)
    with_p = {i for i, ls in per_item.items() if ls[0].probability is not None}
    if with_p and len(with_p) != len(per_item):
        raise InputError(f"{len(with_p)} labelled items carry a sampling probability and {len(per_item) - len(with_p)}"
                         " do not: an estimate needs every probability or none (a uniform random sample)",
                         file=file, field="probability")
    label = np.full(len(ids), np.nan)
    weight = np.zeros(len(ids))
    for item, ls in per_item.items():
        label[index[item]] = mean_label(ls, quality)  # type: ignore[arg-type]
        p = ls[0].probability
        weight[index[item]] = 1.0 if p is None else 1.0 / p
    return Joined(label, weight, n_raters, bool(with_p), outside)


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


def join_pair_labels(pairs: Sequence[PairRow], labels: Sequence[Label], quality: str | None, file: str,
                     elsewhere: Collection[str] = ()) -> Joined:
    """Each pair's human verdict for the first system (name order) from its two items' labels. A label of an item
    in ``elsewhere`` (another cell's rows) and in no pair, such as a system the pairs leave out, is skipped and
    counted."""
    items = {x for p in pairs for x in (p.item_a, p.item_b)}
    per_item, n_raters, outside = item_labels(labels, quality, items, file, elsewhere)
    if any(ls[0].probability is not None for ls in per_item.values()):
        raise InputError("win rates take a uniform random sample of labelled items: labels with a sampling "
                         "probability are not supported for pair rows", file=file, field="probability")
    label = np.full(len(pairs), np.nan)
    for i, p in enumerate(pairs):
        if p.item_a in per_item and p.item_b in per_item:
            a, b = mean_label(per_item[p.item_a], quality), mean_label(per_item[p.item_b], quality)  # type: ignore[arg-type]
            verdict = 1.0 if a > b else 0.0 if a < b else 0.5
            label[i] = 1.0 - verdict if _flipped(p) else verdict
    return Joined(label, np.isfinite(label).astype(float), n_raters, False, outside)


def verdicts_from_rows(pairs: Sequence[PairRow]) -> Joined:
    """The pair rows' own human ratings as the labels (``--labels-from-rows``): every pair rated on both sides."""
    label = np.full(len(pairs), np.nan)
    for i, p in enumerate(pairs):
        if p.human_a is not None and p.human_b is not None:
            verdict = 1.0 if p.human_a > p.human_b else 0.0 if p.human_a < p.human_b else 0.5
            label[i] = 1.0 - verdict if _flipped(p) else verdict
    return Joined(label, np.isfinite(label).astype(float), 0, False)
