"""Reading a chat-log file: telling its format from its shape, and its records (JSON Lines read a line at a
time, a JSON array whole)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any

from ...core.errors import InputError
from .._common import read_text
from ..jsonl import _records
from . import openai, sharegpt
from .items import LEVELS, ChatLevel
from .messages import Conversation, Where

#: The chat-log formats: OpenAI messages, ShareGPT, a table (Parquet, Arrow, CSV, a hub dataset), OTLP JSON.
CHAT_FORMATS = ("chat", "sharegpt", "tabular", "otlp")
#: File suffixes read as tables.
TABLE_SUFFIXES = (".parquet", ".arrow", ".feather")

RecordReader = Callable[[Any, Where, str], Conversation]
READERS: dict[str, RecordReader] = {"chat": openai.read_record, "sharegpt": sharegpt.read_record}
_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


def shape(record: Any) -> str | None:
    """The chat format a parsed record has (a JSON array: its first element's), None for none."""
    if isinstance(record, list):
        first = record[0] if record else None
        if isinstance(first, list) or _is_message(first):
            return "chat"  # bare arrays of messages, or one such array
        return shape(first) if isinstance(first, dict) else None
    if isinstance(record, dict):
        if "resourceSpans" in record:
            return "otlp"
        if "messages" in record:
            return "chat"
        if "conversations" in record:
            return "sharegpt"
    return None


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and "role" in value


def sniff(path: str | Path, text: str | None = None, columns: Mapping[str, str] | None = None) -> str | None:
    """The chat format of a file (or a hub dataset id), from its name and its first record; None when it is
    not a chat log. A JSON Lines file is read to its first record only."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in TABLE_SUFFIXES or (columns and suffix in (".csv", ".jsonl", ".json", "")):
        return "tabular"
    if not p.exists():
        return "tabular" if _HUB_ID.match(str(path)) and not suffix else None
    first = _first_line(p, text)
    if first is None:
        return None
    found = None
    with suppress(ValueError, RecursionError):
        found = shape(json.loads(first))
    if found is None and suffix != ".jsonl" and first.lstrip()[:1] in ("[", "{"):
        found = shape(_head_record(text if text is not None else read_text(p)))
    return found


def _head_record(text: str) -> Any:
    """The first element of a JSON array (as a one-element list), or a whole object: parsed alone, so that
    telling a large benchmark array's format does not parse it all."""
    head = text.lstrip()
    decoder = json.JSONDecoder()
    try:
        if head.startswith("["):
            start = len(head) - len(head[1:].lstrip())
            return [decoder.raw_decode(head, start)[0]] if start < len(head) and head[start] != "]" else []
        return decoder.raw_decode(head)[0]
    except (ValueError, RecursionError):
        return None


def _first_line(path: Path, text: str | None) -> str | None:
    if text is not None:
        return next((line for line in text.split("\n") if line.strip()), None)
    try:
        with path.open("rb") as handle:
            for raw in handle:
                if raw.strip():
                    return raw.decode("utf-8-sig", errors="replace")
    except OSError:
        return None
    return None


def check_level(level: str | None) -> ChatLevel:
    if level is None:
        return "turn"
    if level not in LEVELS:
        raise InputError(f"unknown level {level!r}: expected one of {', '.join(LEVELS)}", field="level")
    return level


def records(path: str | Path, file: str) -> Iterator[tuple[int | str, Any]]:
    """(where, record) of a chat file: a ``.jsonl`` file a line at a time (each line a record or a bare
    array of messages); any other file read whole: a JSON array of records, one array of messages, one
    record, or else JSON Lines."""
    p = Path(path)
    if p.suffix.lower() != ".jsonl":
        text = read_text(p)
        data = None
        with suppress(ValueError, RecursionError):
            data = json.loads(text)
        if data is not None:
            yield from _array(data if isinstance(data, list) else [data], file)
            return
    yield from _records(p, file)


def _array(data: list[Any], file: str) -> Iterator[tuple[int | str, Any]]:
    if data and _is_message(data[0]):
        yield "#0", data  # one conversation: a bare array of messages
        return
    for i, record in enumerate(data):
        yield f"#{i}", record
