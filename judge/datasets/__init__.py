"""Dataset loaders: benchmark files (DSTC10 Track 5, FED, USR, Gupta) and users' own JSONL.

Public API: :func:`load_items` (any supported file), :func:`load_benchmark` (a registered set by
name under a data dir), :func:`resolve_source` (either of those, with the quality to correlate
with and its scale), :func:`parse_scale`, :data:`FORMATS`, :func:`detect_format`, :func:`check_scale`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..items import Item
from ..qualities import parse_scale
from ..registry import Registry
from ._common import check_scale, dataset_name, parse_json, read_text
from .benchmarks import dataset_info
from .conversations import link_conversations
from .source import Source, resolve_source

__all__ = ["FORMATS", "FORMAT_LOADERS", "Source", "check_scale", "detect_format", "load_benchmark", "load_items",
           "parse_scale", "resolve_source"]

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

#: The built-in format names (``FORMAT_LOADERS.names()`` adds registered ones).
FORMATS = ("jsonl", "dstc10", "dstc10-dial", "fed", "usr", "gupta")


def detect_format(path: str | Path, text: str | None = None) -> str:
    """Format name for a file, from its extension and, for ``.json`` and others, its content."""
    suffix = Path(path).suffix.lower()
    if suffix == ".jsonl":
        return "jsonl"
    if suffix == ".csv":
        return "gupta"
    if text is None:
        text = read_text(path)
    head = text.lstrip()
    if head.startswith("{"):
        # One object per line (a ".json" holding JSON Lines is a common mix-up).
        return "jsonl"
    if head.startswith("["):
        return _json_format(parse_json(text, str(path)), str(path))
    if "human_average_rating" in head.split("\n", 1)[0]:
        return "gupta"
    raise InputError(
        f"cannot tell the file's format from its name or content; pass format= one of {', '.join(FORMATS)}",
        file=str(path),
    )


def _json_format(data: Any, file: str) -> str:
    """Which JSON array format, judged from the first record's keys."""
    first = data[0] if isinstance(data, list) and data else None
    if not isinstance(first, dict):
        raise InputError(
            "cannot tell the format: expected a non-empty JSON array of objects "
            f"(DSTC10, FED or USR); pass format= one of {', '.join(FORMATS)}",
            file=file,
        )
    keys = set(first)
    if "responses" in keys:
        return "usr"
    if "dialogue_id" in keys:
        return "dstc10-dial" if "dialog" in keys else "dstc10"
    if "context" in keys and ("system" in keys or "annotations" in keys):
        return "fed"
    raise InputError(
        f"cannot tell the format from the first record's keys ({', '.join(sorted(map(str, keys)))}): "
        "DSTC10 records have 'dialogue_id', USR ones 'responses', FED ones 'context' and 'system'; "
        f"pass format= one of {', '.join(FORMATS)}",
        file=file,
        record="#0",
    )


def load_items(path: str | Path, *, format: str | None = None, dataset: str | None = None) -> list[Item]:
    """Load any supported file as Items.

    ``format`` is auto-detected when None: ``.jsonl`` -> users' JSONL, ``.csv`` -> Gupta, ``.json``
    -> DSTC10 turn/dialog array, FED original or USR original (from the first record's keys).
    ``dataset`` sets Item.dataset (default: the file stem without ``_eval``).
    Raises InputError for missing/unreadable/invalid files, UnknownNameError for a bad format name.
    """
    loader = FORMAT_LOADERS.get(format) if format is not None else None
    file = str(path)
    name = dataset or dataset_name(path)
    text = read_text(path)
    if loader is None:
        loader = FORMAT_LOADERS.get(detect_format(path, text))
    return loader(text, file, name)


def load_benchmark(name: str, data_dir: str | Path) -> list[Item]:
    """Load a registered benchmark set (``benchmarks.DATASETS``: name or abbreviation) from ``data_dir``."""
    info = dataset_info(name)
    path = Path(data_dir) / info.path
    if not path.is_file():
        where = "it does not exist (see the data README for where to get it)"
        if not Path(data_dir).is_dir() and not Path(data_dir).is_absolute():
            # A config's data_dir is read from where judge runs, which is easy to forget outside the repo.
            where = (f"no such directory relative to the working directory {Path.cwd()} (run from the folder "
                     "the path is written for, or pass --data-dir)")
        raise InputError(
            f"benchmark '{info.name}' ({info.abbrev}) expects the file '{info.path}' under the data "
            f"directory '{data_dir}', but {where}",
            file=str(path),
        )
    items = load_items(path, format=info.format, dataset=info.name)
    link_conversations(info.name, items, data_dir)
    return items
