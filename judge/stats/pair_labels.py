"""A pairwise judge scored against the human label of each pair (sets that label their pairs: PandaLM, LLMBar).

The pair rows of such a set carry ``label`` (the side the humans preferred: ``a``, ``b``, ``tie``, or None
where the annotators have no majority), ``label_kind`` (``gold`` or ``annotators``) and ``votes`` (each
annotator's side): :func:`judge.data.pairs.label_fields`. From them, over the pairs with a label:

* **accuracy**: each order's verdict read against the label, averaged over the orders read (the LLMBar
  paper's accuracy, which averages the original and the swapped order: ``correct_average`` of its
  ``statistics.json``), with its CI and the p of "no better than a coin" (.5);
* **right in both orders**: the share of pairs whose two verdicts are both right (``correct_both``);
* **positional agreement**: the share of pairs whose two orders give the same verdict (``equal``: the
  consistency of the position figures, over the labelled pairs);
* **verdict accuracy**: the pair's verdict (both orders agree, else a tie) against the label;
* where the label can be a tie (PandaLM's majority), ties are a label of their own: only a tie verdict
  matches one (a template without a tie label cannot), and **accuracy on decided pairs** gives the accuracy
  over the pairs whose label is a side;
* with several annotators, the **human-human agreement**: per pair, the share of the annotator pairs that
  gave the same answer (a tie an answer like the others), averaged over the pairs: the ceiling a judge is
  set beside, and the **judge-human agreement** on the same footing: per pair, the share of the annotators
  whose answer the judge's verdict equals.

Every interval is the summary's bootstrap over conversations (the instructions), as for every other figure
of :mod:`judge.stats.pairwise`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np


class Bootstrap(Protocol):
    """The summary's bootstrap over conversations (:mod:`judge.stats.pairwise`, which calls these figures)."""

    def mean(self, x: np.ndarray, mask: np.ndarray, null: float | None = None) -> dict[str, Any]: ...


class LabelledOrder(Protocol):
    """What these figures read of one order a pair was read in: its verdict."""

    @property
    def winner(self) -> str: ...


class LabelledRow(Protocol):
    """What these figures read of a pair row (:class:`judge.records.pair_rows.PairRow`, which sits above
    them): the verdicts and the human label."""

    @property
    def winner(self) -> str | None: ...
    @property
    def consistent(self) -> bool | None: ...
    @property
    def orders(self) -> Sequence[LabelledOrder]: ...
    @property
    def label(self) -> str | None: ...
    @property
    def label_kind(self) -> str | None: ...
    @property
    def votes(self) -> Sequence[str] | None: ...


def has_labels(rows: Sequence[LabelledRow]) -> bool:
    """Whether the rows come from a set that labels its pairs."""
    return any(r.label_kind is not None for r in rows)


def _order_credit(row: LabelledRow) -> float:
    """The share of a pair's orders whose verdict is its label."""
    orders = row.orders
    return sum(o.winner == row.label for o in orders) / len(orders) if orders else float("nan")


def _human_human(votes: Sequence[str]) -> float:
    pairs = list(itertools.combinations(votes, 2))
    return sum(x == y for x, y in pairs) / len(pairs) if pairs else float("nan")


def label_figures(rows: Sequence[LabelledRow], boot: Bootstrap) -> dict[str, Any] | None:
    """The figures of the module docstring over ``rows`` (the summary's compared pairs); None without labels."""
    if not has_labels(rows):
        return None
    label = [r.label for r in rows]
    labelled = np.array([x is not None for x in label])
    decided = np.array([x in ("a", "b") for x in label])
    both = labelled & np.array([len(r.orders) == 2 for r in rows])
    credit = np.array([_order_credit(r) if x is not None else np.nan for r, x in zip(rows, label)])
    right_both = np.array([float(c == 1.0) for c in credit])
    verdict = np.array([float(r.winner == x) for r, x in zip(rows, label)])
    agree = np.array([float(bool(r.consistent)) for r in rows])
    kinds = sorted({str(r.label_kind) for r in rows if r.label_kind is not None})
    out: dict[str, Any] = {
        "kind": kinds[0] if len(kinds) == 1 else "mixed",
        "n_labelled": int(labelled.sum()), "n_without_majority": int((~labelled).sum()),
        "n_tie_labels": int(sum(x == "tie" for x in label)),
        "accuracy": boot.mean(credit, labelled, 0.5) if labelled.any() else None,
        "both_orders": boot.mean(right_both, both) if both.any() else None,
        "positional_agreement": boot.mean(agree, both) if both.any() else None,
        "verdict": boot.mean(verdict, labelled) if labelled.any() else None,
    }
    if out["n_tie_labels"]:
        out["decided"] = boot.mean(credit, decided, 0.5) if decided.any() else None
    votes = [list(r.votes or ()) for r in rows]
    voted = np.array([len(v) >= 2 for v in votes])
    if voted.any():
        hh = np.array([_human_human(v) if len(v) >= 2 else np.nan for v in votes])
        jh = np.array([sum(r.winner == x for x in v) / len(v) if v else np.nan for r, v in zip(rows, votes)])
        out["n_annotators"] = max(len(v) for v in votes)
        out["human_human"] = boot.mean(hh, voted)
        out["judge_human"] = boot.mean(jh, voted)
    return out
