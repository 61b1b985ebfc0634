"""Rows grouped by a metadata field, and a row's conversation (judge.records.grouping), as every report reads them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from judge.core.errors import InputError
from judge.records.by_group import tally_row
from judge.records.grouping import conversation, group_rows
from judge.records.rows import Row
from judge.report.estimate_join import scored_rows
from judge.report.gate import context_keys
from judge.stats.by_group import Tally


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


def _loose(row_id: str, meta: dict[str, str | int | float | bool | None] | None) -> Row:
    """A row saved without a conversation group (its item's group was its context)."""
    return Row(id=row_id, method="m", seed=None, quality=None, human=None, score=0.5, label_probs=None, examples=(),
               flags=(), estimated=False, complete=True, error=None, system="bot", group=None, n_prompt_tokens=0,
               meta=meta)


def test_summarize_estimate_and_gate_resample_the_same_conversations() -> None:
    # Two rows of the conversation "c" that only their log's meta names, a row whose id is "c" itself, and a
    # row whose blank conversation id names none. Before, the gate saw three conversations, the estimate four
    # (it ignored the meta) and the tally two (it merged the row "c" into the conversation "c").
    rows = [_loose("c#1", {"conversation_id": "c"}), _loose("c#2", {"conversation_id": "c"}), _loose("c", None),
            _loose("d#1", {"conversation_id": " "})]
    assert [conversation(r) for r in rows] == ["c", "c", "item:c", "item:d#1"]
    tally = Tally(["system"])
    for row in rows:
        tally_row(tally, row)
    assert tally.summary(n_boot=10).groups[0].n_conversations == 3
    assert scored_rows(rows).conversations == [conversation(r) for r in rows]
    assert [conv for _, conv in context_keys(rows, (), "rows.jsonl")] == [conversation(r) for r in rows]
    grouped = _row("a#1", None)
    assert conversation(grouped) == "a" and conversation(replace(grouped, meta={"conversation_id": "x"})) == "a"


def test_an_estimate_groups_rows_as_every_report_does() -> None:
    # The log's own system field first, then the row's system; values as JSON; a row without the field is an
    # error (before, the estimate put it in a group "(none)" and wrote True where summarize wrote true).
    rows = [_row("a#1", {"system": "own", "beta": True}, system="bot"), _row("b#1", {"beta": False}, system="bot")]
    assert scored_rows(rows).groups == ["own", "bot"]
    assert scored_rows(rows, "beta").groups == ["true", "false"] == [k for (k,) in group_rows(rows, ["beta"])]
    with pytest.raises(InputError, match="'version'"):
        scored_rows(rows, "version")
