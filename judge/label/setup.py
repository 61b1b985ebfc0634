"""Opening a labelling desk from what ``judge label`` is given: the input's items, the qualities with their
scales, the order (and the rows it is weighted by), the labels file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ..core.errors import InputError
from ..data.qualities import Scale
from ..datasets.source import resolve_source
from ..records.rows import read_rows
from .desk import LabelDesk
from .order import uncertainty_weights, uniform_order, weighted_order


def open_desk(source: str, labels: str | Path, qualities: Sequence[str], *, scales: Mapping[str, Scale],
              data_dir: str | None = None, order: str = "uniform", rows: str | None = None,
              seed: int = 0) -> tuple[LabelDesk, str]:
    """The desk for ``source``'s items (a file or a registered set's name) and its page title."""
    src = resolve_source(source, data_dir, quality=qualities[0] if qualities else None, scales=scales)
    asked = [src.quality] + [src.info.quality(name) for name in qualities[1:]]
    names = [q.name.lower() for q in asked]
    if len(set(names)) < len(names):
        raise InputError("a quality is named twice", field="--quality")
    items = {it.id: it for it in src.items}
    if len(items) < len(src.items):
        raise InputError("item ids repeat: labels are joined by id", file=str(src.path), field="id")
    if order == "uncertainty":
        if rows is None:
            raise InputError("--order uncertainty reads the judge's answer distributions from rows", field="--rows")
        weights = uncertainty_weights(read_rows(rows), rows)
        stray = [i for i in weights if i not in items]
        if stray:
            raise InputError(f"{len(stray)} rows name items the input does not hold (first: {stray[0]!r}): rows "
                             "of another input?", file=rows, record=stray[0], field="id")
        chosen = weighted_order([i for i in items if i in weights], weights, seed)
    else:
        chosen = uniform_order(list(items), seed)
    Path(labels).parent.mkdir(parents=True, exist_ok=True)
    title = f"{src.info.name} · {', '.join(q.name for q in asked)}"
    return LabelDesk(items, asked, chosen, labels), title
