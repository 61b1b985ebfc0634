"""The Markdown leaderboard: Spearman with 95% CI per method and set, best bold, `*` = not significant."""

from __future__ import annotations

from collections.abc import Sequence

from ..records.summary import Summary
from . import pairwise
from .table import (
    AVERAGE_COMPARISON_HEADER,
    FITTED_HEADER,
    HEAD_HEADER,
    TIMING_HEADER,
    CellValue,
    Leaderboard,
    average_comparison_cells,
    build,
    cell_label,
    ci_text,
    comparison_p,
    fitted_cells,
    fmt,
    head_cells,
    md_row,
    md_table,
    p_text,
    resampled_together_text,
    timing_cells,
    too_few,
)


def cell_text(c: CellValue) -> str:
    if c.value is None:
        return cell_label(c)
    s = cell_label(c, star="\\*")  # escaped: a bare * next to ** would be read as emphasis
    if c.best:
        s = f"**{s}**"
    if c.low is not None or c.too_few is not None:
        s += " " + ci_text(c.low, c.high, c.too_few)
    if c.n_failed:
        s += f" ({c.n_failed} failed)"
    return s


def copies_text(c: CellValue) -> str:
    """A cell of the ``↳ without reference copies`` line: the value on the reduced set, its CI and n."""
    if c.value is None:
        return "–"
    s = cell_label(c, star="\\*")
    if c.low is not None or c.too_few is not None:
        s += " " + ci_text(c.low, c.high, c.too_few)
    return s + (f" n={c.n}" if c.n is not None else "")


def leaderboard_md(board: Leaderboard) -> list[str]:
    """One table per kind (reference-free first, then reference-based, uses-future, supervised), each
    with its own best values; the kinds are never averaged together. Reference-based rows are followed by their values without the items whose
    response is (nearly) a reference."""
    lines: list[str] = []
    for _kind, title, rows in board.sections():
        head = ["method"] + [c.label for c in board.columns]
        lines += [f"### {title}", "", md_row(head), md_row(["---"] + ["---:"] * len(board.columns))]
        for r in rows:
            lines.append(md_row([r.label] + [cell_text(c) for c in r.cells]))
            if r.paper_label and any(c.paper for c in r.cells):
                lines.append(md_row([f"↳ paper: {r.paper_label}"] + [c.paper.text() if c.paper else "" for c in r.cells]))
            if r.without_copies is not None:
                lines.append(md_row(["↳ without reference copies"] + [copies_text(c) for c in r.without_copies]))
        if any(x is not None for x in board.ceiling):
            lines.append(md_row(["human agreement (Krippendorff α, interval)"] + [fmt(x) for x in board.ceiling]))
        lines.append(md_row(["n (items)"] + [str(c.n) if c.n is not None else "" for c in board.columns]))
        lines.append(md_row(["n (conversations)"] + [str(c.n_conversations) if c.n_conversations is not None else ""
                                                      for c in board.columns]))
        lines.append("")
    return lines[:-1]


def render_markdown(summary: Summary) -> str:
    """The whole report: leaderboard, comparisons, system-level correlations, provenance."""
    board = build(summary)
    exp = summary.experiment
    out = [f"# {board.title}", ""]
    if exp.get("description"):
        out += [exp["description"], ""]
    limit = f"seeded subset of {exp['limit']} items per set (limit_seed {exp['limit_seed']})" if exp["limit"] else "all items"
    if exp.get("split"):
        limit += (f", drawn from the {exp['split']} half of each set's conversations (split_seed "
                  f"{exp['split_seed']}; a conversation is in one half across every registered set that rates "
                  "it, FED-Turn's turns in their FED-Dial dialog's)")
        if exp.get("example_pool") and any(m.get("k") for m in summary.methods.values()):
            limit += f"; in-context examples from the {exp['example_pool']}"
    out += [
        (f"Spearman correlation with the mean human rating; {limit}. "
         f"Brackets: 95% percentile bootstrap CI ({exp['bootstrap']} resamples, "
         f"{_unit_text([r.ci.unit for r in summary.results] + [c['unit'] for c in summary.comparisons])}, "
         f"seed {exp['seed']}). "
         "`*` = not significant: the bootstrap p of the same resamples is ≥ 0.05 (the overall `avg` is marked "
         "by its stratified bootstrap); **bold** = best in its column within its table; `± sd` = over selection "
         "seeds. Each kind of method has its own table, never averaged or bolded against another: reference-free; "
         "reference-based (any member reads the reference response); uses-future (reads the user's turn after "
         "the rated response, which a live judge never has); supervised on the scored set (ensemble weights "
         "learned on that set's own ratings, `fit = \"cv\"`). A method that is several goes to the first of "
         "supervised, uses-future, reference-based; `(uses-future)` marks one that also reads the next turn. "
         "`↳ without reference copies`: the same cells "
         "without the items whose response is (nearly) one of its references (flags `response_is_reference`, "
         "`response_near_reference`; see docs/data-format.md), Spearman recomputed on the reduced set, n = its "
         "items. "
         "`avg` columns follow the DSTC10 rule (mean over qualities within a set, then over sets); "
         "`(6 of 8)` = an average over fewer parts than the column has (a correlation was undefined), never bold. "
         "The overall `avg` CI is a stratified bootstrap: each replicate resamples every set's conversations "
         "on its own and averages as the point value does."
         + resampled_together_text(summary) + " "
         "`†` = some scores estimated from sampled answers (no log-probabilities); `‡` = some scores read from "
         "a top-N token list that may miss label spellings. "
         "Rows marked ↳ paper give the published value of Huynh et al. 2023 for comparison."
         + (" `(listwise)` = the method's prompt lists every rated reply to the same conversation (their texts, "
            "never their ratings) before the reply it asks about; reference-free."
            if any(m.get("listwise") for m in summary.methods.values()) else "")),
        "",
    ]
    out += ["## Leaderboard", ""] + leaderboard_md(board)
    comps = summary.comparisons
    out += _table("Paired comparisons (same items)",
                  f"Paired bootstrap: {', '.join(sorted({str(c['n_boot']) for c in comps}))} resamples, "
                  f"{_unit_text([c['unit'] for c in comps])}; the same resamples for A and B.",
                  ("A", "B", "set", "quality", "n", "r_A", "r_B", "r_A − r_B [95% CI]", "p (bootstrap)", "p (Williams)"),
                  "llllrrrrrr",
                  [[c["a"], c["b"], c["dataset"], c["quality"], str(c["n"]), fmt(c["r_a"]), fmt(c["r_b"]),
                    f"{fmt(c['diff'])} {ci_text(c['low'], c['high'], too_few(c, c.get('n_units')))}", comparison_p(c),
                    comparison_p(c, "williams_p")] for c in comps])
    # The configured pairs on the DSTC10 average: the question a leaderboard's reader asks first.
    out += _table("Paired comparisons of the averages (same items)",
                  "Paired stratified bootstrap: each resample draws every set's conversations on its own, the same "
                  "for A and B, and takes the DSTC10 average of each; n = items over all the sets."
                  + resampled_together_text(summary), AVERAGE_COMPARISON_HEADER, "llrrrrrr",
                  average_comparison_cells(summary.average_comparisons))
    out += pairwise.markdown(summary.pairwise or (), summary.pairwise_means or ())
    out += _table("System-level Spearman (scores averaged per generating system)", None,
                  ("method", "set", "quality", "n systems", "Spearman", "p"), "lllrrr",
                  [[r.method, r.dataset, r.quality, str(s.n), fmt(s.value), p_text(s.p)]
                   for r in summary.results if (s := r.system_spearman) is not None])
    out += _table("Compute time and memory",
                  "Summed over the runs that scored each method's rows (a resume adds its own rows; rows already "
                  "saved add nothing). `s/item` excludes model loading. Rows answered from the cache are fast: see "
                  "the hits. Peak RSS is the process's at the end of the method's cells; a run of several methods "
                  "reports the largest so far.", TIMING_HEADER, "lrrrrrr", timing_cells(summary.timing))
    out += _table("Learned ensemble weights",
                  "Weights on the members' percentiles. `lodo`: learned on the other sets' ratings only, the "
                  "scored set's unread. `cv`: each fold's items were scored with weights learned on the other "
                  "folds; the column gives their mean and range.", FITTED_HEADER, "lllll",
                  fitted_cells(summary.cells, summary.not_trained_on))
    out += _table("Heads", "Each cell was scored by a head fitted before the run (judge fit) on the sets listed, "
                  "never on the scored set or one that shares its conversations.", HEAD_HEADER, "l" * len(HEAD_HEADER),
                  head_cells(summary.cells))
    out += ["", "## Methods", ""]
    for m, spec in summary.methods.items():
        desc = ", ".join(f"{k}={v}" for k, v in spec.items() if v not in (None, {}, []))
        out.append(f"- `{m}`: {desc}")
    out += ["", _degenerate_text(summary)]
    failed = sum(r.n_failed for r in summary.results)
    out += ["", f"Failed items: {failed} (recorded with their error in the per-item files)."]
    for sk in summary.skipped:
        out.append(f"Not run (`–`): `{sk['method']}` on {sk['dataset']} {sk['quality']}: {sk['reason']}.")
    for lo in summary.left_out:
        out.append(f"Ensemble `{lo['method']}` on {lo['dataset']} {lo['quality']} without its optional "
                   f"{', '.join(f'`{m}`' for m in lo['members'])} (the set lacks the input).")
    if summary.wall_s is not None:
        out.append(f"Wall time of the last `judge run`: {summary.wall_s:.0f} s.")
    return "\n".join(out) + "\n"


def _table(title: str, about: str | None, header: Sequence[str], align: str, rows: list[list[str]]) -> list[str]:
    """A titled table with what it says (``align``: per column ``l`` or ``r``); nothing when there are no rows."""
    if not rows:
        return []
    return ["", f"## {title}", "", *([about, ""] if about else []), *md_table(header, rows, align)]


def _unit_text(resampled: list[str]) -> str:
    """How the bootstrap resampled (``resampled``: the unit of each CI): whole conversations (context groups)
    or single items."""
    units = set(resampled)
    if units == {"group"}:
        return "resampling conversations (each item's context group, all its items together)"
    if units <= {"item"}:
        return "resampling items"
    return "resampling conversations where the rows carry groups, items elsewhere"


def _degenerate_text(summary: Summary) -> str:
    """How many resamples had an undefined correlation (a constant column) and were left out."""
    comps = summary.comparisons
    n_ci = sum(r.ci.n_degenerate for r in summary.results)
    n_cmp = sum(c["n_degenerate"] for c in comps)
    text = (f"Degenerate bootstrap resamples (undefined correlation, left out): {n_ci} over the "
            f"{len(summary.results)} CIs")
    if comps:
        text += f", {n_cmp} over the {len(comps)} paired tests"
    return text + "."
