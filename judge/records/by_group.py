"""Rows into the statistics of answers per version (:class:`judge.stats.by_group.Tally`): each row under its
group (:func:`judge.records.grouping.field_value` of every field grouped by) and its conversation
(:func:`judge.records.grouping.conversation`)."""

from __future__ import annotations

from ..stats.by_group import Tally
from .grouping import conversation, field_value
from .rows import Row


def tally_row(tally: Tally, row: Row) -> None:
    """Add ``row`` to ``tally`` under its group (:func:`field_value` of each field the tally groups by) and
    its :func:`conversation`; a failed row counts as failed."""
    key = tuple(field_value(row, name) for name in tally.by)
    score = None if row.error is not None else row.score
    tally.add(key, conversation(row), row.id, score, row.method, row.quality)
