"""Typed settings records that say their own command-line flags, config keys and docs table.

A settings record is a frozen dataclass whose fields are made with :func:`setting`: each field's metadata
holds its help, and its flag and config key where they are not ``--<field>`` and ``<field>``. The flags a
command offers (:func:`add_flags`), the values it reads back (:func:`given`) and the table in the docs
(:func:`docs_table`) all come from the record, so a setting is declared once. A method type's own settings
(reasoning, heads, ensembles, pairwise) are such records.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import MISSING, Field, field, fields
from typing import Any, get_args, get_origin, get_type_hints


def setting(help: str, default: Any = None, *, flag: str | None = "", key: str | None = None,
            metavar: str | None = None, choices: Sequence[str] | None = None, generated: bool = True) -> Any:
    """A field of a settings record. ``flag``: its command-line flag (``""``: ``--<field>`` with dashes;
    None: no flag of its own); ``key``: its config key (default: the field's name); ``generated`` False: the
    flag is written by hand, shared by several types (``--prompt``), and only the docs name it."""
    return field(default=default, metadata={"help": help, "flag": flag, "key": key, "metavar": metavar,
                                            "choices": tuple(choices) if choices else None, "generated": generated})


def flag_of(f: Field[Any]) -> str | None:
    """The command-line flag of field ``f`` (None: it has none)."""
    flag = f.metadata.get("flag", "")
    return None if flag is None else flag or "--" + f.name.replace("_", "-")


def key_of(f: Field[Any]) -> str:
    """The config key of field ``f``."""
    return f.metadata.get("key") or f.name


def flagged(cls: type) -> list[Field[Any]]:
    """The fields of ``cls`` whose command-line flag is generated from the record."""
    return [f for f in fields(cls) if flag_of(f) is not None and f.metadata.get("generated", True)]


def _parser(hint: Any) -> Callable[[str], Any]:
    """How a flag's text becomes the field's value: a number, a word, or comma-separated numbers."""
    if get_origin(hint) is tuple:
        inner = _parser(get_args(hint)[0])

        def listed(text: str) -> tuple[Any, ...]:
            try:
                return tuple(inner(part) for part in text.split(","))
            except ValueError:
                raise argparse.ArgumentTypeError(f"expects comma-separated numbers, got {text!r}") from None
        return listed
    kinds = [a for a in (get_args(hint) or (hint,)) if a is not type(None)]
    return kinds[0] if kinds and kinds[0] in (int, float, str) else str


def add_flags(group: Any, cls: type) -> None:
    """The flags of ``cls``'s fields, in ``group`` (a parser or an argument group). Each defaults to None,
    so :func:`given` tells a flag left alone from one set to the record's default."""
    hints = get_type_hints(cls)
    for f in flagged(cls):
        flag = flag_of(f)
        assert flag is not None
        default = "" if f.default is MISSING or f.default in (None, ()) else f" (default {f.default})"
        group.add_argument(flag, dest=f.name, type=_parser(hints[f.name]), default=None,
                           choices=f.metadata.get("choices"), metavar=f.metadata.get("metavar"),
                           help=f.metadata["help"] + default)


def given(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    """The fields of ``cls`` whose flags were given (by field name)."""
    values = vars(args)
    return {f.name: values[f.name] for f in flagged(cls) if values.get(f.name) is not None}


def docs_rows(cls: type) -> list[tuple[str, str, str, str]]:
    """(flag, config key, default, help) of every field of ``cls``, for the docs' table."""
    rows = []
    for f in fields(cls):
        default = "" if f.default is MISSING or f.default in (None, ()) else str(f.default)
        rows.append((flag_of(f) or "", key_of(f), default, f.metadata["help"]))
    return rows


def docs_table(cls: type) -> str:
    """The Markdown table of ``cls``'s settings: flag, config key, default and what it does."""
    lines = ["| flag | config key | default | what it does |", "|---|---|---|---|"]
    for flag, key, default, text in docs_rows(cls):
        lines.append(f"| {f'`{flag}`' if flag else '–'} | `{key}` | {f'`{default}`' if default else '–'} | {text} |")
    return "\n".join(lines)
