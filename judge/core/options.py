"""Typed option groups: one frozen dataclass whose fields' metadata give each option's command-line flag, its key
in a config table and its help, so that the flags, the config keys, their checks and the docs table come from one
place (:class:`judge.engine.ray_options.RayOptions`, :class:`judge.backends.hosted.HostedOptions`).

A field is declared with :func:`option`; :class:`OptionGroup` reads the dataclass and adds its flags to a parser,
reads them back (only those given, so that a default never overrides a config), reads a config table (errors name
the table and key) and lists the rows of the docs table.
"""

from __future__ import annotations

import argparse
import types
from collections.abc import Mapping
from dataclasses import MISSING, field, fields
from typing import Any, Generic, Literal, TypeVar, Union, get_args, get_origin

from .errors import InputError
from .fields import close_hint, convert, field_types

T = TypeVar("T")


def option(flag: str | None, key: str, help: str, default: Any = None, *, metavar: str | None = None,
           **extra: Any) -> Any:
    """A field of an option group: its flag (``--ray-actors``; None: a config key only), its config key
    (``ray_actors``) and its help; ``extra``: what else the group's owner declares of it."""
    return field(default=default, metadata={"flag": flag, "key": key, "help": help, "metavar": metavar, **extra})


class OptionGroup(Generic[T]):
    """The flags and config keys of the option dataclass ``cls`` (every field declared with :func:`option`).
    Flags write to ``dest + field name`` on the parsed namespace."""

    def __init__(self, cls: type[T], title: str, dest: str = "") -> None:
        self.cls = cls
        self.title = title
        self.dest = dest
        self.types = field_types(cls)
        self.meta: dict[str, Mapping[str, Any]] = {f.name: f.metadata for f in fields(cls)}  # type: ignore[arg-type]
        #: Field names by config key.
        self.keys: dict[str, str] = {m["key"]: name for name, m in self.meta.items()}

    def flag(self, name: str) -> str:
        """The flag of field ``name``, else its config key."""
        return str(self.meta[name]["flag"] or self.meta[name]["key"])

    def flagged(self) -> dict[str, Any]:
        """The fields that have a flag, with their types."""
        return {name: hint for name, hint in self.types.items() if self.meta[name]["flag"]}

    def add_flags(self, p: argparse.ArgumentParser) -> Any:
        """The group's flags, each defaulting to None (not given) so that :meth:`given` tells them apart; returns
        the parser's argument group, for flags of other origins that belong with them."""
        g = p.add_argument_group(self.title)
        for name, hint in self.flagged().items():
            meta = self.meta[name]
            optional = get_origin(hint) in (Union, types.UnionType)
            kind = next(a for a in get_args(hint) if a is not type(None)) if optional else hint
            dest = self.dest + name
            if kind is bool:
                g.add_argument(meta["flag"], dest=dest, action=argparse.BooleanOptionalAction, default=None,
                               help=meta["help"])
            elif get_origin(kind) is Literal:
                g.add_argument(meta["flag"], dest=dest, choices=get_args(kind), default=None, help=meta["help"])
            else:
                metavar = meta["metavar"] or ("N" if kind in (int, float) else None)
                g.add_argument(meta["flag"], dest=dest, type=kind, default=None, metavar=metavar, help=meta["help"])
        return g

    def given(self, args: argparse.Namespace) -> dict[str, Any]:
        """The fields whose flags were given (by field name)."""
        return {name: getattr(args, self.dest + name) for name in self.flagged()
                if getattr(args, self.dest + name, None) is not None}

    def read(self, table: Mapping[str, Any], *, path: str | None = None, section: str = "") -> dict[str, Any]:
        """The fields a config table gives (by field name), each checked against its type; an unknown key or a
        value of the wrong type is an InputError naming ``section.key`` (and ``path``)."""
        values: dict[str, Any] = {}
        for key, value in table.items():
            where = f"{section}.{key}" if section else key
            if key not in self.keys:
                raise InputError(f"unknown key{close_hint(key, self.keys)}", file=path, field=where)
            name = self.keys[key]
            try:
                values[name] = convert(key, value, self.types[name])
            except InputError as exc:
                raise InputError(exc.reason, file=path, field=where) from None
        return values

    def rows(self) -> list[tuple[str, str, str, str]]:
        """(flag, config key, default, help) of every option, for the docs' table."""
        out = []
        for f in fields(self.cls):  # type: ignore[arg-type]
            default = "" if f.default is MISSING or f.default is None else str(f.default)
            out.append((f.metadata["flag"] or "", f.metadata["key"], default, f.metadata["help"]))
        return out

    def markdown(self, key_title: str = "key") -> str:
        """The docs' table of the options: flag, config key, default, what it does (a docs page holds it as it is
        printed here, and a test checks that it does)."""
        lines = [f"| flag | {key_title} | default | what it does |", "|------|-----|---------|--------------|"]
        for flag, key, default, help in self.rows():
            lines.append(f"| {f'`{flag}`' if flag else ''} | `{key}` | {default} | {help.replace('|', '/')} |")
        return "\n".join(lines) + "\n"
