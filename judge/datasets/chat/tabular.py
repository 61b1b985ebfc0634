"""Chat logs in a table: a local Parquet, Arrow, CSV or JSON Lines file, or a Hugging Face hub dataset id
where the hub is reachable, read a row at a time through the ``datasets`` library (the ``logs`` extra).

A row holds a conversation: a ``messages`` column (OpenAI's format), a ``conversations`` column
(ShareGPT's), or one exchange in plain columns: ``user`` (the user's message), ``assistant`` (the reply)
and optionally ``system`` (the bot's instructions). ``columns`` maps these names, and ``id``, ``model``,
``feedback``, to the table's own (``{"user": "prompt", "assistant": "completion"}``); every other column is
kept as metadata.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ...core.errors import InputError
from . import openai, sharegpt
from .messages import Conversation, Where

#: The names ``--columns`` may map.
TARGETS = ("messages", "conversations", "user", "assistant", "system", "id", "model", "feedback")
_BUILDERS = {".parquet": "parquet", ".arrow": "arrow", ".feather": "arrow", ".csv": "csv", ".jsonl": "json",
             ".json": "json"}


def check_columns(columns: Mapping[str, str]) -> None:
    for target in columns:
        if target not in TARGETS:
            raise InputError(f"unknown column name {target!r}; --columns maps {', '.join(TARGETS)} to the table's "
                             "columns (NAME=COLUMN)", field="columns")


def rows(source: str | Path) -> Iterator[dict[str, Any]]:
    """The rows of a table file or hub dataset, streamed."""
    try:
        import datasets
    except ImportError:
        raise InputError("reading a table (Parquet, Arrow, CSV) or a hub dataset needs the 'datasets' package: "
                         "pip install 'dialogue-judge[logs]'", file=str(source)) from None
    path = Path(source)
    datasets.logging.set_verbosity_error()
    datasets.disable_progress_bars()
    try:
        if path.exists():
            builder = _BUILDERS.get(path.suffix.lower())
            if builder is None:
                raise InputError(f"cannot read {path.suffix or 'a file without a suffix'} as a table; expected "
                                 f"{', '.join(_BUILDERS)}", file=str(source))
            data = datasets.load_dataset(builder, data_files=str(path), split="train", streaming=True)
        else:
            data = datasets.load_dataset(str(source), split="train", streaming=True)
        yield from data
    except InputError:
        raise
    except Exception as exc:  # the library raises many kinds (hub unreachable, a bad file)
        raise InputError(f"cannot read the table: {type(exc).__name__}: {exc}", file=str(source)) from None


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
