"""Rows grouped by what their log said about them (``Row.meta``): per model, version, date or any other
field, one group per combination of the fields asked for; and the conversation of a row, the unit every
bootstrap over rows resamples.

Every answer per version, every estimate per system and every comparison of two systems of one file starts
here, so that a field missing from a row is one clear error, not a silent ``None`` group that mixes unrelated
rows, and so that ``judge summarize``, ``judge estimate`` and ``judge gate`` resample the same conversations.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime

from ..core.errors import InputError
from .rows import Row

#: The field that falls back to the row's own system (the model a log named), then to its method.
SYSTEM = "system"
#: The field that falls back to the calendar day (UTC) of the row's ``timestamp``.
DATE = "date"


def group_rows(rows: Sequence[Row], by: Sequence[str]) -> dict[tuple[str, ...], list[Row]]:
    """``rows`` grouped by the values of the fields ``by`` (read from each row's ``meta``), groups in the
    order their first row appears, rows in their order.

    ``system`` falls back to the row's ``system`` and then its ``method`` (a rows file of one method and no
    metadata is one group, not an error); ``date`` falls back to the day of ``timestamp`` (an ISO 8601 string
    or Unix seconds or milliseconds). A row without a field is an InputError naming the row and the field."""
    if not by:
        raise InputError("no field to group by", field="by")
    groups: dict[tuple[str, ...], list[Row]] = {}
    for row in rows:
        key = tuple(field_value(row, name) for name in by)
        groups.setdefault(key, []).append(row)
    return groups


def field_value(row: Row, name: str) -> str:
    """The value of ``name`` for ``row`` as text (see :func:`group_rows`)."""
    meta = row.meta or {}
    value = meta.get(name)
    if value is None and name == SYSTEM:
        value = row.system or row.method
    if value is None and name == DATE:
        value = _day(meta.get("timestamp"))
    if value is None:
        has = ", ".join(sorted(meta)) if meta else "no metadata"
        raise InputError(f"the row has no '{name}' to group by (it has {has})", record=row.id, field=name)
    return value if isinstance(value, str) else json.dumps(value)


def conversation(row: Row) -> str:
    """The conversation ``row`` belongs to: its ``group`` (what the loader named the conversation: a chat
    log's conversation id, a benchmark set's dialogue), else the ``meta.conversation_id`` its log named (a
    rows file written without groups), else the row alone (``item:ID``, apart from any conversation's name)."""
    if row.group:
        return row.group
    named = (row.meta or {}).get("conversation_id")
    if named is not None and str(named).strip():
        return str(named)
    return f"item:{row.id}"


def _day(stamp: object) -> str | None:
    """The UTC day of an ISO 8601 timestamp (its first ten characters) or of Unix seconds or milliseconds."""
    if isinstance(stamp, bool):
        return None
    if isinstance(stamp, int | float):
        seconds = stamp / 1000 if stamp > 1e11 else stamp  # milliseconds, as JavaScript writes them
        return datetime.fromtimestamp(seconds, UTC).date().isoformat()
    if isinstance(stamp, str) and len(stamp) >= 10 and stamp[4] == "-" and stamp[7] == "-":
        return stamp[:10]
    return None
