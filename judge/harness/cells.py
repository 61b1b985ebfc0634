"""Per-item result files of one cell (method x set x quality x seed): append-only, fsynced, resumable.

A line is written only when its item is finished, then flushed and fsynced, so a killed run leaves
complete lines plus at most one partial line. Resuming keeps the longest prefix of complete lines
whose ids match the expected item order, truncates anything after it, and continues from there.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..core.io import atomic_write_text
from ..data.items import Item
from ..data.pairs import Pair
from ..engine.session import Session
from ..engine.spec import Prepared
from ..records.pair_rows import PairRow
from ..records.record import R
from ..records.rows import Row, read_records, rounded
from .fitted import meta_settings, record_fit, write_fitted
from .prompt_settings import write_prompt_settings
from .timing import CellTiming, add_timing, peak_rss_mib


def line(row: Row | PairRow) -> bytes:
    return (row.to_json() + "\n").encode("utf-8")


def read_done(path: Path, expected_ids: Sequence[str], kind: type[R]) -> tuple[list[R], int]:
    """Rows (records of ``kind``) already finished (a prefix of ``expected_ids``) and the byte length they
    occupy."""
    if not path.exists():
        return [], 0
    data = path.read_bytes()
    rows: list[R] = []
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
        rows.append(kind.from_dict(row, file=str(path)))
        pos = end + 1
    return rows, pos


class CellWriter:
    """Appends finished rows to a cell file, each one flushed and fsynced before the next item."""

    def __init__(self, path: Path, keep_bytes: int) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = "r+b" if path.exists() else "wb"
        self.f = open(path, mode)  # noqa: SIM115 - closed in close()
        self.f.truncate(keep_bytes)
        self.f.seek(keep_bytes)
        self.f.flush()
        os.fsync(self.f.fileno())
        self.rows = 0  # rows appended by this writer

    def append(self, row: Row | PairRow) -> None:
        self.f.write(line(row))
        self.f.flush()
        os.fsync(self.f.fileno())
        self.rows += 1

    def close(self, seconds: float, load_s: float, counters: Mapping[str, int], before: Mapping[str, int]) -> None:
        """Close the file and add what computing its new rows cost to its time file: ``seconds`` and ``load_s``,
        the cache hits and misses of ``counters`` less those of ``before``, and the peak RSS by now."""
        self.f.close()
        hits, misses = (counters.get(k, 0) - before.get(k, 0) for k in ("cache_hits", "cache_misses"))
        add_timing(self.path, CellTiming(self.rows, seconds, load_s, hits, misses, peak_rss_mib()))


def rewrite(path: Path, rows: Sequence[Row | PairRow]) -> None:
    """Replace a cell file atomically (used after re-scoring failed items)."""
    atomic_write_text(path, "".join(r.to_json() + "\n" for r in rows))


def check_meta(path: Path, meta: dict[str, Any]) -> None:
    """Refuse to resume into a cell written with other settings (mixing them would corrupt results)."""
    mpath = path.with_suffix(".meta.json")
    if mpath.exists():
        old = meta_settings(json.loads(mpath.read_text(encoding="utf-8")))  # what a fit recorded after it ran is no setting
        if old != meta:
            diff = sorted(k for k in {*meta, *old} if old.get(k) != meta.get(k))
            raise InputError(
                f"existing results were made with different settings ({', '.join(diff)}); "
                "write to a new results folder (-o) or delete this one", file=str(mpath))
    else:
        atomic_write_text(mpath, json.dumps(meta, indent=1, ensure_ascii=False) + "\n")


def check_ratings(path: Path, items: Sequence[Item], quality: str, rows: Sequence[Row]) -> None:
    """Refuse to resume into rows saved against other human ratings than the items carry today (the data
    file or its loader changed since): the cell's figures would pair today's ratings with yesterday's."""
    for item, row in zip(items, rows, strict=False):  # rows: the saved prefix of the items
        if row.human != (now := rounded(item.human(quality))):
            raise InputError(f"saved rows were made against other human ratings (item {item.id}: {row.human} "
                             f"saved, {now} now): the data or its loader changed; write to "
                             "a new results folder (-o) or delete this one", file=str(path))


def compute(path: Path, nbytes: int, session: Session, prep: Prepared, todo: Sequence[Item] | Sequence[Pair],
            progress: Callable[[int], None] | None = None, *, quality: str | None, seed: int | None = None,
            cell: bool = True) -> None:
    """Score ``todo`` (pairs, for a method that compares) with ``prep`` into ``path`` from ``nbytes`` on, and add
    what that cost to the time file, the model's load apart (also when interrupted, for the rows that were
    saved). A grid cell (``cell``) also records how its prompts were sent and, once done, what the method
    learned from the ratings, if anything."""
    writer = CellWriter(path, nbytes)
    start = time.perf_counter()
    load_s = 0.0
    before = session.counters()
    try:
        judge = session.build(prep)  # loads the model when the previous cell used another
        load_s = time.perf_counter() - start
        if cell:
            write_prompt_settings(path, judge)
        session.rows(prep, todo, writer.append, progress=progress, quality=quality, seed=seed, judge=judge)
        fitted = judge.fitted() if cell else None
        if fitted is not None:
            write_fitted(path, fitted)
            record_fit(path)  # the sets a lodo fit learned on, in the meta file
    finally:
        writer.close(time.perf_counter() - start - load_s, load_s, session.counters(), before)


def retry_failed(path: Path, todo: Sequence[Item] | Sequence[Pair], session: Session, prep: Prepared, *,
                 quality: str | None, seed: int | None = None) -> None:
    """Score again the items (pairs) of a finished cell whose saved rows failed; rewrite the file only if any
    now succeed."""
    rows: list[Row | PairRow] = list(read_records(path, PairRow if prep.spec.kind.compares else Row))
    failed = [i for i, r in enumerate(rows) if r.error]
    if not failed:
        return
    new: list[Row | PairRow] = []
    session.rows(prep, [todo[i] for i in failed], new.append, quality=quality, seed=seed)  # type: ignore[arg-type]
    if any(row != rows[i] for i, row in zip(failed, new, strict=True)):
        for i, row in zip(failed, new, strict=True):
            rows[i] = row
        rewrite(path, rows)
