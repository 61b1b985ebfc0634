"""What a cell's method learned from the ratings (an ensemble's fitted weights), kept beside its rows.

Rows stay byte-identical however a run was interrupted, so learned weights get their own
``seedN.fit.json``, written once the cell's scoring has finished. A resume that finds every row saved
scores nothing and leaves the file as the run that scored the cell wrote it; weights are a pure
function of the cell's items, their members' scores and ratings, so a later run that does score
writes the same file.

A ``fit = "lodo"`` cell's meta file names the sets offered to its fit (``training_offered``: a setting, which a
resume must find unchanged); which of them the fit used, and why it left any out, is known only after it has
run, so :func:`record_fit` adds them to the meta file then (``trained_on``, ``dropped``), from the fit file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..core.io import atomic_write_text

#: What a cell's meta file gains once its fit has run: an outcome, not a setting, so a resume and a rebuild
#: compare the rest (:func:`meta_settings`).
FIT_RECORD = ("trained_on", "dropped")


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


def meta_settings(meta: dict[str, Any]) -> dict[str, Any]:
    """A cell's meta without what its fit recorded: the settings a resume must find unchanged. A meta file
    written before the fit's outcome was recorded apart named the offered sets ``trained_on``: they are read
    as ``training_offered``, so such a folder still resumes."""
    if "trained_on" in meta and "training_offered" not in meta:
        meta = {**meta, "training_offered": meta["trained_on"]}
    return {k: v for k, v in meta.items() if k not in FIT_RECORD}


def record_fit(cell_file: Path) -> None:
    """Add to the cell's meta file the sets its fit learned on (``trained_on``) and those it could not use,
    with why (``dropped``), as its fit file records them; nothing for a cell that learns on no other set.
    Idempotent: a resume that fits nothing rewrites nothing."""
    fitted = read_fitted(cell_file)
    mpath = cell_file.with_suffix(".meta.json")
    if fitted is None or "trained_on" not in fitted or not mpath.exists():
        return
    meta = json.loads(mpath.read_text(encoding="utf-8"))
    recorded = {**meta_settings(meta), "trained_on": list(fitted["trained_on"]),
                **({"dropped": dict(fitted["dropped"])} if fitted.get("dropped") else {})}
    if recorded != meta:
        atomic_write_text(mpath, json.dumps(recorded, indent=1, ensure_ascii=False) + "\n")
