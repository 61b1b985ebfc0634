"""Reading any supported file as Items: the format loaders (one per file format), telling a file's format
from its name and content, and :func:`load_items`, through which every file is read.

Every item :func:`load_items` returns carries the content fingerprint of its conversation
(``Item.conversation``, :mod:`judge.datasets.identity`): the registered sets' conversations are known by
their texts wherever a file comes from, so a copy, a re-export or a release file given by path gets the
registered set's halves and guards.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..core.registry import Registry
from ..data.items import Item
from ._common import dataset_name, parse_json, read_text
from .chat import CHAT_FORMATS, sniff
from .chat import load as load_chat
from .identity import identify

#: ``loader(text, file, dataset_name) -> list[Item]``: one per file format. Third-party formats register
#: here (or through the ``judge.formats`` entry-point group) and are then accepted by ``format=``.
FormatLoader = Callable[[str, str, str], list[Item]]
FORMAT_LOADERS: Registry[FormatLoader] = Registry("format", "judge.formats")
FORMAT_LOADERS.register_lazy("jsonl", "judge.datasets.jsonl:from_text")
FORMAT_LOADERS.register_lazy("gupta", "judge.datasets.gupta:from_text")
# dstc10 handles both turn and dialog records, so the two names share a loader.
FORMAT_LOADERS.register_lazy("dstc10", "judge.datasets.dstc10:from_text")
FORMAT_LOADERS.register_lazy("dstc10-dial", "judge.datasets.dstc10:from_text")
FORMAT_LOADERS.register_lazy("fed", "judge.datasets.fed:from_text")
FORMAT_LOADERS.register_lazy("usr", "judge.datasets.usr:from_text")
FORMAT_LOADERS.register_lazy("pandalm", "judge.datasets.pair_sets:pandalm_from_text")
FORMAT_LOADERS.register_lazy("llmbar", "judge.datasets.pair_sets:llmbar_from_text")
FORMAT_LOADERS.register_lazy("reliable-eval", "judge.datasets.reliable_eval:from_text")
FORMAT_LOADERS.register_lazy("engagement", "judge.datasets.engagement:from_text")

#: The built-in format names (``FORMAT_LOADERS.names()`` adds registered ones); the chat-log formats
#: (``CHAT_FORMATS``, docs/chat-logs.md) are read from the path, by :mod:`judge.datasets.chat`.
FORMATS = ("jsonl", "dstc10", "dstc10-dial", "fed", "usr", "gupta", "pandalm", "llmbar", "reliable-eval", "engagement")


def detect_format(path: str | Path, text: str | None = None) -> str:
    """Format name for a file, from its extension and, for ``.json`` and others, its content (a chat log's
    format from the shape of its first record)."""
    chat = sniff(path, text)
    if chat is not None:
        return chat
    suffix = Path(path).suffix.lower()
    if suffix == ".jsonl":
        return "jsonl"
    if text is None:
        text = read_text(path)
    if suffix == ".csv":
        return _csv_format(text)
    head = text.lstrip()
    if head.startswith("{"):
        # One object per line (a ".json" holding JSON Lines is a common mix-up).
        return "jsonl"
    if head.startswith("["):
        return _json_format(parse_json(text, str(path)), str(path))
    if "human_average_rating" in head.split("\n", 1)[0]:
        return "gupta"
    raise InputError(f"cannot tell the file's format from its name or content; pass format= one of "
                     f"{', '.join(FORMATS)}", file=str(path))


def _csv_format(text: str) -> str:
    """Which CSV format: PredictiveEngagement's files by their header, else Gupta's."""
    from .engagement import kind

    header = [c.strip() for c in text.lstrip("\ufeff").split("\n", 1)[0].split(",")]
    return "engagement" if kind(header) else "gupta"


def _json_format(data: Any, file: str) -> str:
    """Which JSON array format, judged from the first record's keys."""
    first = data[0] if isinstance(data, list) and data else None
    if not isinstance(first, dict):
        raise InputError("cannot tell the format: expected a non-empty JSON array of objects (DSTC10, FED or USR); "
                         f"pass format= one of {', '.join(FORMATS)}", file=file)
    keys = set(first)
    if "responses" in keys:
        return "usr"
    if "HITId" in keys and "data" in keys:
        return "reliable-eval"
    if "dialogue_id" in keys:
        return "dstc10-dial" if "dialog" in keys else "dstc10"
    if "context" in keys and ("system" in keys or "annotations" in keys):
        return "fed"
    if "cmp_key" in keys:
        return "pandalm"
    if {"output_1", "output_2"} <= keys:
        return "llmbar"
    raise InputError(
        f"cannot tell the format from the first record's keys ({', '.join(sorted(map(str, keys)))}): "
        "DSTC10 records have 'dialogue_id', USR ones 'responses', FED ones 'context' and 'system'; "
        f"pass format= one of {', '.join(FORMATS)}", file=file, record="#0")


def load_items(path: str | Path, *, format: str | None = None, dataset: str | None = None,
               identified: bool = True, level: str | None = None,
               columns: Mapping[str, str] | None = None) -> list[Item]:
    """Load any supported file as Items, each with its conversation's content fingerprint
    (``identified=False``: without, as the loader gives them; the corpus index is built from those).

    ``format`` is auto-detected when None: ``.jsonl`` -> users' JSONL, ``.csv`` -> Gupta, ``.json``
    -> DSTC10 turn/dialog array, FED original or USR original (from the first record's keys).
    ``dataset`` sets Item.dataset (default: the file stem without ``_eval``).
    A chat log (``chat``, ``sharegpt``, ``tabular``, ``otlp``; told from its shape, or a hub dataset id)
    gives its replies (``level="turn"``, the default), its conversations (``"dialog"``) or both; ``columns``
    maps a table's columns (docs/chat-logs.md).
    Raises InputError for missing/unreadable/invalid files, UnknownNameError for a bad format name.
    """
    file = str(path)
    name = dataset or dataset_name(path)
    chat = format if format in CHAT_FORMATS else None if format is not None else sniff(path, columns=columns)
    if chat is not None:
        items = load_chat(path, chat, name, level, columns)
        if identified:
            identify(items)
        return items
    loader = FORMAT_LOADERS.get(format) if format is not None else None
    text = read_text(path)
    if loader is None:
        loader = FORMAT_LOADERS.get(detect_format(path, text))
    items = loader(text, file, name)
    if identified:
        identify(items)
    return items
