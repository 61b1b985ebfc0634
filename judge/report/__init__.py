"""Reports of a results folder: Markdown and HTML leaderboards, a CSV (and ``pairwise.csv`` for ``[[compare]]``
cells) and PNG plots.

``render_all`` writes them all from ``summary.json`` and the per-item files, without recomputing any
score; ``judge report RESULTS_DIR`` calls it.
"""

from __future__ import annotations

from pathlib import Path

from ..core.io import atomic_write_text
from ..records.results import VIEW_FILE, cell_path, slug
from ..records.rows import Row, read_rows
from ..records.summary import Summary, read_summary
from . import pairwise
from . import plots as pl
from .csv_table import render_csv
from .html import render_html
from .markdown import render_markdown

__all__ = ["render_all", "render_csv", "render_html", "render_markdown"]


def _cell_rows(results_dir: Path, summary: Summary) -> dict[tuple[str, str, str], list[Row]]:
    """Per-item rows of each (method, set, quality), first seed, for the scatter plots."""
    out = {}
    for c in summary.cells:
        key = (c.method, c.dataset, c.quality)
        if key in out:
            continue
        p = cell_path(results_dir, *c.key)
        if p.exists():
            out[key] = read_rows(p)
    return out


def render_all(results_dir: str | Path, summary: Summary | None = None, *, plots: bool = True) -> list[Path]:
    """Write summary.json (when given), leaderboard.md/.html, results.csv, pairwise.csv (with pairwise cells) and
    plots/*.png (with item cells); returns the paths."""
    root = Path(results_dir)
    written = []
    if summary is None:
        summary = read_summary(root)
    else:
        written.append(summary.write(root))
    view = VIEW_FILE if (root / VIEW_FILE).exists() else None  # ``judge view``'s page, when one was written here
    files = [("leaderboard.md", render_markdown(summary)), ("leaderboard.html", render_html(summary, view)),
             ("results.csv", render_csv(summary))]
    if summary.pairwise:
        files.append(("pairwise.csv", pairwise.csv_text(list(summary.pairwise))))
    for name, text in files:
        atomic_write_text(root / name, text)
        written.append(root / name)
    if plots and summary.results:
        pdir = root / "plots"
        pdir.mkdir(parents=True, exist_ok=True)
        written.append(pl.heatmap(summary, pdir / "heatmap.png"))
        rows = _cell_rows(root, summary)
        for m in summary.methods:
            written.append(pl.scatter(summary, rows, m, pdir / f"scatter_{slug(m)}.png"))
        k = pl.k_curve(summary, pdir / "k_curve.png")
        if k:
            written.append(k)
    return written
