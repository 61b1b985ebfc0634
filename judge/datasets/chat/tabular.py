"""Chat logs in a table: a local Parquet, Arrow, CSV or JSON Lines file, or a Hugging Face dataset (a hub id
where the hub is reachable, or a dataset folder) through the ``datasets`` library, read a batch of rows at a
time (the ``logs`` extra installs both).

A row holds a conversation: a ``messages`` column (OpenAI's format), a ``conversations`` column
(ShareGPT's), or one exchange in plain columns: ``user`` (the user's message), ``assistant`` (the reply)
and optionally ``system`` (the bot's instructions). ``columns`` maps these names, and ``id``, ``model``,
``feedback``, to the table's own (``{"user": "prompt", "assistant": "completion"}``); every other column is
kept as metadata.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ...core.errors import InputError
from .._common import type_name
from . import openai, sharegpt
from .files import records
from .messages import Conversation, Where

#: The names ``--columns`` may map.
TARGETS = ("messages", "conversations", "user", "assistant", "system", "id", "model", "feedback")
_ARROW = (".parquet", ".arrow", ".feather", ".csv")
#: Rows read at a time from a columnar file.
BATCH = 256


def check_columns(columns: Mapping[str, str]) -> None:
    for target in columns:
        if target not in TARGETS:
            raise InputError(f"unknown column name {target!r}; --columns maps {', '.join(TARGETS)} to the table's "
                             "columns (NAME=COLUMN)", field="columns")


def rows(source: str | Path) -> Iterator[dict[str, Any]]:
    """The rows of a table file or a dataset (hub id, or a local dataset folder), a batch at a time.

    Local files are read with pyarrow, the columnar library ``datasets`` reads them with (it starts in
    milliseconds where ``datasets`` takes seconds); JSON Lines and JSON with the chat loaders' own reader;
    a hub id or a folder through ``datasets.load_dataset`` (streaming)."""
    path = Path(source)
    suffix = path.suffix.lower()
    if path.is_file() and suffix in (".jsonl", ".json"):
        for where, record in records(path, str(source)):
            if not isinstance(record, dict):
                raise InputError(f"expected a JSON object per row, got {type_name(record)}", file=str(source),
                                 record=where)
            yield record
        return
    if path.is_file() and suffix not in _ARROW:
        raise InputError(f"cannot read {suffix or 'a file without a suffix'} as a table; expected "
                         f"{', '.join((*_ARROW, '.jsonl', '.json'))}", file=str(source))
    try:
        yield from (_arrow(path) if path.is_file() else _hub(str(source)))
    except InputError:
        raise
    except Exception as exc:  # the libraries raise many kinds (a damaged file, the hub unreachable)
        what = "the table" if path.exists() else "a dataset of this name (it is no local file or folder, so it was " \
            "looked up on the Hugging Face hub)"
        raise InputError(f"cannot read {what}: {type(exc).__name__}: {exc}", file=str(source)) from None


def _arrow(path: Path) -> Iterator[dict[str, Any]]:
    pa = _need("pyarrow", str(path))
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        batches = pq.ParquetFile(path).iter_batches(batch_size=BATCH)
    elif suffix == ".csv":
        import pyarrow.csv as pcsv

        batches = pcsv.open_csv(path)
    else:
        import pyarrow.ipc as ipc

        try:
            reader = ipc.open_file(pa.memory_map(str(path)))
            batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
        except pa.ArrowInvalid:  # an IPC stream (what ``datasets`` writes) rather than a file
            batches = ipc.open_stream(pa.memory_map(str(path)))
    for batch in batches:
        yield from batch.to_pylist()


def _hub(source: str) -> Iterator[dict[str, Any]]:
    datasets = _need("datasets", source)
    datasets.logging.set_verbosity_error()
    datasets.disable_progress_bars()
    yield from datasets.load_dataset(source, split="train", streaming=True)


def _need(module: str, source: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(f"reading a table (Parquet, Arrow, CSV) or a hub dataset needs the '{module}' package: "
                         "pip install 'dialogue-judge[logs]'", file=source) from None


def conversations(source: str | Path, dataset: str, columns: Mapping[str, str]) -> Iterator[Conversation]:
    """A conversation per row (``#N``: the row's index), with ``columns`` renaming the table's columns."""
    check_columns(columns)
    source_of = {column: target for target, column in columns.items()}
    file = str(source)
    for i, row in enumerate(rows(source)):
        where = Where(file, f"row {i}")
        record = {source_of.get(k, k): v for k, v in row.items()}
        missing = [c for c in columns.values() if c not in row]
        if missing:
            raise where.error(f"no column {missing[0]!r} (columns: {', '.join(row)})", "columns")
        if record.get("conversations") is not None and record.get("messages") is None:
            yield sharegpt.read_record(_drop_none(record, "messages"), where, dataset)
            continue
        if record.get("messages") is None:
            if record.get("assistant") is None:
                raise where.error("a row needs a 'messages' or 'conversations' column, or 'user' and 'assistant' "
                                  "(map yours with --columns, e.g. user=prompt,assistant=completion)", "messages")
            record["messages"] = [{"role": role, "content": record.pop(role)} for role in
                                  ("system", "user", "assistant") if record.get(role) is not None]
        yield openai.read_record(_drop_none(record, "conversations"), where, dataset)


def _drop_none(record: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in record.items() if not (k in keys and v is None)}
