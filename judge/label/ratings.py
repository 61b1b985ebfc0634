"""Labels as the human ratings of the items they name (``judge bench --labels``, ``judge fit --labels``).

The labels replace the data's ratings of that quality altogether: an item nobody labelled has no rating
(it is skipped as unrated), and a labelled item's ratings are its raters' latest labels, one value each, so
that the benchmark compares the judge with these raters and never with a mix of them and the data's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ..core.errors import InputError
from ..data.items import Item
from ..datasets._common import check_scale
from ..datasets.source import Source
from ..records.labels import Label, ratings_by_item, read_labels


def labelled_ratings(labels: Sequence[Label], quality: str) -> dict[str, tuple[float, ...]]:
    """Each item's ratings of ``quality`` (case-insensitive) in ``labels``: each rater's latest, in file order."""
    wanted = quality.lower()
    return {i: qs[wanted] for i, qs in ratings_by_item(list(labels)).items() if wanted in qs}


def with_labels(items: Sequence[Item], path: str | Path, quality: str) -> list[Item]:
    """``items`` with their ``quality`` ratings taken from the labels file at ``path`` instead of the data.

    InputError (naming the file) when no label rates ``quality``, or when a label names an item that is not
    among ``items`` (labels of another input)."""
    ratings = labelled_ratings(read_labels(path), quality)
    if not ratings:
        raise InputError(f"no label rates {quality!r}", file=str(path), field="scores")
    known = {it.id for it in items}
    stray = [i for i in ratings if i not in known]
    if stray:
        raise InputError(f"{len(stray)} labelled items are not in the input (first: {stray[0]!r}): labels of "
                         "another input?", file=str(path), record=stray[0], field="id")
    out = []
    for it in items:
        annotations = {k: v for k, v in it.annotations.items() if k.lower() != quality.lower()}
        if it.id in ratings:
            annotations[quality] = ratings[it.id]
        out.append(replace(it, annotations=annotations))
    return out


def labelled_source(src: Source, path: str | Path) -> Source:
    """``src`` with the labels file's ratings of its quality as the human ratings, checked against its scale."""
    items = with_labels(src.items, path, src.quality.name)
    check_scale(items, src.quality, file=str(path))
    return replace(src, items=tuple(items))
