"""The JSON Schemas of what judge writes, generated from the records themselves (:func:`judge.records.record.
json_schema`) and shipped in ``docs/schema/``: ``row.schema.json`` (a line of a rows file: ``judge score -o``,
``judge run``'s cell files, ``judge serve``), ``pair_row.schema.json`` (``judge compare -o``, ``[[compare]]``
cells, ``POST /v1/compare``) ``label.schema.json`` (a line of a labels file: ``judge label``, read by ``judge estimate``) and
``summary.schema.json`` (a results folder's ``summary.json``).

Regenerate them after changing a record: ``python -m judge.records.schema docs/schema`` (a test fails while the
shipped files differ from what the records say)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ..core.io import atomic_write_text
from .labels import Label
from .pair_rows import PairRow
from .record import Record, json_schema
from .rows import Row
from .summary import Summary

#: Each shipped schema: its file's stem, the record and its title.
SCHEMAS: dict[str, tuple[type[Record], str]] = {
    "row": (Row, "judge row: one item's result"),
    "pair_row": (PairRow, "judge pair row: one pair of replies compared"),
    "label": (Label, "judge label: one person's rating of one item"),
    "summary": (Summary, "judge summary.json: a results folder's statistics"),
}


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema ``name`` (a key of :data:`SCHEMAS`)."""
    record, title = SCHEMAS[name]
    return json_schema(record, title)


def schema_text(name: str) -> str:
    """The shipped file's text of schema ``name`` (two spaces of indent, a final newline)."""
    return json.dumps(schema(name), indent=2, ensure_ascii=False) + "\n"


def write_schemas(folder: str | Path) -> list[Path]:
    """Write every schema into ``folder`` as ``<name>.schema.json``; returns the paths."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    paths = [root / f"{name}.schema.json" for name in SCHEMAS]
    for name, path in zip(SCHEMAS, paths, strict=True):
        atomic_write_text(path, schema_text(name))
    return paths


def main(argv: list[str] | None = None) -> int:
    """``python -m judge.records.schema FOLDER``: write the schemas into FOLDER (docs/schema in a checkout)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m judge.records.schema FOLDER", file=sys.stderr)
        return 2
    for path in write_schemas(args[0]):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
