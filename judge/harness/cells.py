"""Per-item result files of one cell (method x set x quality x seed): append-only, fsynced, resumable.

A line is written only when its item is finished, then flushed and fsynced, so a killed run leaves
complete lines plus at most one partial line. Resuming keeps the longest prefix of complete lines
whose ids match the expected item order, truncates anything after it, and continues from there.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..io import atomic_write_text, dumps
from ..items import Item
from ..scorer import Score
from .config import slug

DIGITS = 6


def cell_path(root: Path, method: str, dataset: str, quality: str, seed: int) -> Path:
    """Where a cell's per-item JSONL lives inside a results folder."""
    return root / "items" / slug(method) / slug(dataset) / slug(quality) / f"seed{seed}.jsonl"


def _r(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return round(float(x), DIGITS)


def item_row(item: Item, quality: str, score: Score) -> dict[str, Any]:
    """One per-item record, with fixed key order and float rounding (byte-stable across runs)."""
    return {
        "id": item.id,
        "human": _r(item.human(quality)),
        "score": _r(score.value) if score.error is None else None,
        "label_probs": None if score.label_probs is None else {k: _r(v) for k, v in score.label_probs.items()},
        "examples": list(score.examples),
        "error": score.error,
        "system": item.system,
        "group": item.group if item.group is None or not item.group.startswith("ctx:") else None,
        "n_prompt_tokens": score.n_prompt_tokens,
    }


def line(row: dict[str, Any]) -> bytes:
    return (dumps(row) + "\n").encode("utf-8")


def read_done(path: Path, expected_ids: Sequence[str]) -> tuple[list[dict[str, Any]], int]:
    """Rows already finished (a prefix of ``expected_ids``) and the byte length they occupy."""
    if not path.exists():
        return [], 0
    data = path.read_bytes()
    rows: list[dict[str, Any]] = []
    pos = 0
    while len(rows) < len(expected_ids):
        end = data.find(b"\n", pos)
        if end < 0:
            break  # a partial last line (killed mid-write) is never counted
        try:
            row = json.loads(data[pos:end].decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            break
        if not isinstance(row, dict) or row.get("id") != expected_ids[len(rows)]:
            break
        rows.append(row)
        pos = end + 1
    return rows, pos


class CellWriter:
    """Appends finished rows to a cell file, each one flushed and fsynced before the next item."""

    def __init__(self, path: Path, keep_bytes: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = "r+b" if path.exists() else "wb"
        self.f = open(path, mode)  # noqa: SIM115 - closed in close()
        self.f.truncate(keep_bytes)
        self.f.seek(keep_bytes)
        self.f.flush()
        os.fsync(self.f.fileno())

    def append(self, row: dict[str, Any]) -> None:
        self.f.write(line(row))
        self.f.flush()
        os.fsync(self.f.fileno())

    def close(self) -> None:
        self.f.close()


def rewrite(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Replace a cell file atomically (used after re-scoring failed items)."""
    atomic_write_text(path, "".join(dumps(r) + "\n" for r in rows))


def read_rows(path: Path) -> list[dict[str, Any]]:
    """All complete rows of a finished cell file."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for ln in f:
            if ln.endswith("\n"):
                rows.append(json.loads(ln))
    return rows
