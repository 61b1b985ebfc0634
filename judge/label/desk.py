"""Who labelled what, and the next item for each rater; every label written at once.

The desk holds the items, the qualities asked for and the order (:mod:`.order`). A rater's next item is
the first in the order they have not labelled, so raters each go through the same order (the items
several rated are where their agreement is measured) and a restart resumes where each stopped: the
labels file is the only state, read back when the desk opens. A label is checked (every quality asked
for, on its scale and steps) and appended with :func:`judge.records.labels.append_label`, synced to disk
before the rater sees the next item.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..data.items import SYSTEM, USER, Item
from ..data.qualities import Quality
from ..records.labels import Label, append_label, read_labels
from .order import Order

#: Integer scales up to this many points are offered as buttons, one per point; others as a number field.
MAX_POINTS = 11
#: The longest rater name taken.
MAX_RATER = 80


def scale_steps(quality: Quality) -> tuple[float, ...] | None:
    """The points a rating on ``quality``'s scale may take: every integer from min to max when both ends are
    integers (the benchmark sets' raters answered on such scales), None for any value in between."""
    lo, hi = (float(v) for v in quality.scale("labelling"))
    if lo.is_integer() and hi.is_integer() and hi - lo + 1 <= MAX_POINTS:
        return tuple(float(v) for v in range(int(lo), int(hi) + 1))
    return None


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def check_rater(name: object) -> str:
    """A rater's name, stripped; InputError when empty or too long."""
    text = name.strip() if isinstance(name, str) else ""
    if not text or len(text) > MAX_RATER:
        raise InputError(f"a rater needs a name of 1 to {MAX_RATER} characters", field="rater")
    return text


class LabelDesk:
    """The labelling state of one labels file over one input's items in one order (thread-safe)."""

    def __init__(self, items: Mapping[str, Item], qualities: Sequence[Quality], order: Order, path: str | Path,
                 clock: Callable[[], str] = utc_now) -> None:
        self.items, self.qualities, self.order, self.path, self.clock = items, tuple(qualities), order, Path(path), clock
        for q in self.qualities:
            q.scale("labelling")  # a quality without a known scale cannot be offered
        self._lock = threading.Lock()
        self._done: dict[str, set[str]] = {}
        for label in read_labels(self.path) if self.path.exists() else []:
            self._check_known(label)
            if label.rater is not None:
                self._done.setdefault(label.rater, set()).add(label.id)

    def _check_known(self, label: Label) -> None:
        """A label already in the file must be of this input, in this order: resuming in another order (another
        seed, another weighting) would show a rater items out of the sample they were drawn in."""
        where = {"file": str(self.path), "record": label.id}
        if label.id not in self.order.positions:
            raise InputError("the labels file names an item the input does not hold: labels of another input? "
                             "(use another labels file)", field="id", **where)
        position = self.order.positions[label.id]
        probability = self.order.probability[label.id]
        if (label.position is not None and label.position != position) or (
                label.probability is not None and not math.isclose(label.probability, probability, rel_tol=1e-9)):
            raise InputError(f"the labels file was written in another order (item at position {label.position}, "
                             f"here {position} in the {self.order.kind} order of seed {self.order.seed}): pass the "
                             "--order, --rows and --seed it was written with, or use another labels file",
                             field="position", **where)

    def done_by_rater(self) -> dict[str, frozenset[str]]:
        """The ids each rater has labelled so far."""
        with self._lock:
            return {r: frozenset(ids) for r, ids in self._done.items()}

    def labelled(self, rater: str) -> int:
        with self._lock:
            return len(self._done.get(rater, ()))

    def next_position(self, rater: str) -> int | None:
        """The position of the first item in the order ``rater`` has not labelled (None: all done)."""
        with self._lock:
            done = self._done.get(rater, set())
            return next((p for p, i in enumerate(self.order.ids) if i not in done), None)

    def state(self, rater: str) -> dict[str, Any]:
        """What the page shows ``rater`` next: the item (never a score or a rating), its place, their count."""
        rater = check_rater(rater)
        position = self.next_position(rater)
        return {"rater": rater, "labelled": self.labelled(rater), "total": len(self.order.ids), "position": position,
                "item": None if position is None else item_view(self.items[self.order.ids[position]])}

    def record(self, rater: str, item_id: str, scores: Mapping[str, Any]) -> Label:
        """Check and append ``rater``'s label of ``item_id``; it is on disk when this returns."""
        rater = check_rater(rater)
        if item_id not in self.order.positions:
            raise InputError("no such item to label", record=str(item_id), field="id")
        label = Label(id=item_id, scores=self._check_scores(scores), rater=rater, time=self.clock(),
                      probability=self.order.probability[item_id], position=self.order.positions[item_id])
        with self._lock:
            append_label(self.path, label)
            self._done.setdefault(rater, set()).add(item_id)
        return label

    def _check_scores(self, scores: Mapping[str, Any]) -> dict[str, float]:
        names = {q.name for q in self.qualities}
        extra = sorted(set(scores) - names)
        if extra:
            raise InputError(f"not a quality being labelled: {', '.join(extra)} (labelled: {', '.join(sorted(names))})",
                             field="scores")
        out: dict[str, float] = {}
        for q in self.qualities:
            value = scores.get(q.name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise InputError(f"a rating of {q.name} is needed, a number", field=f"scores.{q.name}")
            lo, hi = q.scale()
            steps = scale_steps(q)
            if not lo <= value <= hi or (steps is not None and float(value) not in steps):
                raise InputError(f"{value} is not on {q.name}'s scale {lo:g}-{hi:g}"
                                 + (" in steps of 1" if steps else ""), field=f"scores.{q.name}")
            out[q.name] = float(value)
        return out

    def qualities_view(self) -> list[dict[str, Any]]:
        """The qualities as the page offers them: name, wording, scale ends and steps."""
        return [{"name": q.name, "description": q.description, "min": q.min, "max": q.max, "steps": scale_steps(q),
                 "negative": q.negative} for q in self.qualities]


def item_view(item: Item) -> dict[str, Any]:
    """What a rater sees of an item: the conversation and the reply (or the whole dialog), the bot's
    instructions or background knowledge. Never a score, a rating, the references or what the user said next."""
    shown = item.context if item.level == "turn" else item.dialog
    who = {USER: "user", SYSTEM: "bot"}
    return {"id": item.id, "level": item.level, "turns": [[who.get(t.speaker, t.speaker), t.text] for t in shown],
            "response": item.response if item.level == "turn" else None, "background": item.fact}
