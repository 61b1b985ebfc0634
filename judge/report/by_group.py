"""Answers per version as a person reads them: Markdown (the terminal and a pull request), a self-contained
HTML page and a CSV table, all from one :class:`judge.stats.by_group.ByGroup`.

Each group's line gives the mean score with its 95% interval over conversations (or ``too few conversations
(k)`` below the floor), the items, failed items and conversations behind it, its quantiles and a small
histogram on bins shared by every group; then the worst conversations of each group, each linking to its
lowest-scored item in ``judge view`` (``VIEW#item=ID``, which opens that item). Every number is printed at
fixed precision and nothing depends on the time or the machine, so the same rows give the same bytes.
"""

from __future__ import annotations

import csv
import io
from html import escape
from urllib.parse import quote

from ..stats.by_group import ByGroup, GroupSummary
from ..stats.floor import too_few_text
from .table import fmt

#: The bars of a text histogram, lowest to highest.
BARS = " ▁▂▃▄▅▆▇█"
#: The columns of the CSV summary (one row per group).
CSV_FIELDS = ("group", "n_items", "n_failed", "n_conversations", "mean", "ci_low", "ci_high", "ci_text",
              "min", "p10", "p25", "median", "p75", "p90", "max", "histogram", "worst_conversations")


def view_link(view: str | None, item: str) -> str | None:
    """The address of ``item`` in the ``judge view`` page ``view`` (None without a page)."""
    return f"{view}#item={quote(item, safe='')}" if view else None


def group_name(by: tuple[str, ...], key: tuple[str, ...]) -> str:
    """``version=2.3`` or ``model=shopbot, version=2.3``."""
    return ", ".join(f"{f}={v}" for f, v in zip(by, key, strict=True))


def interval_text(g: GroupSummary) -> str:
    """``[0.512, 0.598]``, or the floor's text below it."""
    if g.too_few:
        return too_few_text(g.n_resampled)
    return f"[{fmt(g.low)}, {fmt(g.high)}]"


def sparkline(counts: tuple[int, ...]) -> str:
    """A histogram in one line of block characters (each bar scaled to the group's largest bin)."""
    top = max(counts, default=0)
    if not top:
        return ""
    return "".join(BARS[0 if c == 0 else max(1, round(c / top * (len(BARS) - 1)))] for c in counts)


def _header(result: ByGroup) -> str:
    quality = f" on {result.quality}" if result.quality else ""
    methods = ", ".join(result.methods)
    lower = (f" Lower is better{quality}: the worst conversations are those scored highest."
             if result.lower_is_better else "")
    return (f"Mean {methods} score{quality} per {', '.join(result.by)}, with a {round(result.level * 100)}% "
            f"bootstrap interval over conversations ({result.n_boot} resamples, seed {result.seed}).{lower}")


def _worst_item_column(result: ByGroup) -> str:
    """The worst-item column's title: the lowest-scored item, or the highest where lower is better."""
    return "highest item" if result.lower_is_better else "lowest item"


def _edges_text(result: ByGroup) -> str:
    if not result.edges:
        return ""
    return (f"Histogram: {len(result.edges) - 1} equal bins from {fmt(result.edges[0])} to {fmt(result.edges[-1])} "
            "(the lowest and highest score of every group).")


def render_markdown(result: ByGroup, view: str | None = None) -> str:
    """The summary as Markdown: a table of the groups, then each group's worst conversations."""
    lines = [f"## Scores per {', '.join(result.by)}", "", _header(result), ""]
    lines += ["| " + " | ".join([*result.by, "mean", "95% CI", "items", "failed", "conversations", "median",
                                 "p10–p90", "histogram"]) + " |",
              "|" + "---|" * (len(result.by) + 8)]
    for g in result.groups:
        q = g.quantiles
        spread = f"{fmt(q.get('p10'))}–{fmt(q.get('p90'))}" if q else "–"
        lines.append("| " + " | ".join([*(_md(v) for v in g.key), fmt(g.mean), interval_text(g), str(g.n_items),
                                        str(g.n_failed), str(g.n_conversations), fmt(q.get("median")), spread,
                                        f"`{sparkline(g.histogram)}`" if g.histogram else ""]) + " |")
    edges = _edges_text(result)
    if edges:
        lines += ["", edges]
    for g in result.groups:
        if not g.worst:
            continue
        lines += ["", f"### Worst conversations: {_md(group_name(result.by, g.key))}", "",
                  f"| conversation | mean | items | failed | {_worst_item_column(result)} | its score |",
                  "|---|---|---|---|---|---|"]
        for c in g.worst:
            link = view_link(view, c.worst_item) if c.worst_item else None
            item = f"[{_md(c.worst_item)}]({link})" if link and c.worst_item else _md(c.worst_item or "–")
            lines.append(f"| {_md(c.id)} | {fmt(c.mean)} | {c.n_items} | {c.n_failed} | {item} | "
                         f"{fmt(c.worst_score)} |")
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin-bottom:1em}th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}td.few{color:#888}.hist{font-family:monospace;letter-spacing:1px}"""


def render_html(result: ByGroup, view: str | None = None) -> str:
    """The summary as one self-contained page (no scripts, inline CSS)."""
    title = f"Scores per {', '.join(result.by)}"
    h = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', f"<title>{escape(title)}</title>",
         f"<style>{_CSS}</style></head><body>", f"<h1>{escape(title)}</h1>", f"<p>{escape(_header(result))}</p>",
         '<table id="groups"><thead><tr>']
    h += [f"<th>{escape(x)}</th>" for x in (*result.by, "mean", "95% CI", "items", "failed", "conversations",
                                             "median", "p10–p90", "histogram")]
    h.append("</tr></thead><tbody>")
    for g in result.groups:
        q = g.quantiles
        cells = [*(escape(v) for v in g.key), fmt(g.mean)]
        ci = f'<td class="few">{escape(interval_text(g))}</td>' if g.too_few else f"<td>{escape(interval_text(g))}</td>"
        rest = [str(g.n_items), str(g.n_failed), str(g.n_conversations), fmt(q.get("median")),
                f"{fmt(q.get('p10'))}–{fmt(q.get('p90'))}" if q else "–"]
        hist = f'<td class="hist" title="{escape(" ".join(map(str, g.histogram)))}">{escape(sparkline(g.histogram))}</td>'
        h.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + ci + "".join(f"<td>{c}</td>" for c in rest)
                 + hist + "</tr>")
    h.append("</tbody></table>")
    edges = _edges_text(result)
    if edges:
        h.append(f"<p>{escape(edges)}</p>")
    for g in result.groups:
        if not g.worst:
            continue
        h += [f"<h2>Worst conversations: {escape(group_name(result.by, g.key))}</h2>", '<table class="worst"><thead><tr>']
        h += [f"<th>{x}</th>" for x in ("conversation", "mean", "items", "failed", _worst_item_column(result),
                                                "its score")]
        h.append("</tr></thead><tbody>")
        for c in g.worst:
            link = view_link(view, c.worst_item) if c.worst_item else None
            item = f'<a href="{escape(link)}">{escape(c.worst_item or "")}</a>' if link \
                else escape(c.worst_item or "–")
            h.append(f"<tr><td>{escape(c.id)}</td><td>{fmt(c.mean)}</td><td>{c.n_items}</td><td>{c.n_failed}</td>"
                     f"<td>{item}</td><td>{fmt(c.worst_score)}</td></tr>")
        h.append("</tbody></table>")
    return "\n".join([*h, "</body></html>"]) + "\n"


def render_csv(result: ByGroup) -> str:
    """One row per group (CSV_FIELDS): the worst conversations as ``id:mean`` separated by spaces, the
    histogram's counts likewise; the interval's ends empty below the floor, ``ci_text`` saying why."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*result.by, *CSV_FIELDS[1:]])
    for g in result.groups:
        q = g.quantiles
        w.writerow([*g.key, g.n_items, g.n_failed, g.n_conversations, _num(g.mean), _num(g.low), _num(g.high),
                    interval_text(g), *(_num(q.get(name)) for name in ("min", "p10", "p25", "median", "p75", "p90",
                                                                      "max")),
                    " ".join(map(str, g.histogram)), " ".join(f"{c.id}:{_num(c.mean)}" for c in g.worst)])
    return buf.getvalue()


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:.6f}"
