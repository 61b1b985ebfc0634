"""Running a pairwise method over pairs of replies: one row per pair, streamed in order.

Every entry point that compares (``judge compare``, ``[[compare]]`` cells of ``judge run``, ``POST
/v1/compare`` of ``judge serve``) prepares its method here (:func:`prepare_pairs`, every check before a model
loads), builds it with :func:`judge.engine.build.build` and runs it with :func:`compare_rows`: the pairwise
judge is a lane of the unit of work whose items are pairs (:func:`judge.scorers.units.run_lanes`), so its
requests are prefix-ordered, cut into units, cached and counted by ``--check`` as every other method's are.

The pair row is :class:`judge.records.pair_rows.PairRow` (documented in docs/pairwise.md, "Rows"); a pair of a set
that labels its pairs (PandaLM, LLMBar) carries the label (:func:`judge.data.pairs.label_fields`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ..core.errors import InputError
from ..data.items import Item
from ..data.pairs import Pair, label_fields
from ..data.qualities import Quality
from ..records.pair_rows import PAIR_ROW_KEYS, PairOrder, PairRow
from ..records.rows import Row, item_flags, rounded
from ..scorers.base import PairScore, Scorer
from ..scorers.units import Executor, LaneCost, run_lanes
from .build import check_names
from .kinds import check_future, method_kinds
from .spec import MethodSpec, Prepared

__all__ = ["PAIR_ROW_KEYS", "compare_rows", "pair_items", "pair_row", "point_scores", "prepare_pairs"]

def pair_items(pairs: Iterable[Pair]) -> list[Item]:
    """The distinct items of ``pairs`` (by object), in order of first appearance: what a pairwise template is
    checked on, and what a pointwise method scores beside it."""
    seen: dict[int, Item] = {}
    for p in pairs:
        for it in (p.a, p.b):
            seen.setdefault(id(it), it)
    return list(seen.values())


def point_scores(pairs: Iterable[Pair], items: Sequence[Item], rows: Sequence[Row]
                 ) -> dict[tuple[str, str], float | None]:
    """A pointwise method's scores of the pairs' replies by (system, item id), from its ``rows`` on ``items``
    (:func:`pair_items` of the pairs, in that order): the key of a reply in the pair rows, where two files
    matched by id hold one id twice."""
    by_item = {id(it): row.score if row.error is None else None for it, row in zip(items, rows, strict=True)}
    out: dict[tuple[str, str], float | None] = {}
    for p in pairs:
        out[(p.system_a, p.a.id)] = by_item.get(id(p.a))
        out[(p.system_b, p.b.id)] = by_item.get(id(p.b))
    return out


def prepare_pairs(spec: MethodSpec, pairs: Sequence[Pair], quality: Quality | None) -> Prepared:
    """``spec`` (a method that compares: ``MethodType.compares``) checked against the replies of ``pairs``
    before any model loads: names, what it reads, its template on every reply's context."""
    if not spec.kind.compares:
        raise InputError(f"method '{spec.name}' ({spec.type}) scores one reply at a time; comparing two needs a "
                         "pairwise method (type = \"pairwise\")", field="type")
    check_names(spec)
    check_future(spec, method_kinds(spec, quality), "turn")
    return spec.kind.prepare(spec, pair_items(pairs), quality, pool=None, population=None, seed=spec.seeds[0],
                             level="turn")


def pair_row(pair: Pair, score: PairScore, method: str, quality: str | None) -> PairRow:
    """One pair's record (:class:`judge.records.pair_rows.PairRow`)."""
    ok = score.error is None
    reply_a, reply_b = (pair.a.response or "").strip(), (pair.b.response or "").strip()
    return PairRow(
        id=pair.id, method=method, quality=quality, context=pair.context, group=pair.group,
        system_a=pair.system_a, system_b=pair.system_b, item_a=pair.a.id, item_b=pair.b.id,
        human_a=rounded(pair.a.human(quality)) if quality else None,
        human_b=rounded(pair.b.human(quality)) if quality else None,
        preference=rounded(score.value) if ok else None, winner=score.winner if ok else None,
        consistent=score.consistent if ok else None, tie=rounded(score.tie) if ok else None,
        orders=tuple(PairOrder(o.order, rounded(o.p_a), o.winner, {k: rounded(v) for k, v in o.label_probs.items()})
                     for o in score.orders),
        length_a=len(reply_a), length_b=len(reply_b),
        flags=tuple([f"a:{f}" for f in item_flags(pair.a)] + [f"b:{f}" for f in item_flags(pair.b)]
                    + (["same_reply"] if reply_a == reply_b else []) + [f for f in score.flags if f]),
        estimated=score.estimated, complete=score.complete, error=score.error, n_prompt_tokens=score.n_prompt_tokens,
        prompt_sha=score.prompt_sha, template_sha=score.template_sha, **label_fields(pair))


def compare_rows(judge: Scorer, pairs: Sequence[Pair], method: str, quality: str | None,
                 write: Callable[[PairRow], None], progress: Callable[[int], None] | None = None, *,
                 costs: Sequence[LaneCost] | None = None, executor: Executor | None = None) -> int:
    """Compare ``pairs`` with a built pairwise judge and hand each pair's row to ``write`` as soon as it and
    every earlier one are done. Returns the number of failed pairs."""
    lane = judge.lane()
    if lane is None or not isinstance(judge, Scorer):
        raise TypeError(f"{judge.name} states no lane of work: it cannot compare pairs")
    failed = 0
    for taken, (_, score) in enumerate(run_lanes([lane], [pairs], costs=costs, executor=executor)):
        pair = pairs[taken]
        if not isinstance(score, PairScore) or score.item_id != pair.id:
            raise RuntimeError(f"the pairwise judge returned {score.item_id!r} where pair {pair.id!r} was expected")
        row = pair_row(pair, score, method, quality)
        write(row)
        failed += row.error is not None
        if progress is not None:
            progress(1)
    return failed
