"""Typed settings records that say their own command-line flags, config keys and docs table.

A settings record is a frozen dataclass whose fields are made with :func:`setting`: each field's metadata
holds its help, and its flag and config key where they are not ``--<field>`` and ``<field>``. :class:`Settings`
reads a record and gives the flags a command offers (:meth:`~Settings.add_flags`), the values it reads back
(:meth:`~Settings.given`), the values of a config table (:meth:`~Settings.read`) and the table in the docs
(:meth:`~Settings.markdown`), so an option is declared once. Every option record is one: a method type's own
settings (reasoning, heads, ensembles, pairwise, the llm judge's prompt and examples), the Ray options
(:class:`judge.engine.ray_options.RayOptions`) and a hosted API's (:class:`judge.backends.hosted.HostedOptions`).
"""

from __future__ import annotations

import argparse
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, Field, field, fields
from typing import Any, Generic, Literal, TypeVar, Union, get_args, get_origin

from .errors import InputError
from .fields import close_hint, convert, field_types

T = TypeVar("T")


def setting(help: str, default: Any = None, *, flag: str | None = "", key: str | None = None,
            metavar: str | None = None, choices: Sequence[str] | None = None, generated: bool = True,
            **extra: Any) -> Any:
    """A field of a settings record. ``flag``: its command-line flag (``""``: ``--<prefix><field>`` with dashes;
    None: a config key only); ``key``: its config key (default ``<prefix><field>``); ``generated`` False: another
    record makes the flag, which several types share (a head's ``--prompt`` is the llm judge's), and only the docs
    name it; ``extra``: what else the record's owner declares of the field."""
    return field(default=default, metadata={"help": help, "flag": flag, "key": key, "metavar": metavar,
                                            "choices": tuple(choices) if choices else None, "generated": generated,
                                            **extra})


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
    return hint if hint in (int, float) else str


def _shown(default: Any) -> str:
    """A default as the help and the docs show it ('' for none)."""
    return "" if default is MISSING or default is None or default == () else str(default)


class Settings(Generic[T]):
    """The flags, config keys and docs table of the settings record ``cls``. ``prefix`` goes before each field's
    name in its flag, key and parsed name (``ray_``: ``--ray-actors``, ``ray_actors``); ``title`` names the help's
    group of the flags."""

    def __init__(self, cls: type[T], title: str = "", prefix: str = "") -> None:
        self.cls = cls
        self.title = title
        self.prefix = prefix
        self.types = field_types(cls)
        self.fields: dict[str, Field[Any]] = {f.name: f for f in fields(cls)}  # type: ignore[arg-type]
        #: Field names by config key.
        self.keys: dict[str, str] = {self.key(name): name for name in self.fields}

    def key(self, name: str) -> str:
        """The config key of field ``name``."""
        return str(self.fields[name].metadata.get("key") or self.prefix + name)

    def flag_of(self, name: str) -> str | None:
        """The command-line flag of field ``name`` (None: it has none)."""
        meta = self.fields[name].metadata
        if "help" not in meta or meta["flag"] is None:  # a plain field of the record, or a config key only
            return None
        return meta["flag"] or "--" + (self.prefix + name).replace("_", "-")

    def flag(self, name: str) -> str:
        """The flag of field ``name``, else its config key (what an error names)."""
        return self.flag_of(name) or self.key(name)

    def flagged(self) -> list[str]:
        """The fields whose command-line flag this record makes."""
        return [name for name, f in self.fields.items()
                if self.flag_of(name) is not None and f.metadata.get("generated", True)]

    def add_flags(self, p: Any) -> Any:
        """The record's flags in ``p`` (a parser: in a group of their own when the record has a title), each
        defaulting to None so that :meth:`given` tells a flag left alone from one set to the default (a config's
        value is kept). Returns the group, for flags of other origins that belong with them."""
        g = p.add_argument_group(self.title) if self.title else p
        for name in self.flagged():
            meta, flag = self.fields[name].metadata, self.flag_of(name)
            hint = self.types[name]
            if get_origin(hint) in (Union, types.UnionType):
                hint = next(a for a in get_args(hint) if a is not type(None))
            default = _shown(self.fields[name].default)
            text = meta["help"] if hint is bool or not default or "default" in meta["help"] else \
                f"{meta['help']} (default {default})"
            kw: dict[str, Any] = {"dest": self.prefix + name, "default": None, "help": text}
            if hint is bool and str(flag).startswith("--no-"):
                kw.update(action="store_const", const=False)
            elif hint is bool:
                kw.update(action=argparse.BooleanOptionalAction)
            elif get_origin(hint) is Literal:
                kw.update(choices=get_args(hint))
            else:
                kw.update(type=_parser(hint), choices=meta["choices"],
                          metavar=meta["metavar"] or ("N" if hint in (int, float) else None))
            g.add_argument(flag, **kw)
        return g

    def given(self, args: argparse.Namespace) -> dict[str, Any]:
        """The fields whose flags were given (by field name)."""
        values = vars(args)
        return {name: values[self.prefix + name] for name in self.flagged()
                if values.get(self.prefix + name) is not None}

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
        """(flag, config key, default, help) of every field made with :func:`setting`, for the docs' table."""
        return [(self.flag_of(name) or "", self.key(name), _shown(f.default), f.metadata["help"])
                for name, f in self.fields.items() if "help" in f.metadata]

    def markdown(self, key_title: str = "config key") -> str:
        """The docs' table of the record: flag, config key, default and what it does (a docs page holds it as it
        is printed here, :mod:`judge.methods.settings_docs`)."""
        lines = [f"| flag | {key_title} | default | what it does |", "|---|---|---|---|"]
        for flag, key, default, text in self.rows():
            lines.append(f"| {f'`{flag}`' if flag else '–'} | `{key}` | {f'`{default}`' if default else '–'} | "
                         f"{text.replace('|', '/')} |")
        return "\n".join(lines)


def docs_table(cls: type) -> str:
    """The Markdown table of a method type's settings record ``cls``."""
    return Settings(cls).markdown()
