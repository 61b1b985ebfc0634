"""Human labels collected on items after a run (``judge label`` writes them; ``judge estimate``, ``judge bench``
and ``judge fit`` read them): one JSON line per label, joined to the scored rows by item id.

The file is append-only and every label is flushed and synced to disk before it counts, so a killed labeller
loses at most the line it was writing; a reader skips a last line cut short (it has no newline) and refuses a
malformed complete one, naming the file and line. Two labels of one item by one rater are both kept: the later
one is the rater's answer (:func:`latest_labels`), the earlier one stays as the record of what was said."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, ClassVar

from .record import Record
from .rows import read_records


@dataclass(frozen=True)
class Label(Record):
    """One person's rating of one item: ``scores`` maps a quality to the rating on that quality's declared
    scale; ``rater`` names who gave it and ``time`` when (ISO 8601, UTC). ``probability`` is the chance the
    sampling order gave this item of being shown (absent: a uniform random sample), so that an estimate can
    weight actively chosen items by its inverse; ``position`` is the item's place in that order."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"rater", "time", "probability", "position"})

    id: str
    scores: dict[str, float]
    rater: str | None = None
    time: str | None = None
    probability: float | None = None
    position: int | None = None


def read_labels(path: str | Path) -> list[Label]:
    """Every complete label of a labels file, in the order written (InputError naming the file and line)."""
    return read_records(path, Label)


def append_label(path: str | Path, label: Label) -> None:
    """Append ``label`` as one line and sync it to disk before returning: once this returns, a crash cannot
    lose it. A last line left cut short by a crash mid-write (its label was never confirmed) is cut off first,
    so it cannot glue itself to this label and turn two lines into one bad one."""
    path = Path(path)
    with open(path, "ab+") as f:
        if f.tell() > 0:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                f.truncate(_last_line_start(f))
        f.write((label.to_json() + "\n").encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())


def _last_line_start(f: BinaryIO) -> int:
    """The offset where the file's last (unfinished) line starts."""
    end = f.seek(0, os.SEEK_END)
    pos = end
    while pos > 0:
        step = min(4096, pos)
        f.seek(pos - step)
        chunk = f.read(step)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            return pos - step + cut + 1
        pos -= step
    return 0


def latest_labels(labels: list[Label]) -> dict[tuple[str, str | None], Label]:
    """Each (item id, rater)'s last label: a rater who changed their mind counts once, with the later answer."""
    return {(label.id, label.rater): label for label in labels}


def ratings_by_item(labels: list[Label]) -> dict[str, dict[str, tuple[float, ...]]]:
    """Item id -> quality (lower-cased) -> its raters' ratings, each rater's latest (:func:`latest_labels`), in
    the order the raters first labelled it: what every reader of labels averages or picks from."""
    out: dict[str, dict[str, list[float]]] = {}
    for label in latest_labels(labels).values():
        for quality, value in label.scores.items():
            out.setdefault(label.id, {}).setdefault(quality.lower(), []).append(float(value))
    return {i: {q: tuple(v) for q, v in qs.items()} for i, qs in out.items()}
