"""Per-item result files of one cell (method x set x quality x seed): append-only, fsynced, resumable.

A line is written only when its item is finished, then flushed and fsynced, so a killed run leaves
complete lines plus at most one partial line. Resuming keeps the longest prefix of complete lines
whose ids match the expected item order, truncates anything after it, and continues from there.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.io import atomic_write_text, dumps


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
        self.rows = 0  # rows appended by this writer

    def append(self, row: dict[str, Any]) -> None:
        self.f.write(line(row))
        self.f.flush()
        os.fsync(self.f.fileno())
        self.rows += 1

    def close(self) -> None:
        self.f.close()


def rewrite(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Replace a cell file atomically (used after re-scoring failed items)."""
    atomic_write_text(path, "".join(dumps(r) + "\n" for r in rows))
