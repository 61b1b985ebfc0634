"""Typed fields from plain values: how a TOML table, command-line flags or keyword arguments become the
fields of a method spec, with an error naming the field whose value has the wrong type.

Field names, types and defaults are read from the dataclass itself, so a field added to the spec is
accepted, type-checked and defaulted with no other change.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import fields
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from .errors import InputError

#: Option names that would carry a secret; keys come only from environment variables.
SECRET_OPTIONS = frozenset({"api_key", "apikey", "key", "token", "secret", "password", "authorization"})


_TYPE_NAMES: dict[Any, str] = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
                               dict: "a table", list: "a list"}
#: Records a config gives as a table of their fields (``generate = { threads = 2 }``), with the words an error
#: calls them by; each record's module registers itself here.
TABLES: dict[type, str] = {}


def field_types(cls: type) -> dict[str, Any]:
    """Every field of dataclass ``cls`` with its resolved type (what :func:`convert` checks)."""
    hints = get_type_hints(cls)
    return {f.name: hints[f.name] for f in fields(cls)}


def close_hint(key: str, known: Mapping[str, Any]) -> str:
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else f"; known keys: {', '.join(sorted(known))}"


def _type_name(hint: Any) -> str:
    origin = get_origin(hint)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(hint))
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in get_args(hint) if a is not type(None))
    if origin is tuple:
        return f"{_type_name(get_args(hint)[0])} or a list of them"
    if hint in TABLES:
        return f"a table of {TABLES[hint]}"
    return _TYPE_NAMES.get(origin or hint, getattr(hint, "__name__", str(hint)))


def convert(key: str, value: Any, hint: Any) -> Any:
    """``value`` checked against the field type ``hint`` (tuples from lists, ints as floats where a
    float is asked, a table into a record of :data:`TABLES`); InputError naming ``key`` else."""
    origin = get_origin(hint)
    bad = InputError(f"must be {_type_name(hint)}, got {type(value).__name__}", field=key)
    if hint is Any:
        return value
    if origin is Literal:
        if value not in get_args(hint):
            raise InputError(f"must be {_type_name(hint)}, got {value!r}", field=key)
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in get_args(hint):
            return None
        for arg in get_args(hint):
            if arg is not type(None):
                with suppress(InputError):
                    return convert(key, value, arg)
        raise bad
    if origin is tuple:
        inner = get_args(hint)[0]
        seq = value if isinstance(value, list | tuple) else [value]
        try:
            return tuple(convert(key, v, inner) for v in seq)
        except InputError:
            raise InputError(f"must be {_type_name(hint)}, got {value!r}", field=key) from None
    if origin is not None and issubclass(origin, Mapping):
        if not isinstance(value, Mapping):
            raise bad
        return dict(value)
    if hint in TABLES:
        return _table(key, value, hint)
    if hint is bool:
        if not isinstance(value, bool):
            raise bad
        return value
    if hint in (int, float):
        if isinstance(value, bool) or not isinstance(value, int | float) or (hint is int and not isinstance(value, int)):
            raise bad
        return hint(value)
    if isinstance(hint, type) and not isinstance(value, hint):
        raise bad
    return value


def _table(key: str, value: Any, cls: type) -> Any:
    """A record of :data:`TABLES` from itself or a table of its fields (errors name ``<key>.<field>``)."""
    if isinstance(value, cls):
        return value
    if not isinstance(value, Mapping):
        raise InputError(f"must be {_type_name(cls)}, got {type(value).__name__}", field=key)
    known = field_types(cls)
    checked: dict[str, Any] = {}
    for name, v in value.items():
        if name not in known:
            raise InputError(f"unknown key{close_hint(name, known)}", field=f"{key}.{name}")
        checked[name] = convert(f"{key}.{name}", v, known[name])
    try:
        return cls(**checked)
    except InputError as exc:
        raise InputError(exc.reason, field=f"{key}.{exc.field}") from None


def check_no_secrets(options: Mapping[str, Any], flag: str) -> None:
    """Refuse an option that carries a key: secrets come from the environment, never flags or files."""
    for key in options:
        if key.lower().replace("-", "_") in SECRET_OPTIONS:
            raise InputError(
                f"'{key}' would put a secret on the command line or in a file; keys are read only from "
                "environment variables: name the variable with --api-key-env NAME (TOML: "
                "options.api_key_env = \"NAME\")", field=flag)
