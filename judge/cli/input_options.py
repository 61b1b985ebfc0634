"""How a command reads its input file: ``--input-format`` (a format by name instead of telling it from the
file), ``--level`` (a chat log's replies, conversations or both) and ``--columns`` (a table's column names);
docs/chat-logs.md."""

from __future__ import annotations

import argparse
from typing import Any

from ..core.errors import InputError
from ..datasets import FORMATS
from ..datasets.chat import CHAT_FORMATS, LEVELS
from ..datasets.chat.tabular import TARGETS


def add_input_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("input (docs/chat-logs.md)")
    g.add_argument("--input-format", default=None, choices=(*FORMATS, *CHAT_FORMATS), metavar="FORMAT",
                   help="read the input as this format instead of telling it from the file: "
                   f"{', '.join((*FORMATS, *CHAT_FORMATS))}")
    g.add_argument("--level", default=None, choices=LEVELS,
                   help="what of a chat log is judged: turn (every assistant reply in its context; default), dialog "
                   "(each whole conversation) or both")
    g.add_argument("--columns", default=None, metavar="NAME=COLUMN,...",
                   help=f"a table's columns for the names judge reads ({', '.join(TARGETS)}), e.g. "
                   "user=prompt,assistant=completion (Parquet, Arrow, CSV, JSON Lines or a hub dataset)")


def input_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of :func:`judge.datasets.load_items` these flags ask for."""
    if args.level is not None and args.input_format not in (None, *CHAT_FORMATS):
        raise InputError(f"--level is for chat logs, not the {args.input_format} format", field="--level")
    return {"format": args.input_format, "level": args.level, "columns": parse_columns(args.columns)}


def parse_columns(text: str | None) -> dict[str, str] | None:
    """``NAME=COLUMN,...`` as a dict."""
    if text is None:
        return None
    out: dict[str, str] = {}
    for pair in text.split(","):
        name, sep, column = pair.partition("=")
        if not sep or not name.strip() or not column.strip():
            raise InputError(f"expected NAME=COLUMN, got {pair!r}", field="--columns")
        if name.strip() not in TARGETS:
            raise InputError(f"unknown name {name.strip()!r}; names: {', '.join(TARGETS)}", field="--columns")
        out[name.strip()] = column.strip()
    return out
