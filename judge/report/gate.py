"""What ``judge gate`` compares: two sides' rows (two results folders, two rows files, or two groups of one
rows file), matched cell by cell and quality by quality, each comparison paired by context where the two
sides judged the same contexts and unpaired otherwise (:mod:`judge.stats.gate` computes the figures).

A row's **context** is its id by default (a chat log's ``CONVERSATION#TURN``: two versions replaying the same
test conversations share it), or, with ``pair_on``, the values of those ``meta`` fields plus the reply's turn
(the ``#N`` of its id), for versions whose logs name the shared script differently. A row's **conversation**
(what the bootstrap resamples) is :func:`judge.records.grouping.conversation`, as in every report over rows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..core.errors import InputError
from ..data.qualities import find_quality
from ..records.grouping import conversation, group_rows
from ..records.labels import ratings_by_item, read_labels
from ..records.rows import Row, read_rows
from ..stats.gate import Delta, Verdict, paired_delta, unpaired_delta, verdict, worst

Pairing = Literal["auto", "paired", "unpaired"]
#: What the verdict is read from: the judge's scores, or people's ratings of the same items.
ON = ("judge", "human")
#: Share of each side's scored rows that must have a partner for ``auto`` to pair the comparison.
PAIRED_SHARE = 0.5


@dataclass(frozen=True)
class Side:
    """One side of the gate: its rows per cell (``""`` for a rows file, a cell's path inside a results
    folder), what to call it, and the human labels of its items (item id -> quality -> mean rating)."""

    name: str
    cells: Mapping[str, list[Row]]
    labels: Mapping[str, Mapping[str, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class GateOptions:
    """How a gate compares: the tolerated drop, the qualities kept (empty: all), what the verdict reads, how
    contexts pair, which ``meta`` fields break the deltas down (reported, not part of the verdict), and the
    bootstrap."""

    max_drop: float
    qualities: tuple[str, ...] = ()
    on: str = "judge"
    pairing: Pairing = "auto"
    pair_on: tuple[str, ...] = ()
    per: tuple[str, ...] = ()
    #: Qualities where lower is better beyond those the benchmark sets declare negative (``robotic``).
    lower_is_better: tuple[str, ...] = ()
    n_boot: int = 1000
    seed: int = 0
    level: float = 0.95


@dataclass(frozen=True)
class Comparison:
    """One comparison: a cell's quality (and, in a breakdown, one group of it). ``human`` is None where the
    rows carry no human ratings. ``unmatched``: the baseline's and the candidate's scored contexts without a
    partner (left out of a paired comparison); ``failed``: rows without a score on each side."""

    cell: str
    quality: str
    group: tuple[str, ...]
    judge: Delta
    human: Delta | None
    verdict: Verdict
    unmatched: tuple[int, int] = (0, 0)
    failed: tuple[int, int] = (0, 0)
    #: Lower is better on this quality: a rise is what the tolerance bounds.
    negative: bool = False


@dataclass(frozen=True)
class GateResult:
    """Every comparison (the breakdowns after their overall line) and the gate's verdict: the worst of the
    overall comparisons' (breakdowns are reported, not gated)."""

    baseline: str
    candidate: str
    options: GateOptions
    comparisons: tuple[Comparison, ...]
    verdict: Verdict


# -- reading the sides ---------------------------------------------------------------------------------------

def read_cells(path: str | Path) -> dict[str, list[Row]]:
    """A rows file as one cell (``""``), or a results folder's cells (``items/.../seed<N>.jsonl``) by their
    path inside ``items/``."""
    p = Path(path)
    if p.is_dir():
        files = sorted((p / "items").rglob("seed*.jsonl")) if (p / "items").is_dir() else []
        if not files:
            raise InputError("no rows under items/ (a results folder that 'judge run' wrote, or a rows file)",
                             file=str(p))
        return {f.relative_to(p / "items").with_suffix("").as_posix(): read_rows(f) for f in files}
    if not p.is_file():
        raise InputError("no such rows file or results folder", file=str(p))
    rows = read_rows(p)
    if not rows:
        raise InputError("the rows file holds no rows", file=str(p))
    return {"": rows}


def split_cells(cells: Mapping[str, list[Row]], by: Sequence[str], value: Sequence[str], file: str
                ) -> dict[str, list[Row]]:
    """Each cell's rows whose ``meta`` fields ``by`` have the values ``value`` (InputError when no row has)."""
    out = {}
    for cell, rows in cells.items():
        picked = group_rows(rows, by).get(tuple(value), [])
        if picked:
            out[cell] = picked
    if not out:
        seen = sorted({k for rows in cells.values() for k in group_rows(rows, by)})
        found = ", ".join("/".join(k) for k in seen)
        raise InputError(f"no row has {'/'.join(by)} = {'/'.join(value)} (the file has: {found})", file=file)
    return out


def read_label_means(path: str | Path) -> dict[str, dict[str, float]]:
    """A labels file as item id -> quality -> the mean of its raters' latest ratings."""
    return {i: {q: math.fsum(v) / len(v) for q, v in qs.items()} for i, qs in ratings_by_item(read_labels(path)).items()}


# -- matching rows -------------------------------------------------------------------------------------------

def _turn(row: Row) -> str:
    return row.id.rpartition("#")[2] if "#" in row.id else ""


def context_keys(rows: Sequence[Row], pair_on: Sequence[str], file: str) -> list[tuple[tuple[str, ...], str]]:
    """Each row's context (what pairs it with the other side's row) and the conversation that context is
    resampled with: its id and its own conversation, or with ``pair_on`` those fields' values and the turn,
    resampled by those values (the script both sides replayed). A context twice on one side is an error."""
    if pair_on:
        keyed = {id(r): k for k, group in _grouped(rows, pair_on, file).items() for r in group}
        out = [((*keyed[id(r)], _turn(r)), "/".join(keyed[id(r)])) for r in rows]
    else:
        out = [((r.id,), conversation(r)) for r in rows]
    seen: set[tuple[str, ...]] = set()
    for row, (key, _) in zip(rows, out, strict=True):
        if key in seen:
            raise InputError(f"two rows of one quality share the context {'/'.join(key)}: pair on other fields "
                             "(--pair-on), or compare unpaired (--pairing unpaired)", file=file, record=row.id)
        seen.add(key)
    return out


def _human(row: Row, labels: Mapping[str, Mapping[str, float]], quality: str) -> float | None:
    if labels:
        return labels.get(row.id, {}).get(quality.lower())
    return row.human


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def _quality(row: Row) -> str:
    return row.quality or "-"


def _by_quality(rows: Sequence[Row], keep: Sequence[str]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for row in rows:
        if not keep or _quality(row).lower() in keep:
            out.setdefault(_quality(row), []).append(row)
    return out


# -- comparing -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Matched:
    """One comparison's rows on both sides and how they pair (None: unpaired)."""

    base: list[Row]
    cand: list[Row]
    pairs: list[tuple[Row, Row, str]] | None
    unmatched: tuple[int, int]


def _match(base: list[Row], cand: list[Row], options: GateOptions, files: tuple[str, str]) -> _Matched:
    """Pair the scored rows of both sides by context where ``options.pairing`` says (``auto``: when at least
    PAIRED_SHARE of each side's scored rows has a partner)."""
    b = [r for r in base if _finite(r.score)]
    c = [r for r in cand if _finite(r.score)]
    if options.pairing == "unpaired":
        return _Matched(b, c, None, (0, 0))
    b_keys = context_keys(b, options.pair_on, files[0])
    c_keys = dict(zip((k for k, _ in context_keys(c, options.pair_on, files[1])), c, strict=True))
    pairs = [(row, c_keys[key], conv) for row, (key, conv) in zip(b, b_keys, strict=True) if key in c_keys]
    enough = bool(pairs) and len(pairs) >= PAIRED_SHARE * len(b) and len(pairs) >= PAIRED_SHARE * len(c)
    if options.pairing == "paired" and not pairs:
        raise InputError("--pairing paired: the two sides share no context (same id, or the --pair-on fields "
                         "and turn)", file=files[1])
    if options.pairing == "auto" and not enough:
        return _Matched(b, c, None, (0, 0))
    return _Matched(b, c, pairs, (len(b) - len(pairs), len(c) - len(pairs)))


def _delta(m: _Matched, value: ValueOf, options: GateOptions) -> Delta | None:
    """The delta of ``value`` (a row's score or human rating) over the matched rows; None when a side has
    none of it."""
    n_boot, seed, level = options.n_boot, options.seed, options.level
    if m.pairs is not None:
        b, c, convs = [], [], []
        for rb, rc, conv in m.pairs:
            vb, vc = value(rb, 0), value(rc, 1)
            if vb is not None and vc is not None and math.isfinite(vb) and math.isfinite(vc):
                b.append(vb)
                c.append(vc)
                convs.append(conv)
        return paired_delta(b, c, convs, n_boot=n_boot, seed=seed, level=level) if b else None
    sides = []
    for side, rows in enumerate((m.base, m.cand)):
        values = [(v, conversation(r)) for r in rows if (v := value(r, side)) is not None and math.isfinite(v)]
        sides.append(([v for v, _ in values], [g for _, g in values]))
    (bv, bg), (cv, cg) = sides
    if not bv or not cv:
        return None
    return unpaired_delta(bv, bg, cv, cg, n_boot=n_boot, seed=seed, level=level)


class ValueOf:
    """A row's value to compare: its score, or its human rating (from the side's labels when it has them)."""

    def __init__(self, on: str, quality: str, labels: tuple[Mapping[str, Mapping[str, float]], ...]) -> None:
        self.on, self.quality, self.labels = on, quality, labels

    def __call__(self, row: Row, side: int) -> float | None:
        """``row``'s value; ``side`` 0 is the baseline's, 1 the candidate's."""
        if self.on == "judge":
            return row.score
        return _human(row, self.labels[side], self.quality)


def _compare(cell: str, quality: str, group: tuple[str, ...], base: list[Row], cand: list[Row],
             sides: tuple[Side, Side], options: GateOptions) -> Comparison:
    m = _match(base, cand, options, (sides[0].name, sides[1].name))
    labels = (sides[0].labels, sides[1].labels)
    judge = _delta(m, ValueOf("judge", quality, labels), options)
    if judge is None:
        raise InputError(f"no scored rows to compare for quality {quality}" + (f" in {cell}" if cell else ""),
                         file=sides[0].name if not m.base else sides[1].name)
    human = _delta(m, ValueOf("human", quality, labels), options)
    gated = judge if options.on == "judge" else human
    if gated is None:
        raise InputError(f"--on human: no human ratings of quality {quality} on both sides (a rows file's "
                         "'human', or --labels)", file=sides[0].name)
    failed = (sum(not _finite(r.score) for r in base), sum(not _finite(r.score) for r in cand))
    negative = is_negative(quality, options)
    return Comparison(cell, quality, group, judge, human, verdict(gated, options.max_drop, negative), m.unmatched,
                      failed, negative)


def is_negative(quality: str, options: GateOptions) -> bool:
    """Whether lower is better on ``quality``: asked for, or declared so by the benchmark sets (``robotic``)."""
    known = find_quality(quality)
    return quality.lower() in {q.lower() for q in options.lower_is_better} or (known is not None and known.negative)


def gate(baseline: Side, candidate: Side, options: GateOptions) -> GateResult:
    """Compare every cell both sides hold, quality by quality (and group by group for ``options.per``)."""
    if options.on not in ON:
        raise InputError(f"--on must be one of {', '.join(ON)}", field="--on")
    common = [c for c in baseline.cells if c in candidate.cells]
    if not common:
        raise InputError("the two sides share no cell (method/set/quality/seed of a results folder)",
                         file=candidate.name)
    keep = tuple(q.lower() for q in options.qualities)
    out: list[Comparison] = []
    for cell in common:
        base_q = _by_quality(baseline.cells[cell], keep)
        cand_q = _by_quality(candidate.cells[cell], keep)
        for quality in [q for q in base_q if q in cand_q]:
            out.append(_compare(cell, quality, (), base_q[quality], cand_q[quality], (baseline, candidate), options))
            out += _breakdown(cell, quality, base_q[quality], cand_q[quality], (baseline, candidate), options)
    if not out:
        raise InputError("no quality to compare: " + ("--quality matches no row on both sides" if keep
                                                        else "the two sides share no quality"), field="--quality")
    overall = [c.verdict for c in out if not c.group]
    return GateResult(baseline.name, candidate.name, options, tuple(out), worst(overall))


def _breakdown(cell: str, quality: str, base: list[Row], cand: list[Row], sides: tuple[Side, Side],
               options: GateOptions) -> list[Comparison]:
    """The comparison within each group of the ``per`` fields that both sides hold."""
    if not options.per:
        return []
    b, c = _grouped(base, options.per, sides[0].name), _grouped(cand, options.per, sides[1].name)
    return [_compare(cell, quality, key, b[key], c[key], sides, options) for key in b if key in c]


def _grouped(rows: Sequence[Row], by: Sequence[str], file: str) -> dict[tuple[str, ...], list[Row]]:
    """:func:`group_rows`, its error naming the side's file."""
    try:
        return group_rows(rows, by)
    except InputError as exc:
        raise InputError(exc.reason, file=file, record=exc.record, field=exc.field) from None
