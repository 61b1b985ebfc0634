"""Ensembles: a method whose score combines other methods' per-item scores.

Members speak different units (a probability of "yes", an expected 1-5 rating, a word count), so by
default each member's score is turned into its percentile among a fixed *reference* set of items
(``rank-mean``) and the ensemble score is the weighted mean of those percentiles. The reference is
the whole set being scored (a harness cell, the file given to ``judge score``), not the batch in
hand, so an item scores the same whether it is scored alone, in a resumed run or in a full one.
``mean`` averages the raw scores, for members that share a scale.

Weights are given (equal by default; the weighted sum is divided by the sum of their absolute values,
so a negative weight subtracts a member: ``combine = "mean"`` with weights ``[1, -1]`` is half the
difference of two members, a *contrast* such as a prompt's answer minus its answer for the reply alone,
:mod:`judge.prompts.context_views`; an item on which a member of a contrast fails fails) or, with ``fit = "cv"``, learned from the human ratings of the
reference set by cross-validation whose folds never split a conversation, or, with ``fit = "lodo"``,
learned on the other sets of a ``judge run`` experiment (:mod:`judge.scorers.ensemble_fit`): no item
is scored with weights fitted on its own rating.

Members are ordinary methods: their LLM calls go through the same backend pool and SQLite cache, so
an ensemble over methods that already ran costs only cache reads.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from ..core.errors import InputError
from ..data.items import Item
from ..data.qualities import Quality
from .base import Score, Scorer
from .ensemble_fit import FOLDS, complete_rows, cv_weights, fit_weights_report

#: How an ensemble combines its members' scores (a method's ``combine``; engine specs check against these).
COMBINE_RULES = ("rank-mean", "mean")
#: Where an ensemble's weights come from: given (``fixed``), learned by grouped cross-validation on the
#: set being scored (``cv``), or learned on the other sets of a ``judge run`` experiment (``lodo``:
#: leave one dataset out).
FIT_RULES = ("fixed", "cv", "lodo")


@dataclass
class _State:
    """What scoring against one reference needs: each member's scores of the reference items (by id)
    with their sorted values, and the weights (per reference item with ``fit = "cv"``, and the default)."""

    reference: list[Item]
    per_member: list[tuple[dict[str, Score], list[float]]]
    by_item: dict[str, Sequence[float]]
    default: Sequence[float]
    #: The learned weights as results record them (None with given weights).
    fitted: dict[str, object] | None = None


@dataclass(frozen=True)
class TrainingSet:
    """Another set of a ``judge run`` experiment that ``fit = "lodo"`` learns its weights on: its name,
    its items, the quality whose ratings are read, and the members' scorers built for those items."""

    name: str
    items: Sequence[Item]
    quality: Quality
    members: Sequence[Callable[[], Scorer]]


#: How an ensemble gets its members' scores of some items (by item id, one mapping per member): the
#: engine's schedules members of one backend together (:func:`judge.methods.ensemble.score_members`).
MemberScores = Callable[[Sequence[Callable[[], Scorer]], list[Item]], list[dict[str, Score]]]


def one_by_one(makes: Sequence[Callable[[], Scorer]], items: list[Item]) -> list[dict[str, Score]]:
    """Each member built and scored in turn (one model loaded at a time)."""
    return [{s.item_id: s for s in make().score(items)} for make in makes]


def percentile(sorted_ref: Sequence[float], value: float) -> float:
    """Mid-rank percentile of ``value`` among ``sorted_ref`` (in [0, 1]; ties count half)."""
    below = bisect.bisect_left(sorted_ref, value)
    ties = bisect.bisect_right(sorted_ref, value) - below
    return (below + 0.5 * ties) / len(sorted_ref)


class EnsembleScorer(Scorer):
    """Weighted combination of member scorers over a fixed reference set.

    ``members`` are (name, factory) pairs; a factory builds the member's scorer when it is needed, so
    members on different models load one model at a time. ``reference`` None: each ``score`` call's
    own items are the reference (the percentiles then depend on the batch, so callers that score in
    pieces pass the whole set).
    """

    def __init__(
        self,
        name: str,
        members: Sequence[tuple[str, Callable[[], Scorer]]],
        *,
        weights: Sequence[float] | None = None,
        combine: str = "rank-mean",
        reference: Sequence[Item] | None = None,
        fit: str = "fixed",
        quality: Quality | None = None,
        training: Sequence[TrainingSet] = (),
        left_out: Sequence[tuple[str, str]] = (),
        reads: frozenset[str] = frozenset(),
        score_members: MemberScores = one_by_one,
    ) -> None:
        if combine not in COMBINE_RULES:
            raise ValueError(f"combine must be one of {', '.join(COMBINE_RULES)}, got {combine!r}")
        if fit not in FIT_RULES:
            raise ValueError(f"fit must be one of {', '.join(FIT_RULES)}, got {fit!r}")
        if fit == "cv" and quality is None:
            raise ValueError("fit = 'cv' learns weights from human ratings: it needs the quality to read")
        if fit == "lodo" and not training:
            raise InputError("fit = 'lodo' learns the weights on the other sets of a judge run experiment (two "
                             "datasets or more); one file has none: use fit = 'cv' or given weights", field="fit")
        self.name = name
        self.members = list(members)
        self.weights = list(weights) if weights else [1.0] * len(self.members)
        self.combine = combine
        self.reference = list(reference) if reference is not None else None
        self.fit = fit
        self.quality = quality
        self.training = list(training)
        #: Optional members left out of this ensemble on these items (name, why), for the results.
        self.left_out = list(left_out)
        #: The union of what the members read (members are built lazily, so the builder declares it).
        self._reads = frozenset(reads)
        self._score_members = score_members
        #: With ``fit = "lodo"``: the weights learned on the training sets (once scored).
        self.learned: tuple[float, ...] | None = None
        #: With ``fit = "lodo"``: the training sets the fit could not use (name -> why), not trained on.
        self.dropped: dict[str, str] = {}
        self._memo: _State | None = None
        self._last: _State | None = None  # the state of the latest ``score`` call, for ``fitted``

    def describe(self) -> dict[str, object]:
        out: dict[str, object] = {"type": "ensemble", "combine": self.combine, "weights": self.weights,
                                  "members": [n for n, _ in self.members]}
        if self.left_out:
            out["left_out"] = dict(self.left_out)
        if self.fit == "cv":
            out.update(weights="learned", fit=f"cv ({FOLDS} folds by conversation)")
        if self.fit == "lodo":
            out.update(weights=list(self.learned) if self.learned else "learned",
                       fit=f"lodo (fitted on {', '.join(t.name for t in self.training)})")
        return out

    def reads(self) -> frozenset[str]:
        """What any member reads beyond the conversation (an ensemble is as reference-based, and as
        future-reading, as its most demanding member)."""
        return self._reads

    def supervised(self) -> bool:
        """With ``fit = "cv"`` the weights are learned on the ratings of the items it scores."""
        return self.fit == "cv"

    def fitted(self) -> dict[str, object] | None:
        """The weights learned for the latest ``score`` (or ``warm``) call's reference: with ``fit = "cv"`` each
        fold's (its items were scored with them) and the whole reference's (for items outside it);
        with ``fit = "lodo"`` the one vector and the sets it was learned on."""
        return self._last.fitted if self._last is not None else None

    def warm(self) -> None:
        """Score the fixed reference with every member (and fit the weights) now, once."""
        if self.reference is not None:
            self._last = self._reference_state()

    def check(self, items: Sequence[Item]) -> None:
        """Nothing of its own: every member was checked against the items when it was prepared."""
        return None

    def score(self, items: Iterable[Item]) -> Iterator[Score]:
        items = list(items)
        base = self._reference_state() if self.reference is not None else self._state(items)
        self._last = base
        ref_by_id = {it.id: it for it in base.reference}
        # An item is a reference item only if it is the same item, not merely the same id: a served
        # request may reuse an id of the reference file for a different reply.
        extra = [it for it in items if ref_by_id.get(it.id) != it]
        fresh = self._score_members([make for _, make in self.members], extra) if extra else [{} for _ in self.members]
        extra_ids = {it.id for it in extra}
        for item in items:
            if item.id in extra_ids:
                scores = [(fresh_m[item.id], ref) for fresh_m, (_, ref) in zip(fresh, base.per_member, strict=True)]
                weights = base.default
            else:
                scores = [(by_id[item.id], ref) for by_id, ref in base.per_member]
                weights = base.by_item.get(item.id, base.default)
            yield self._combine(item, scores, weights)

    def _reference_state(self) -> _State:
        """The fixed reference's member scores and weights, computed once per scorer: a service or a
        resumed cell scoring a few items at a time does not re-score the whole reference each call."""
        assert self.reference is not None
        if self._memo is None:
            self._memo = self._state(self.reference)
        return self._memo

    def _state(self, reference: list[Item]) -> _State:
        per_member = self._members_scores([make for _, make in self.members], reference)
        names = [n for n, _ in self.members]
        if self.fit == "cv":
            by_fold, folds, everyone = self._cv(reference, per_member)
            fitted: dict[str, object] = {
                "fit": "cv", "members": names, "folds": [list(w) for w in by_fold],
                "fold_items": [folds.count(f) for f in range(FOLDS)], "whole_reference": list(everyone)}
            by_item: dict[str, Sequence[float]] = {it.id: by_fold[f] for it, f in zip(reference, folds, strict=True)}
            return _State(reference, per_member, by_item, everyone, fitted)
        if self.fit == "lodo":
            learned = self._other_sets_weights()
            fitted = {"fit": "lodo", "members": names, "weights": list(learned),
                      "trained_on": [t.name for t in self.training if t.name not in self.dropped]}
            if self.dropped:
                fitted["dropped"] = dict(self.dropped)
            return _State(reference, per_member, {}, learned, fitted)
        return _State(reference, per_member, {}, self.weights)

    def _other_sets_weights(self) -> tuple[float, ...]:
        """``fit = "lodo"``: the weights with the best mean Spearman over the training sets, each set's
        members ranked among that set (the scored set's ratings are never read)."""
        if self.learned is None:
            sets = []
            for t in self.training:
                per_member = self._members_scores(t.members, list(t.items))
                values = self._values(t.items, per_member)
                sets.append(complete_rows(values, [it.human(t.quality.name) for it in t.items], len(self.members)))
            self.learned, dropped = fit_weights_report(sets, len(self.members))
            self.dropped = {self.training[i].name: why for i, why in dropped.items()}
        return self.learned

    def _cv(self, reference: list[Item], per_member: list[tuple[dict[str, Score], list[float]]]
            ) -> tuple[list[tuple[float, ...]], list[int], tuple[float, ...]]:
        """``fit = "cv"`` on the reference: each fold's weights (fitted without it), each reference
        item's fold, and the weights fitted on the whole reference (for items outside it)."""
        assert self.quality is not None
        values = self._values(reference, per_member)
        human = [it.human(self.quality.name) for it in reference]
        groups = [it.group or it.id for it in reference]
        return cv_weights(values, human, groups, len(self.members))

    def _values(self, items: Sequence[Item], per_member: list[tuple[dict[str, Score], list[float]]]
                ) -> list[list[float | None]]:
        """Items x members: each member's score of each item on the combining scale (None: it failed)."""
        return [[self._value(scores[it.id], ref) for scores, ref in per_member] for it in items]

    def _value(self, s: Score, ref: list[float]) -> float | None:
        """A member's score on the combining scale (its percentile with ``rank-mean``); None if it failed."""
        if not s.ok or s.value is None or (self.combine == "rank-mean" and not ref):
            return None
        return percentile(ref, s.value) if self.combine == "rank-mean" else s.value

    def _members_scores(self, makes: Sequence[Callable[[], Scorer]], reference: list[Item]
                        ) -> list[tuple[dict[str, Score], list[float]]]:
        """Each member's scores of the reference items, and those scores sorted (failures left out)."""
        return [(scores, sorted(s.value for s in scores.values() if s.ok and s.value is not None))
                for scores in self._score_members(makes, reference)]

    def _combine(self, item: Item, per_member: Sequence[tuple[Score, list[float]]],
                 weights: Sequence[float]) -> Score:
        errors: list[str] = []
        used: list[tuple[Score, float, float]] = []  # (score, value, weight)
        for (name, _), w, (s, ref) in zip(self.members, weights, per_member, strict=True):
            value = self._value(s, ref)
            if value is None:
                errors.append(f"{name}: {s.error or 'no score'}")
                continue
            used.append((s, value, w))
        if errors and any(w < 0 for w in weights):
            # A contrast without one of its sides is another quantity, not a weaker estimate of it.
            return Score(item.id, None, error="a member of a contrast (negative weight) failed: " + "; ".join(errors))
        weight = sum(abs(w) for _, _, w in used)
        if weight == 0:  # no member, or only members without weight, scored the item
            return Score(item.id, None, error="every member failed: " + "; ".join(errors))
        total = sum(v * w for _, v, w in used) / weight
        scored = [s for s, _, _ in used]
        flags = tuple(dict.fromkeys(f for s in scored for f in s.flags if f))
        return Score(
            item.id, total,
            estimated=any(s.estimated for s in scored), complete=all(s.complete for s in scored),
            # A combination of fewer members than declared is marked, never passed off as the full one.
            flags=flags + (("member_failed",) if errors else ()),
            n_prompt_tokens=sum(s.n_prompt_tokens for s in scored),
        )
