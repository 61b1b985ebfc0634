"""The ``ensemble`` method type: a score that combines other methods' scores of the same items.

Its members are whole method specs of any other type; it reads what any of them reads, and it is
supervised when it learns its weights on the ratings of the set it scores (``fit = "cv"``). Members
that run on one backend are built together and scored in one prefix-ordered pass
(:func:`score_members`), one model loaded at a time. The combining itself is
:class:`judge.scorers.ensemble.EnsembleScorer`'s.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.errors import InputError, MissingInputError
from ..core.settings import setting
from ..data.items import Item
from ..data.qualities import Quality
from ..engine.build import build, prepare_checked
from ..engine.spec import OTHER_SETS, SCORED_SET, Backends, MethodSpec, MethodType, Prepared, own
from ..scorers.base import Score, Scorer
from ..scorers.ensemble import COMBINE_RULES, FIT_RULES, EnsembleScorer, TrainingSet
from ..scorers.units import run_lanes


@dataclass(frozen=True)
class EnsembleSettings:
    """An ensemble's own settings: its members and how their scores combine."""

    members: tuple[MethodSpec, ...] = setting(
        "the methods combined (each a whole method of another type; TOML: names of the file's other methods)", (),
        flag=None)
    weights: tuple[float, ...] = setting("member weights, in the order of the members (default: equal)", (),
                                         metavar="W,W,...")
    combine: str = setting("rank-mean: mean of each member's percentile among the scored items; mean: mean of raw "
                           "scores (members on one scale)", "rank-mean", choices=COMBINE_RULES)
    fit: str = setting("fixed: the weights (or equal ones); cv: weights learned from the scored items' human ratings "
                       "(--quality) in 5 folds by conversation, no item scored with weights fitted on its own rating; "
                       "lodo (judge run configs only): weights learned on the experiment's other datasets", "fixed",
                       choices=FIT_RULES)
    optional: tuple[str, ...] = setting(
        "members (by name) left out on a set lacking an input they need (a reference, a next user turn), decided "
        "from the data before anything is computed and recorded in the results (CLI: --member ...,optional=true)",
        (), flag=None)


def ensemble_settings(spec: MethodSpec) -> EnsembleSettings:
    """An ensemble spec's own settings."""
    return own(spec, EnsembleSettings)


def kept_weights(prepared: Prepared) -> tuple[float, ...]:
    """An ensemble's given weights for the members it kept on its items (empty: equal weights)."""
    kept = {m.spec.name for m in prepared.members}
    s = ensemble_settings(prepared.spec)
    return tuple(w for m, w in zip(s.members, s.weights) if m.name in kept)


class EnsembleType(MethodType):
    """Members combined by ``combine`` with given, cross-validated (``cv``) or other-set (``lodo``) weights."""

    settings = EnsembleSettings
    docs = "docs/harness.md"
    noun = "ensembles"
    refers_to_methods = True
    cost = "ensemble"

    def foreign(self, key: str, other: str) -> tuple[str, str]:
        return f"members, weights, fit and optional belong to ensembles, not to a {other} method", "members"

    def check(self, spec: MethodSpec) -> None:
        s = ensemble_settings(spec)
        if len(s.members) < 2:
            raise InputError(f"an ensemble needs at least two members, got {len(s.members)}", field="members")
        if any(m.kind.members(m) for m in s.members):
            raise InputError("an ensemble member cannot itself be an ensemble; list its members", field="members")
        names = [m.name for m in s.members]
        if len(set(names)) < len(names):
            raise InputError(f"members are listed twice: {', '.join(names)}", field="members")
        if s.combine not in COMBINE_RULES:
            raise InputError(f"must be one of {', '.join(COMBINE_RULES)}, got {s.combine!r}", field="combine")
        if s.weights and len(s.weights) != len(s.members):
            raise InputError(f"{len(s.weights)} weights for {len(s.members)} members", field="weights")
        if s.weights and not any(s.weights):
            raise InputError("at least one weight must be non-zero", field="weights")
        if s.fit not in FIT_RULES:
            raise InputError(f"must be one of {', '.join(FIT_RULES)}, got {s.fit!r}", field="fit")
        if s.fit != "fixed" and s.weights:
            raise InputError(f"fit = '{s.fit}' learns the weights: give weights or fit, not both", field="weights")
        unknown = [n for n in s.optional if n not in names]
        if unknown:
            raise InputError(f"{', '.join(unknown)} is not a member (members: {', '.join(names)})", field="optional")
        if s.optional and any(w < 0 for w in s.weights):
            raise InputError("a contrast (a negative weight) needs every member on every set: leaving one out would "
                             "score another quantity; drop optional", field="optional")
        if s.optional and s.fit == "lodo":
            raise InputError("fit = 'lodo' learns one weight per member across sets, so every member must score "
                             "every set: drop optional or use fit = 'cv' / given weights", field="optional")

    def default_name(self, spec: MethodSpec) -> str:
        return f"ensemble({'+'.join(m.name for m in ensemble_settings(spec).members)})"

    def describe(self, spec: MethodSpec) -> dict[str, Any]:
        s = ensemble_settings(spec)
        weights: Any = "learned" if s.fit == "cv" else list(s.weights) or [1.0] * len(s.members)
        return {"type": spec.type, "combine": s.combine, "weights": weights,
                **({"fit": s.fit} if s.fit != "fixed" else {}),
                **({"optional": list(s.optional)} if s.optional else {}),
                "members": {m.name: {k: v for k, v in m.describe().items() if k != "paper"}
                            for m in s.members}, "paper": spec.paper}

    def settings_text(self, described: Mapping[str, Any]) -> str:
        weights = described["weights"]  # "learned" with fit = "cv"
        return (f"{described['combine']} ensemble of {', '.join(described['members'])} "
                f"(weights {weights if isinstance(weights, str) else ', '.join(f'{w:g}' for w in weights)})")

    def members(self, spec: MethodSpec) -> tuple[MethodSpec, ...]:
        return ensemble_settings(spec).members

    def check_names(self, spec: MethodSpec) -> None:
        for member in ensemble_settings(spec).members:
            member.kind.check_names(member)

    def reads(self, spec: MethodSpec, quality: Quality | None) -> frozenset[str]:
        return frozenset().union(*(m.kind.reads(m, quality) for m in ensemble_settings(spec).members))

    def supervised(self, spec: MethodSpec) -> bool:
        return self.trained_on(spec) == SCORED_SET or any(m.kind.supervised(m) for m in self.members(spec))

    def trained_on(self, spec: MethodSpec) -> str | None:
        return {"cv": SCORED_SET, "lodo": OTHER_SETS}.get(ensemble_settings(spec).fit)

    def check_served(self, spec: MethodSpec, reference: Sequence[Item] | None) -> None:
        if reference is None:
            raise InputError("an ensemble places each item among a reference set; a service has no file to rank "
                             "against, so give one (--reference-set FILE)", field="--reference-set")
        for member in ensemble_settings(spec).members:
            member.kind.check_served(member, None)

    def from_table(self, table: Mapping[str, Any], defaults: Mapping[str, Any],
                   methods: Mapping[str, MethodSpec]) -> list[dict[str, Any]]:
        """``members`` name other methods of the file."""
        (values,) = super().from_table(table, defaults, methods)
        members = []
        for name in values.get("members", []):
            if not isinstance(name, str) or name not in methods:
                close = difflib.get_close_matches(str(name), list(methods), n=1, cutoff=0.6)
                hint = f"; did you mean '{close[0]}'?" if close else f"; methods: {', '.join(methods)}"
                raise InputError(f"unknown method {name!r}{hint}", field="members")
            members.append(methods[name])
        weights = values.get("weights", [])
        if not all(isinstance(w, int | float) and not isinstance(w, bool) for w in weights):
            raise InputError(f"must be numbers, got {weights!r}", field="weights")
        optional = values.get("optional", [])
        if not all(isinstance(n, str) for n in optional):
            raise InputError(f"must be member names, got {optional!r}", field="optional")
        return [{**values, "members": tuple(members), "weights": tuple(float(w) for w in weights),
                 "optional": tuple(optional)}]

    def prepare(self, spec: MethodSpec, items: Sequence[Item] | None, quality: Quality | None, *,
                pool: Sequence[Item] | None, population: Sequence[Item] | None, seed: int, level: str) -> Prepared:
        if ensemble_settings(spec).fit == "cv" and quality is None:
            raise InputError("fit = 'cv' learns weights from human ratings: name the quality to read (--quality)",
                             field="quality")
        members, left_out = _members(spec, items, quality, pool, population, level)
        prepared = Prepared(spec, quality, seed, members=members, reference=None if items is None else list(items),
                            left_out=left_out)
        if ensemble_settings(spec).weights and not any(kept_weights(prepared)):
            raise InputError(f"only members with weight 0 are left on these items ({', '.join(m.spec.name for m in members)}; "
                             f"left out: {', '.join(n for n, _ in left_out)})", field="weights")
        return prepared

    def build(self, prepared: Prepared, backends: Backends) -> Scorer:
        spec = prepared.spec
        members = [(m.spec.name, MemberFactory(m, backends)) for m in prepared.members]
        training = [TrainingSet(t.label, t.reference or [], t.quality, [MemberFactory(m, backends) for m in t.members])
                    for t in prepared.training if t.quality is not None]
        s = ensemble_settings(spec)
        return EnsembleScorer(spec.name, members, weights=kept_weights(prepared), combine=s.combine,
                              reference=prepared.reference, fit=s.fit, quality=prepared.quality,
                              training=training, left_out=prepared.left_out,
                              reads=self.reads(spec, prepared.quality), score_members=score_members)


def _members(spec: MethodSpec, items: Sequence[Item] | None, quality: Quality | None, pool: Sequence[Item] | None,
             population: Sequence[Item] | None, level: str) -> tuple[tuple[Prepared, ...], tuple[tuple[str, str], ...]]:
    """An ensemble's members prepared for ``items``. An optional member whose input the items lack (a
    classic scorer refusing them before computing) is left out with its reason, so one ensemble can
    join a reference-based scorer where references exist and do without it elsewhere; a required
    member's missing input stops here, naming the member."""
    if items is None and ensemble_settings(spec).optional:
        raise InputError("optional members are kept or left out by the items they score: prepare the ensemble "
                         "with its items", field="optional")
    kept: list[Prepared] = []
    left_out: list[tuple[str, str]] = []
    for member in ensemble_settings(spec).members:
        try:
            kept.append(prepare_checked(member, items, quality, pool=pool, population=population, seed=None,
                                        level=level))
        except MissingInputError as exc:
            if member.name not in ensemble_settings(spec).optional:
                raise MissingInputError(f"member '{member.name}': {exc.reason} (list it under optional to leave it "
                                        "out where its input is missing)", record=exc.record, field=exc.field) from None
            left_out.append((member.name, exc.reason))
    if not kept:
        raise MissingInputError("no member can score these items: " + "; ".join(f"{n}: {r}" for n, r in left_out),
                                field="members")
    return tuple(kept), tuple(left_out)


class MemberFactory:
    """Builds an ensemble member's scorer when the ensemble reaches it (one model loaded at a time).
    ``share_key`` (its type's :meth:`MethodType.share_key`) tells which members run on one backend, so
    that they are built together and scored in one prefix-ordered pass of their lanes."""

    def __init__(self, prepared: Prepared, backends: Backends) -> None:
        self.prepared = prepared
        self.backends = backends
        self.share_key = prepared.spec.kind.share_key(prepared.spec)

    def __call__(self) -> Scorer:
        return build(self.prepared, self.backends)


def score_members(makes: Sequence[Callable[[], Scorer]], items: list[Item]) -> list[dict[str, Score]]:
    """Each member's scores of ``items`` by item id. Members that run on one backend (factories with one
    ``share_key``) are built together and scored in one pass whose prompts are ordered by prefix across
    them (:mod:`judge.engine.schedule`): the criteria prompt and its aspect questions share all but their
    last line. Other members score one after the other; members of another model wait until the
    previous model's group is done (one model loaded at a time)."""
    keys = [m.share_key if isinstance(m, MemberFactory) else None for m in makes]
    out: list[dict[str, Score] | None] = [None] * len(makes)
    for i, make in enumerate(makes):
        if out[i] is not None:
            continue
        group = [j for j in range(i, len(makes)) if keys[i] is not None and keys[j] == keys[i]]
        if len(group) > 1:
            lanes = [lane for j in group if (lane := makes[j]().lane()) is not None]
            if len(lanes) == len(group):
                found: list[dict[str, Score]] = [{} for _ in group]
                for k, score in run_lanes(lanes, [items] * len(group)):
                    found[k][score.item_id] = score
                for j, scores in zip(group, found, strict=True):
                    out[j] = scores
                continue
        out[i] = {s.item_id: s for s in make().score(items)}
    return [scores or {} for scores in out]
