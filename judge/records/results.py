"""The results folder that ``judge run`` (and ``judge bench``) writes, as typed data.

Both the harness (which writes it) and the reports (which read it) import this module and nothing of
each other. Layout::

    RESULTS/items/<method>/<dataset>/<quality>/seed<N>.jsonl   per-item rows (judge.records.rows.Row)
    RESULTS/items/.../seed<N>.meta.json                        the settings the cell was made with
    RESULTS/compare/<cell>/<dataset>/<quality>/pairs.jsonl     pair rows of a [[compare]] cell (judge.records.pair_rows)
    RESULTS/compare/.../against.jsonl                          the pointwise method's rows on the pairs' items
    RESULTS/summary.json                                       judge.records.summary.Summary
    RESULTS/items/.../seed<N>.prompt.json                      how its prompts reached the model (judge view)
    RESULTS/leaderboard.md, leaderboard.html, results.csv, pairwise.csv, plots/*.png
    RESULTS/view.html                                          ``judge view RESULTS`` (linked from leaderboard.html)
"""

from __future__ import annotations

import re
from pathlib import Path

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
