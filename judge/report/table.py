"""The leaderboard as data (methods x columns), shared by the Markdown, HTML and CSV renderers."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.kinds import KIND_LIST, recorded_kind
from ..data.qualities import LOWER_IS_BETTER
from ..datasets.paper import PaperValue, paper_value
from ..records.summary import CellStats, Interval, Result, Summary
from ..stats.correlation import p_at_floor, p_floor
from ..stats.floor import has_interval, too_few_text


@dataclass
class Column:
    key: tuple[str, str | None]  # (dataset, quality); quality None = the set's average; ("*", None) = all sets
    label: str
    n: int | None = None
    #: Conversations the column's CIs resample (None: items were resampled, or no CI).
    n_conversations: int | None = None
    #: A negative quality's column (higher human ratings are worse): labelled "lower is better", and its best
    #: figure is the lowest (a good judge's correlation there is negative).
    negative: bool = False


@dataclass
class CellValue:
    value: float | None
    sd: float | None = None
    p: float | None = None
    low: float | None = None
    high: float | None = None
    n: int | None = None
    n_failed: int = 0
    n_estimated: int = 0
    n_incomplete: int = 0
    best: bool = False
    paper: PaperValue | None = None
    #: Averages: (parts with a value, parts expected); fewer than expected is marked and never best.
    covers: tuple[int, int] | None = None
    #: An average column's cell: marked not significant only when its bootstrap gave it a p-value.
    is_average: bool = False
    #: Conversations behind the CI (None: single items were resampled).
    n_conversations: int | None = None
    #: The bootstrap that gave ``p``: its resamples and the degenerate ones (for ``< 1/n_boot``).
    n_boot: int | None = None
    n_degenerate: int = 0
    #: Units the bootstrap resampled (conversations, or items) when fewer than the floor: no CI, no p.
    too_few: int | None = None

    @property
    def partial(self) -> bool:
        return self.covers is not None and self.covers[0] < self.covers[1]

    @property
    def significant(self) -> bool:
        return self.p is not None and math.isfinite(self.p) and self.p < 0.05

    @property
    def marked(self) -> bool:
        """Whether the cell gets the not-significant mark: a set's cell whose bootstrap p is >= .05 (or
        undefined), or an average whose stratified bootstrap gave a p >= .05."""
        if self.value is None:
            return False
        if self.too_few is not None:  # below the floor nothing is claimed significant
            return True
        if self.is_average:
            return self.p is not None and not self.significant
        return not self.significant


@dataclass
class Row:
    method: str
    paper_label: str | None
    cells: list[CellValue] = field(default_factory=list)
    #: One of ``judge.engine.kinds.KINDS`` (``unknown`` in summaries written before kinds were
    #: recorded), whether it reads the next user turn and whether it reads the other replies to a context.
    kind: str = "unknown"
    uses_future: bool = False
    listwise: bool = False
    #: Reference-based rows: the same cells without the items whose response is (nearly) a reference.
    without_copies: list[CellValue] | None = None

    @property
    def label(self) -> str:
        """The method's name as tables print it (a method that reads the future outside the uses-future
        table, and a ``listwise`` method, say so)."""
        future = self.uses_future and self.kind != "uses-future"
        return self.method + (" (uses-future)" if future else "") + (" (listwise)" if self.listwise else "")


#: The order and titles of the leaderboard's sections, one per kind: never averaged or bolded together.
KIND_SECTIONS = (*((k.name, k.section) for k in KIND_LIST),
                 ("unknown", "Methods of unrecorded kind (summary written before kinds were recorded)"))


@dataclass
class Leaderboard:
    title: str
    columns: list[Column]
    rows: list[Row]
    ceiling: list[float | None]
    meta: dict[str, Any]

    def sections(self) -> list[tuple[str, str, list[Row]]]:
        """(kind, title, rows) per kind present, reference-free first; within a kind, methods that do
        not read the future come first, then config order."""
        out = []
        for kind, title in KIND_SECTIONS:
            rows = sorted((r for r in self.rows if r.kind == kind), key=lambda r: r.uses_future)
            if rows:
                out.append((kind, title, rows))
        return out


def build(summary: Summary) -> Leaderboard:
    """Methods x (set, quality) columns, plus per-set and overall DSTC10 averages where they add information."""
    datasets = summary.datasets
    columns: list[Column] = []
    # Each column's first result (its n and conversations).
    first: dict[tuple[str, str | None], Result] = {(r.dataset, r.quality): r for r in reversed(summary.results)}
    # The overall average's conversations: those of a method that covers every set (the most any has).
    overall = [n for avg in summary.averages.values()
               if (ci := _average_ci(avg)) is not None and (n := ci.conversations) is not None]
    for d in datasets:
        multi = len(d["qualities"]) > 1
        for q in d["qualities"]:
            neg = q in d.get("negative", ())
            label = (f"{d['abbrev']} {q}" if multi else d["abbrev"]) + (f" ({LOWER_IS_BETTER})" if neg else "")
            one = first.get((d["name"], q))
            columns.append(Column((d["name"], q), label, one.n if one else None, one.ci.conversations if one else None,
                                  neg))
        if multi and len(datasets) > 1:
            columns.append(Column((d["name"], None), f"{d['abbrev']} avg"))
    if len(datasets) > 1:
        columns.append(Column(("*", None), "avg", n_conversations=max(overall) if overall else None))
    res: dict[tuple[str, str | None, str | None], Result] = {(r.method, r.dataset, r.quality): r
                                                              for r in summary.results}
    rows = []
    for m, spec in summary.methods.items():
        row = Row(m, spec.get("paper"), kind=recorded_kind(spec), uses_future=bool(spec.get("uses_future")),
                  listwise=bool(spec.get("listwise")))
        avg = summary.averages.get(m, {})
        mine = [res.get((m, *col.key)) if col.key[1] is not None else None for col in columns]
        for col, x in zip(columns, mine, strict=True):
            ds, q = col.key
            paper = paper_value(row.paper_label, ds, q) if row.paper_label and q is not None else None
            row.cells.append(_average_cell(avg, ds) if q is None else CellValue(None) if x is None else _cell(
                x.spearman, x.ci, sd=x.sd, n=x.n, n_failed=x.n_failed, n_estimated=x.n_estimated,
                n_incomplete=x.n_incomplete, paper=paper))
        _paper_averages(row, columns)
        if "without_copies" in avg or any(x is not None and x.without_copies is not None for x in mine):
            row.without_copies = [
                _average_cell(avg.get("without_copies") or {}, col.key[0]) if col.key[1] is None
                else CellValue(None) if x is None or (w := x.without_copies) is None else _cell(w.spearman, w.ci, n=w.n)
                for col, x in zip(columns, mine, strict=True)]
        rows.append(row)
    for j in range(len(columns)):
        # Best within each kind: a reference-based, uses-future or supervised figure never outranks a
        # reference-free one, nor one of another of those kinds.
        for kind, _title in KIND_SECTIONS:
            same = [r for r in rows if r.kind == kind]
            # An average over fewer sets than the column's is not comparable: it is never the best.
            vals = [v for r in same if (v := r.cells[j].value) is not None and not r.cells[j].partial]
            if len(vals) > 1:
                top = min(vals) if columns[j].negative else max(vals)
                for r in same:
                    if r.cells[j].value == top and not r.cells[j].partial:
                        r.cells[j].best = True
    agreement = [summary.ceiling.get(ds, {}).get(q) if q else None for ds, q in (col.key for col in columns)]
    ceiling: list[float | None] = [a["interval"] if a else None for a in agreement]
    exp = summary.experiment
    return Leaderboard(f"Leaderboard: {exp['name']}", columns, rows, ceiling, exp)


def _average_ci(avg: dict[str, Any]) -> Interval | None:
    """An average's stratified bootstrap CI (only the overall average of several sets has one)."""
    return Interval.from_dict(avg["ci"]) if avg.get("ci") else None


def too_few(x: Mapping[str, Any], k: int | None) -> int | None:
    """``k`` (the units a stored figure's bootstrap resampled) when the figure is below the floor
    (:mod:`judge.stats.floor`): then the reports print no CI and no p (see :attr:`Interval.few`). Figures
    written before the floor stored an interval anyway; they are judged by their count too."""
    if x.get("too_few"):
        return k
    return None if k is None or has_interval(k) else k


def ci_text(low: float | None, high: float | None, few: int | None) -> str:
    """A CI as the reports print it, ``[low, high]``; below the floor, ``too few conversations (k)``; empty
    when there is none."""
    if few is not None:
        return f"[{too_few_text(few)}]"
    return "" if low is None else f"[{fmt(low, 2)}, {fmt(high, 2)}]"


def _cell(value: float | None, ci: Interval | None, *, average: bool = False, **known: Any) -> CellValue:
    """A cell with its CI's figures: significance is the conversation bootstrap's p (``ci.p``); below the
    floor no interval and no p (:attr:`Interval.few`)."""
    if ci is None:
        return CellValue(value, is_average=average, **known)
    if ci.few is not None:
        return CellValue(value, is_average=average, n_conversations=ci.conversations, too_few=ci.few, **known)
    return CellValue(value, p=ci.p, low=ci.low, high=ci.high, is_average=average, n_conversations=ci.conversations,
                     n_boot=ci.n_boot, n_degenerate=ci.n_degenerate, **known)


def _average_cell(avg: dict[str, Any], ds: str) -> CellValue:
    """An average column's cell: the overall average carries its stratified bootstrap CI and p."""
    v = avg.get("overall") if ds == "*" else avg.get("per_set", {}).get(ds)
    covers = avg.get("overall_n") if ds == "*" else avg.get("per_set_n", {}).get(ds)
    return _cell(v, _average_ci(avg) if ds == "*" else None, average=True, covers=tuple(covers) if covers else None)


def _paper_averages(row: Row, columns: list[Column]) -> None:
    """The paper's own average in each average column, by the same DSTC10 rule, where the paper has
    a value for every (set, quality) the column averages; none where it lacks any."""
    for col, cell in zip(columns, row.cells, strict=True):
        ds, q = col.key
        if q is not None:
            continue
        parts: dict[str, list[float]] = {}
        complete = True
        for c2, v in zip(columns, row.cells, strict=True):
            if c2.key[1] is None or (ds != "*" and c2.key[0] != ds):
                continue
            if v.paper is None:
                complete = False
                break
            parts.setdefault(c2.key[0], []).append(v.paper.value)
        if complete and parts:
            means = [sum(x) / len(x) for x in parts.values()]
            table = next(v.paper.table for v in row.cells if v.paper is not None)
            cell.paper = PaperValue(sum(means) / len(means), True, table)


def quality_marks(c: CellValue) -> str:
    """Markers for scores that are not plain log-probability readings: ``†`` some were estimated from
    sampled answers; ``‡`` some came from a top-N list that may miss label spellings."""
    return ("†" if c.n_estimated else "") + ("‡" if c.n_incomplete else "")


def cell_label(c: CellValue, star: str = "*") -> str:
    """The text of a leaderboard cell without its CI: value, ``± sd``, ``*`` when not significant, the
    quality marks, and the failed count (a cell with no value says why)."""
    if c.value is None:
        return "–" + (f" ({c.n_failed} failed)" if c.n_failed else "")
    s = fmt(c.value)
    if c.sd is not None:
        s += f" ± {fmt(c.sd)}"
    if c.marked:
        s += star
    if c.partial and c.covers is not None:
        s += f" ({c.covers[0]} of {c.covers[1]})"
    return s + quality_marks(c)


def md_row(cells: Sequence[str]) -> str:
    """A Markdown table row (a ``|`` inside a cell escaped)."""
    return "| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |"


def md_table(head: Sequence[str], rows: Sequence[Sequence[str]], align: str) -> list[str]:
    """A Markdown table's lines (``align``: per column ``l`` or ``r``)."""
    return [md_row(head), md_row(["---:" if a == "r" else "---" for a in align]), *map(md_row, rows)]


def fmt(x: float | None, digits: int = 3) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


#: Header of the compute-time table (Markdown and HTML).
TIMING_HEADER = ("method", "rows", "s/item", "compute s", "model load s", "cache hits / misses", "peak RSS")


def timing_cells(timing: dict[str, dict[str, Any]]) -> list[list[str]]:
    """One row of text per method of ``Summary.timing``, in :data:`TIMING_HEADER`'s order."""
    out = []
    for m, t in timing.items():
        rss = "–" if t.get("peak_rss_mib") is None else f"{t['peak_rss_mib']:.0f} MiB"
        out.append([m, str(t["rows"]), f"{t['s_per_item']:.3g}", f"{t['seconds']:.0f}", f"{t['load_s']:.1f}",
                    f"{t['cache_hits']} / {t['cache_misses']}", rss])
    return out


#: Header of the learned-weights table (Markdown and HTML).
FITTED_HEADER = ("method", "set", "quality", "learned on", "weights")


def fitted_cells(cells: Sequence[CellStats], not_trained_on: Sequence[dict[str, Any]] | None = None
                 ) -> list[list[str]]:
    """One row of text per cell of ``Summary.cells`` whose method learned its weights: lodo's one
    vector; cv's mean over its folds with the fold range, each fold's items scored with its own. ``not_trained_on``
    (``Summary.not_trained_on``): the sets a lodo cell left out for sharing its conversations."""
    out = []
    for c in cells:
        f = c.fitted
        if not f or f.get("fit") == "head":
            continue
        if f.get("fit") == "lodo":
            where = f"the other {len(f['trained_on'])} sets"
            shared: dict[str, str] = next((e["sets"] for e in not_trained_on or ()
                                           if (e["method"], e["dataset"], e["quality"]) == c.key[:3]), {})
            if shared:  # never offered: they rate some of the scored conversations
                where += "; not offered (share its conversations): " + ", ".join(shared)
            if f.get("dropped"):  # sets the fit could not learn from: not among the sets it learned on
                where += "; not used: " + ", ".join(f"{name} ({why})" for name, why in f["dropped"].items())
            weights = ", ".join(f"{m} {fmt(w, 2)}" for m, w in zip(f["members"], f["weights"], strict=True))
        else:
            folds = f["folds"]
            where = f"{len(folds)} folds by conversation (mean [range] over folds)"
            weights = ", ".join(
                f"{m} {fmt(sum(col) / len(col), 2)} [{fmt(min(col), 1)}–{fmt(max(col), 1)}]"
                for m, col in zip(f["members"], zip(*folds, strict=True), strict=True))
        out.append([c.method, c.dataset, c.quality, where, weights])
    return out


#: Header of the heads' table (Markdown and HTML): what each head method's head learned from.
HEAD_HEADER = ("method", "set", "quality", "head", "learned from", "ridge alpha, cv Spearman")


def head_cells(cells: Sequence[CellStats]) -> list[list[str]]:
    """One row of text per cell scored by a head (``type = "head"``): the head file, the sets it learned
    from before the run (never the scored one: the harness refuses that) and its fit's figures."""
    out = []
    for c in cells:
        f = c.fitted
        if not f or f.get("fit") != "head":
            continue
        cv = f.get("cv_spearman")
        out.append([c.method, c.dataset, c.quality, Path(str(f["head"])).name, ", ".join(f["trained_on"]),
                    f"{f['alpha']:g}, {'–' if cv is None else fmt(cv)} ({f.get('cv_how') or 'no cv'})"])
    return out


#: Header of the paired comparisons of the averages (Markdown and HTML).
AVERAGE_COMPARISON_HEADER = ("A", "B", "sets", "n", "avg A", "avg B", "A − B [95% CI]", "p (bootstrap)")


def resampled_together_text(summary: Summary) -> str:
    """The sentence reports add where an average's CI is explained, when the bootstrap resampled some sets'
    conversations together (sets that rate the same conversations, ``averages[m]["resampled_together"]``);
    empty when every set was resampled on its own."""
    named = together_text(summary.averages.values())
    if not named:
        return ""
    return (f" Sets that rate some of the same conversations ({named}) are resampled together: one draw per "
            "conversation across the sets that rate it, so a conversation two sets rate counts once.")


def together_text(averages: Iterable[Mapping[str, Any]], name: Callable[[str], str] = str) -> str:
    """The groups of sets the averages' bootstraps resampled together (``resampled_together``), each named
    ``FT and FD`` (``name``: how a set is called), joined by ``; ``; empty when there are none."""
    groups: list[list[str]] = []
    for avg in averages:
        groups += [g for g in avg.get("resampled_together") or () if g not in groups]
    return "; ".join(", ".join(map(name, g[:-1])) + f" and {name(g[-1])}" for g in groups)


def average_comparison_cells(comps: Sequence[dict[str, Any]]) -> list[list[str]]:
    """One row of text per entry of ``Summary.average_comparisons``."""
    return [[c["a"], c["b"], str(c["n_sets"]), str(c["n"]), fmt(c["r_a"]), fmt(c["r_b"]),
             f"{fmt(c['diff'])} {ci_text(c['low'], c['high'], too_few(c, c.get('n_units')))}", comparison_p(c)] for c in comps]


def comparison_p(c: dict[str, Any], key: str = "p") -> str:
    """A paired comparison's p (``key``: the bootstrap's, or ``williams_p``); ``–`` below the floor."""
    if too_few(c, c.get("n_units")) is not None:
        return "–"
    return p_text(c[key], c.get("n_boot"), c.get("n_degenerate", 0)) if key == "p" else p_text(c[key])


def p_text(p: float | None, n_boot: int | None = None, n_degenerate: int = 0) -> str:
    """A p-value as reports print it (3 significant digits; ``–`` when undefined). A bootstrap p at its
    floor (every resample on one side of zero) prints as ``< 1/n_boot``, e.g. ``< .001``: that is all
    the resamples can say."""
    if p is None or not math.isfinite(p):
        return "–"
    if n_boot is not None and p_at_floor(p, n_boot, n_degenerate):
        return "< " + f"{p_floor(n_boot, n_degenerate):.3g}".removeprefix("0")
    return f"{p:.3g}"
