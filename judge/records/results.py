"""The results folder that ``judge run`` (and ``judge bench``) writes, as typed data.

Both the harness (which writes it) and the reports (which read it) import this module and nothing of
each other. Layout::

    RESULTS/items/<method>/<dataset>/<quality>/seed<N>.jsonl   per-item rows (judge.records.rows)
    RESULTS/items/.../seed<N>.meta.json                        the settings the cell was made with
    RESULTS/compare/<cell>/<dataset>/<quality>/pairs.jsonl     pair rows of a [[compare]] cell (judge.engine.compare)
    RESULTS/compare/.../against.jsonl                          the pointwise method's rows on the pairs' items
    RESULTS/summary.json                                       :class:`Summary`
    RESULTS/items/.../seed<N>.prompt.json                      how its prompts reached the model (judge view)
    RESULTS/leaderboard.md, leaderboard.html, results.csv, pairwise.csv, plots/*.png
    RESULTS/view.html                                          ``judge view RESULTS`` (linked from leaderboard.html)
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, TypedDict

#: Version of the summary.json layout.
SCHEMA = 2
#: Where ``judge view RESULTS`` writes its page by default; the leaderboard links to it when it exists.
VIEW_FILE = "view.html"


def slug(text: str) -> str:
    """A file-system-safe name: letters, digits, '.', '-' and '_' kept, anything else -> '_'."""
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", text.strip()).strip("_")
    return s or "_"


def cell_path(root: Path, method: str, dataset: str, quality: str, seed: int) -> Path:
    """Where a cell's per-item JSONL lives inside a results folder."""
    return root / "items" / slug(method) / slug(dataset) / slug(quality) / f"seed{seed}.jsonl"


def compare_path(root: Path, cell: str, dataset: str, quality: str, part: str) -> Path:
    """Where a ``[[compare]]`` cell's rows live: ``part`` is ``pairs`` (the pair rows) or ``against`` (the
    pointwise method's rows on the pairs' items)."""
    return root / "compare" / slug(cell) / slug(dataset) / slug(quality) / f"{part}.jsonl"


def read_rows(path: Path) -> list[dict[str, Any]]:
    """All complete rows of a finished cell file."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for ln in f:
            if ln.endswith("\n"):
                rows.append(json.loads(ln))
    return rows


class Corr(TypedDict):
    value: float | None
    p: float | None
    n: int


class CI(TypedDict, total=False):
    low: float | None
    high: float | None
    level: float
    n_boot: int
    seed: int
    unit: str
    n_degenerate: int


class CellStats(TypedDict, total=False):
    """One cell (method x set x quality x seed): correlations, CI, counts."""

    method: str
    dataset: str
    quality: str
    seed: int
    spearman: Corr
    pearson: Corr
    kendall: Corr
    ci: CI
    n_items: int
    n_failed: int
    n_estimated: int
    n_incomplete: int
    system_spearman: Corr


class Result(TypedDict, total=False):
    """A (method, set, quality) over its seeds: the leaderboard's cell."""

    method: str
    dataset: str
    quality: str
    seeds: list[int]
    spearman: float | None
    sd: float | None
    p: float | None
    ci: CI
    n: int
    pearson: Corr
    kendall: Corr
    system_spearman: Corr | None
    n_failed: int
    n_estimated: int
    n_incomplete: int


class Summary(TypedDict, total=False):
    """``summary.json``: everything the reports need, computed once from the per-item rows."""

    schema: int
    experiment: dict[str, Any]
    methods: dict[str, dict[str, Any]]
    datasets: list[dict[str, Any]]
    cells: list[CellStats]
    results: list[Result]
    #: Per method: per_set / overall DSTC10 averages, the parts each covers, and the overall's stratified CI.
    averages: dict[str, dict[str, Any]]
    comparisons: list[dict[str, Any]]
    #: Each configured pair on the DSTC10 average (paired stratified bootstrap over the sets' conversations).
    average_comparisons: list[dict[str, Any]]
    ceiling: dict[str, dict[str, Any]]
    #: ``[[compare]]`` cells: one entry per cell, set and quality (:func:`judge.stats.pairwise.pairwise_entry`).
    pairwise: list[dict[str, Any]]
    skipped: list[dict[str, str]]
    counters: dict[str, int]
    wall_s: float | None
