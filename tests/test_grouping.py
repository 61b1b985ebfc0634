"""Rows grouped by a metadata field (judge.records.grouping)."""

from __future__ import annotations

import pytest

from judge.core.errors import InputError
from judge.records.grouping import group_rows
from judge.records.rows import Row


def _row(row_id: str, meta: dict[str, str | int | float | bool | None] | None, system: str | None = None) -> Row:
    return Row(id=row_id, method="m", seed=None, quality=None, human=None, score=0.5, label_probs=None, examples=(),
               flags=(), estimated=False, complete=True, error=None, system=system, group=row_id.split("#")[0],
               n_prompt_tokens=0, meta=meta)


def test_one_group_per_combination_in_first_seen_order() -> None:
    rows = [_row("a#1", {"model": "x", "version": "2"}), _row("b#1", {"model": "x", "version": "1"}),
            _row("c#1", {"model": "x", "version": "2"}), _row("d#1", {"model": "y", "version": 3})]
    groups = group_rows(rows, ["model", "version"])
    assert list(groups) == [("x", "2"), ("x", "1"), ("y", "3")]
    assert [r.id for r in groups[("x", "2")]] == ["a#1", "c#1"]


def test_system_falls_back_to_the_row_then_the_method_and_date_to_the_timestamp() -> None:
    rows = [_row("a#1", None, system="bot"), _row("b#1", None), _row("c#1", {"system": "own"}, system="bot")]
    assert list(group_rows(rows, ["system"])) == [("bot",), ("m",), ("own",)]
    dated = [_row("a#1", {"timestamp": "2026-01-02T10:00:00+00:00"}), _row("b#1", {"timestamp": 1767312000}),
             _row("c#1", {"timestamp": 1767312000000}), _row("d#1", {"date": "2026-03-01", "timestamp": 0})]
    assert list(group_rows(dated, ["date"])) == [("2026-01-02",), ("2026-03-01",)]


def test_a_row_without_the_field_is_an_error_naming_it() -> None:
    with pytest.raises(InputError, match="'version'") as err:
        group_rows([_row("a#1", {"version": "1"}), _row("b#3", {"model": "x"})], ["version"])
    assert err.value.record == "b#3" and err.value.field == "version"
    with pytest.raises(InputError, match="no field"):
        group_rows([_row("a#1", None)], [])
