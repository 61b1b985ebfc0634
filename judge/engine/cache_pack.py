"""Cache packs: cached answers carried from one machine's cache to another's.

A model's answers are paid for once (in money, or in hours of CPU), but a cache file lives on one machine. A
pack is the portable part of it: the rows of chosen models and kinds, written as xz-compressed JSON Lines
(one header line, then one row per answer, sorted by table and key, so the same answers always give the
same bytes). Importing a pack adds the answers the cache lacks and keeps every answer it already holds: a
key is a digest of everything the answer depends on (model, settings, prompt text), so a pack's row can
only ever be hit by the very request that produced it.

A pack holds prompts' digests and answers, never a prompt or a secret (:mod:`judge.engine.cache`)."""

from __future__ import annotations

import json
import lzma
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import JudgeError
from ..core.io import atomic_file
from .cache import TABLES, Cache

#: The header line's marker and the format's version.
FORMAT, VERSION = "judge-cache-pack", 1
#: The fields of every row after the header, in the order they are written.
FIELDS = ("table", "key", "backend", "model", "value")


@dataclass(frozen=True)
class Row:
    """One cached answer, as its table keeps it (``value`` in the table's text form)."""

    table: str
    key: str
    backend: str
    model: str
    value: str


@dataclass(frozen=True)
class Imported:
    """What an import did: rows added, rows the cache already held (``differing`` of them with another value,
    kept as the cache had them)."""

    added: int
    present: int
    differing: int


def tables_of(kinds: Sequence[str]) -> list[str]:
    """The tables of request ``kinds`` (all of them when empty), refusing a kind that has none."""
    unknown = [k for k in kinds if k not in TABLES]
    if unknown:
        raise JudgeError(f"unknown answer kind {unknown[0]!r}; known: {', '.join(TABLES)}")
    return [TABLES[k].name for k in (kinds or TABLES)]


def read_pack(path: str | Path) -> Iterator[Row]:
    """The rows of the pack at ``path``; a file that is not one, or a row missing a field, is refused naming
    the file, line and field."""
    known = {t.name for t in TABLES.values()}
    try:
        with lzma.open(path, "rt", encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                yield from _parse(path, number, line, known)
    except (lzma.LZMAError, EOFError) as exc:
        raise JudgeError(f"{path}: not a cache pack (xz-compressed JSON Lines): {exc}") from None


def _parse(path: str | Path, number: int, line: str, known: set[str]) -> Iterator[Row]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise JudgeError(f"{path}: line {number}: not JSON: {exc}") from None
    if number == 1:
        if not isinstance(record, dict) or record.get("format") != FORMAT:
            raise JudgeError(f"{path}: line 1: not a cache pack header (field 'format' must be {FORMAT!r})")
        if record.get("version") != VERSION:
            raise JudgeError(f"{path}: line 1: field 'version' is {record.get('version')!r}; this judge reads "
                             f"version {VERSION}")
        return
    if not isinstance(record, dict):
        raise JudgeError(f"{path}: line {number}: a row must be a JSON object")
    for field in FIELDS:
        if not isinstance(record.get(field), str):
            raise JudgeError(f"{path}: line {number}: field {field!r} is missing or not a string")
    if record["table"] not in known:
        raise JudgeError(f"{path}: line {number}: field 'table' is {record['table']!r}; known: "
                         f"{', '.join(sorted(known))}")
    yield Row(*(record[field] for field in FIELDS))


def pack_keys(paths: Iterable[str | Path]) -> set[tuple[str, str]]:
    """(table, key) of every row of the packs at ``paths``."""
    return {(row.table, row.key) for path in paths for row in read_pack(path)}


def export(cache: Cache, out: str | Path, *, models: Sequence[str] = (), kinds: Sequence[str] = (),
           exclude: Iterable[str | Path] = ()) -> int:
    """Write the rows of ``models`` (all when empty) and ``kinds`` (all when empty) that the packs ``exclude``
    do not hold to a new pack at ``out`` (atomically); the number of rows written."""
    skip = pack_keys(exclude)
    rows = [row for table in tables_of(kinds) for row in cache_rows(cache, table, models)
            if (row.table, row.key) not in skip]
    rows.sort(key=lambda row: (row.table, row.key))
    header = {"format": FORMAT, "version": VERSION, "rows": len(rows)}
    lines = [header, *({field: getattr(row, field) for field in FIELDS} for row in rows)]
    packer = lzma.LZMACompressor(preset=6)
    with atomic_file(out, "wb") as f:
        for line in lines:
            f.write(packer.compress((json.dumps(line) + "\n").encode("utf-8")))
        f.write(packer.flush())
    return len(rows)


def cache_rows(cache: Cache, table: str, models: Sequence[str]) -> Iterator[Row]:
    """The rows of ``table`` whose model is one of ``models`` (every row when empty)."""
    for backend, model, key, value in cache.rows(table, models):
        yield Row(table, key, backend, model, value)


def import_packs(cache: Cache, paths: Iterable[str | Path]) -> Imported:
    """Add every row of the packs at ``paths`` that ``cache`` lacks; a row it holds stays as it is."""
    added = present = differing = 0
    for path in paths:
        rows = list(read_pack(path))  # the whole pack is read (and checked) before anything is written
        for table in {row.table for row in rows}:
            mine = [row for row in rows if row.table == table]
            held = cache.read(table, [row.key for row in mine])
            new = list({row.key: row for row in mine if row.key not in held}.values())
            present += len(mine) - len(new)
            differing += sum(held[row.key] != row.value for row in mine if row.key in held)
            cache.add_missing(table, [(row.key, row.backend, row.model, row.value) for row in new])
            added += len(new)
    return Imported(added, present, differing)
