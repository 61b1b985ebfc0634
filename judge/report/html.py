"""A self-contained HTML leaderboard (no scripts, inline CSS): the Markdown report's leaderboard, paired
comparisons of the averages and compute time."""

from __future__ import annotations

from html import escape

from ..records.summary import Summary
from . import pairwise
from .table import (
    AVERAGE_COMPARISON_HEADER,
    FITTED_HEADER,
    HEAD_HEADER,
    TIMING_HEADER,
    CellValue,
    Leaderboard,
    Row,
    average_comparison_cells,
    build,
    cell_label,
    ci_text,
    fitted_cells,
    fmt,
    head_cells,
    resampled_together_text,
    timing_cells,
)

_CSS = """body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}td.best{font-weight:bold;background:#e8f5e9}
td.ns{color:#888}tr.paper td{color:#555;font-style:italic}tr.ceiling td{background:#f5f5f5}
tr.copies td{color:#555}
.ci{color:#666;font-size:85%}"""


def render_html(summary: Summary, view: str | None = None) -> str:
    """The page; ``view``: the path of the run's ``judge view`` page relative to this one, linked at the top."""
    board = build(summary)
    exp = summary.experiment
    h = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
         f"<title>{escape(board.title)}</title><style>{_CSS}</style></head><body>",
         f"<h1>{escape(board.title)}</h1>",
         "<p>Spearman with the mean human rating; brackets: 95% bootstrap CI resampling conversations; * = not "
         "significant (the bootstrap p of the same resamples &ge; 0.05); each kind of method (reference-free, "
         "reference-based, uses-future: reads the user's turn after the rated response, supervised on the "
         "scored set: ensemble weights learned on its ratings) has its own table, never averaged or bolded "
         "against another; (uses-future) = also reads the user's turn after the rated response; "
         "&ldquo;without reference copies&rdquo; = without the items whose response is "
         "(nearly) a reference; "
         f"&dagger; = some scores estimated from sampled answers; &Dagger; = some read from a top-N list; bold = best per column. Limit: {escape(str(exp['limit'] or 'all'))} items per set."
         f"{escape(resampled_together_text(summary))}</p>",
         ]
    if view is not None:
        h.append(f'<p class="view"><a href="{escape(view)}">Every item, the prompt the model read and two methods side '
                 f"by side: {escape(view)}</a></p>")
    for _kind, title, rows in board.sections():
        h += _leaderboard(board, title, rows)
    h += pairwise.html(summary.pairwise or (), summary.pairwise_means or ())
    h += _table("Paired comparisons of the averages (same items, stratified bootstrap over conversations)",
                AVERAGE_COMPARISON_HEADER, average_comparison_cells(summary.average_comparisons))
    h += _table("Compute time and memory (s/item excludes model loading)", TIMING_HEADER,
                timing_cells(summary.timing))
    h += _table("Learned ensemble weights (cv: mean [range] over folds)", FITTED_HEADER,
                fitted_cells(summary.cells, summary.not_trained_on))
    h += _table("Heads (fitted before the run on the sets listed, never the scored one)", HEAD_HEADER,
                head_cells(summary.cells))
    for img, alt in (("heatmap.png", "heatmap of methods x sets"), ("k_curve.png", "correlation vs k")):
        h.append(f'<p><img src="plots/{img}" alt="{alt}" onerror="this.remove()"></p>')
    h.append("</body></html>")
    return "\n".join(h) + "\n"


def _cell_html(c: CellValue, with_n: bool = False) -> str:
    cls = []
    if c.best:
        cls.append("best")
    if c.marked:
        cls.append("ns")
    text = cell_label(c)
    ci = (f' <span class="ci">{escape(ci_text(c.low, c.high, c.too_few))}</span>'
          if c.low is not None or c.too_few is not None else "")
    failed = f" ({c.n_failed} failed)" if c.n_failed and c.value is not None else ""
    n = f" n={c.n}" if with_n and c.n is not None and c.value is not None else ""
    return (f'<td class="{" ".join(cls)}" data-value="{"" if c.value is None else c.value}">'
            f"{escape(text)}{ci}{escape(failed)}{n}</td>")


def _leaderboard(board: Leaderboard, title: str, rows: list[Row]) -> list[str]:
    """One kind's table: its methods, the paper and without-copies lines, agreement, n rows."""
    h = [f"<h2>{escape(title)}</h2>", '<table class="leaderboard"><thead><tr><th>method</th>']
    h += [f"<th>{escape(c.label)}</th>" for c in board.columns]
    h.append("</tr></thead><tbody>")
    for r in rows:
        h.append(f'<tr><td class="method">{escape(r.label)}</td>' + "".join(_cell_html(c) for c in r.cells) + "</tr>")
        if r.paper_label and any(c.paper for c in r.cells):
            h.append(f'<tr class="paper"><td>paper: {escape(r.paper_label)}</td>'
                     + "".join(f"<td>{escape(c.paper.text()) if c.paper else ''}</td>" for c in r.cells) + "</tr>")
        if r.without_copies is not None:
            h.append('<tr class="copies"><td>without reference copies</td>'
                     + "".join(_cell_html(c, with_n=True) for c in r.without_copies) + "</tr>")
    if any(x is not None for x in board.ceiling):
        h.append('<tr class="ceiling"><td>human agreement (Krippendorff &alpha;)</td>'
                 + "".join(f"<td>{fmt(x)}</td>" for x in board.ceiling) + "</tr>")
    h.append('<tr class="n"><td>n (items)</td>' + "".join(
        f"<td>{'' if c.n is None else c.n}</td>" for c in board.columns) + "</tr>")
    h.append('<tr class="n"><td>n (conversations)</td>' + "".join(
        f"<td>{'' if c.n_conversations is None else c.n_conversations}</td>" for c in board.columns) + "</tr>")
    return [*h, "</tbody></table>"]


def _table(title: str, header: tuple[str, ...], rows: list[list[str]]) -> list[str]:
    """A titled plain table (nothing when there are no rows)."""
    if not rows:
        return []
    h = [f"<h2>{escape(title)}</h2>", '<table class="plain"><thead><tr>']
    h += [f"<th>{escape(x)}</th>" for x in header] + ["</tr></thead><tbody>"]
    h += ["<tr>" + "".join(f"<td>{escape(x)}</td>" for x in row) + "</tr>" for row in rows]
    return [*h, "</tbody></table>"]
