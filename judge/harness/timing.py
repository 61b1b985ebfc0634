"""Compute time and memory of each cell, kept beside its rows so that they survive resumes.

A cell's rows must be byte-identical however often its run was interrupted, so time cannot live in
them. Each cell gets a ``seedN.time.json`` file instead, which adds up, over every run that computed
rows for the cell: the rows, the seconds spent scoring them, the seconds spent loading the model,
the cache hits and misses, and the process's peak resident memory. A resume that finds every row
saved adds nothing, so the figures stay those of the runs that did the work.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from ..core.io import atomic_write_text


@dataclass(frozen=True)
class CellTiming:
    """What computing (part of) one cell cost."""

    rows: int = 0
    seconds: float = 0.0
    load_s: float = 0.0
    cache_hits: int = 0
    cache_misses: int = 0
    #: The process's peak RSS by the end of the cell: it includes models an earlier cell of the
    #: same run loaded, so only a run of one method gives that method's own footprint.
    peak_rss_mib: float | None = None

    def __add__(self, other: CellTiming) -> CellTiming:
        peaks = [p for p in (self.peak_rss_mib, other.peak_rss_mib) if p is not None]
        return CellTiming(self.rows + other.rows, self.seconds + other.seconds, self.load_s + other.load_s,
                          self.cache_hits + other.cache_hits, self.cache_misses + other.cache_misses,
                          max(peaks) if peaks else None)


def timing_path(cell_file: Path) -> Path:
    """The time file beside a cell's rows (``seed0.jsonl`` -> ``seed0.time.json``)."""
    return cell_file.with_suffix(".time.json")


def read_timing(cell_file: Path) -> CellTiming:
    """The cell's accumulated timing; an absent file (no row computed yet, or results written before
    timing was kept) reads as zero."""
    path = timing_path(cell_file)
    if not path.exists():
        return CellTiming()
    data = json.loads(path.read_text(encoding="utf-8"))
    return CellTiming(**{f.name: data[f.name] for f in fields(CellTiming) if f.name in data})


def add_timing(cell_file: Path, new: CellTiming) -> None:
    """Add one run's figures to the cell's time file (atomically; nothing is written for no rows)."""
    if new.rows == 0:
        return
    total = read_timing(cell_file) + new
    data = {k: round(v, 3) if isinstance(v, float) else v for k, v in asdict(total).items()}
    atomic_write_text(timing_path(cell_file), json.dumps(data, indent=1) + "\n")


def peak_rss_mib() -> float | None:
    """This process's peak resident memory so far, in MiB (None where the platform cannot say)."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / 2**20 if sys.platform == "darwin" else peak / 2**10, 1)  # bytes on macOS, KiB elsewhere


def method_timing(cells: Iterable[CellTiming]) -> dict[str, Any] | None:
    """One method's figures over its cells for ``summary.json`` (None when no cell recorded any)."""
    total = sum(cells, CellTiming())
    if total.rows == 0:
        return None
    return {"rows": total.rows, "seconds": round(total.seconds, 1), "s_per_item": round(total.seconds / total.rows, 4),
            "load_s": round(total.load_s, 1), "cache_hits": total.cache_hits, "cache_misses": total.cache_misses,
            "peak_rss_mib": total.peak_rss_mib}
