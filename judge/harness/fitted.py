"""What a cell's method learned from the ratings (an ensemble's fitted weights), kept beside its rows.

Rows stay byte-identical however a run was interrupted, so learned weights get their own
``seedN.fit.json``, written once the cell's scoring has finished. A resume that finds every row saved
scores nothing and leaves the file as the run that scored the cell wrote it; weights are a pure
function of the cell's items, their members' scores and ratings, so a later run that does score
writes the same file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..core.io import atomic_write_text


def fitted_path(cell_file: Path) -> Path:
    """The fit file beside a cell's rows (``seed0.jsonl`` -> ``seed0.fit.json``)."""
    return cell_file.with_suffix(".fit.json")


def write_fitted(cell_file: Path, fitted: dict[str, object]) -> None:
    """Record what the cell's scorer learned (atomically)."""
    atomic_write_text(fitted_path(cell_file), json.dumps(fitted, indent=1) + "\n")


def read_fitted(cell_file: Path) -> dict[str, Any] | None:
    """What the cell's method learned; None for a method that learns nothing (no file)."""
    path = fitted_path(cell_file)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
