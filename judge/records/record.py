"""What every written record (a row, a pair row, a summary) has in common: a frozen dataclass whose fields,
in order, are the keys it writes, read back and checked by the same field types, and described by the JSON
Schema generated from them (:func:`json_schema`), so that the writer, the readers and the documented format
cannot drift apart.

A field listed in ``OPTIONAL`` is written only when it is not None (a file written before it existed reads
back byte for byte); a field listed in ``INLINE`` holds a record whose keys are written in its place, all or
none.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Mapping
from dataclasses import MISSING, fields
from typing import Any, ClassVar, TypeVar

from ..core.errors import InputError
from ..core.io import dumps

R = TypeVar("R", bound="Record")


class Record:
    """Base of the written records (each a frozen dataclass)."""

    #: Fields written only when they are not None (read as None when absent).
    OPTIONAL: ClassVar[frozenset[str]] = frozenset()
    #: Fields holding a record whose keys are written in their place (None: none of them written).
    INLINE: ClassVar[frozenset[str]] = frozenset()

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-ready data, keys in field order."""
        out: dict[str, Any] = {}
        for name, value in vars(self).items():
            if value is None and name in self.OPTIONAL | self.INLINE:
                continue
            if name in self.INLINE:
                out.update(value.to_dict())
            else:
                out[name] = _plain(value)
        return out

    def to_json(self) -> str:
        """One line of JSON (the rows files' format: :func:`judge.core.io.dumps`)."""
        return dumps(self.to_dict())

    @classmethod
    def from_dict(cls: type[R], data: Mapping[str, Any], *, file: str | None = None,
                  record: str | None = None) -> R:
        """The record ``data`` holds, every key checked against its field's type (InputError naming the file,
        record and key otherwise; a key the record does not know is an error too)."""
        if not isinstance(data, Mapping):
            raise InputError(f"expected a JSON object, got {type(data).__name__}", file=file, record=record)
        record = record if record is not None else _record_id(data)
        hints = _hints(cls)
        known: set[str] = set()
        values: dict[str, Any] = {}
        for f in fields(cls):  # type: ignore[arg-type]
            if f.name in cls.INLINE:
                sub = _record_type(hints[f.name])
                names = [g.name for g in fields(sub)]  # type: ignore[arg-type]
                known.update(names)
                values[f.name] = sub.from_dict({k: data[k] for k in names if k in data}, file=file, record=record) \
                    if any(k in data for k in names) else None
                continue
            known.add(f.name)
            if f.name not in data:
                if f.name in cls.OPTIONAL or f.default is not MISSING:
                    continue
                raise InputError(f"missing key '{f.name}'", file=file, record=record, field=f.name)
            values[f.name] = _typed(hints[f.name], data[f.name], file, record, f.name)
        unknown = [k for k in data if k not in known]
        if unknown:
            raise InputError(f"unknown key '{unknown[0]}' (a {cls.__name__} holds {', '.join(known)})", file=file,
                             record=record, field=unknown[0])
        return cls(**values)


def _record_id(data: Mapping[str, Any]) -> str | None:
    value = data.get("id")
    return value if isinstance(value, str) else None


def _plain(value: Any) -> Any:
    """``value`` as JSON-ready data (records and tuples inside it too)."""
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """The resolved field types of a record class (resolved once)."""
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _record_type(hint: Any) -> type[Record]:
    """The record class of an ``X`` or ``X | None`` hint."""
    return next(a for a in (hint, *typing.get_args(hint)) if isinstance(a, type) and issubclass(a, Record))


_SIMPLE: dict[type, tuple[type, ...]] = {str: (str,), int: (int,), float: (int, float), bool: (bool,)}


def _typed(hint: Any, value: Any, file: str | None, record: str | None, key: str) -> Any:
    """``value`` read as ``hint`` says (lists into tuples, objects into records), or an InputError."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return value
    if origin in (types.UnionType, typing.Union):
        if value is None and type(None) in args:
            return None
        kinds = [a for a in args if a is not type(None)]
        return _typed(kinds[0] if len(kinds) == 1 else Any, value, file, record, key)
    if isinstance(hint, type) and issubclass(hint, Record):
        return hint.from_dict(value, file=file, record=record)
    if origin in (tuple, list):
        _expect(isinstance(value, list), "a list", value, file, record, key)
        return origin(_typed(args[0], v, file, record, key) for v in value)
    if origin in (dict, Mapping) or hint is dict:
        _expect(isinstance(value, dict), "an object", value, file, record, key)
        return {k: _typed(args[1], v, file, record, key) for k, v in value.items()} if args else value
    allowed = _SIMPLE[hint]
    _expect(isinstance(value, allowed) and (hint is bool or not isinstance(value, bool)), hint.__name__, value, file,
            record, key)
    return value


def _expect(ok: bool, what: str, value: Any, file: str | None, record: str | None, key: str) -> None:
    if not ok:
        raise InputError(f"must be {what}, not {value!r}", file=file, record=record, field=key)


def json_schema(cls: type[Record], title: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``cls`` and the records inside it, from the same field types that
    :meth:`Record.from_dict` checks: what docs/schema/ ships (:mod:`judge.records.schema`)."""
    defs: dict[str, Any] = {}
    root = _object(cls, defs)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": title, **root,
            **({"$defs": dict(sorted(defs.items()))} if defs else {})}


def _object(cls: type[Record], defs: dict[str, Any]) -> dict[str, Any]:
    hints = _hints(cls)
    props: dict[str, Any] = {}
    required: list[str] = []
    together: dict[str, list[str]] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        if f.name in cls.INLINE:
            sub = _record_type(hints[f.name])
            inner = _object(sub, defs)
            props.update(inner["properties"])
            if type(None) in typing.get_args(hints[f.name]):  # all of its keys, or none of them
                names = inner["required"]
                together.update({n: [m for m in names if m != n] for n in names})
            else:
                required += inner["required"]
            continue
        props[f.name] = _type(hints[f.name], defs)
        if f.name not in cls.OPTIONAL and f.default is MISSING:
            required.append(f.name)
    doc = re.sub(r":\w+:`([^`]+)`", r"\1", " ".join((cls.__doc__ or "").split())).replace("``", "`")
    out: dict[str, Any] = {"type": "object", "description": doc,
                           "properties": props, "required": required, "additionalProperties": False}
    if together:
        out["dependentRequired"] = together
    return out


_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def _type(hint: Any, defs: dict[str, Any]) -> dict[str, Any]:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return {}
    if hint in _NAMES:
        return {"type": _NAMES[hint]}
    if origin in (types.UnionType, typing.Union):
        parts = [_type(a, defs) for a in args]
        if all(set(p) == {"type"} for p in parts):
            return {"type": [p["type"] for p in parts]}
        return {"anyOf": parts}
    if isinstance(hint, type) and issubclass(hint, Record):
        if hint.__name__ not in defs:
            defs[hint.__name__] = {}
            defs[hint.__name__] = _object(hint, defs)
        return {"$ref": f"#/$defs/{hint.__name__}"}
    if origin in (tuple, list):
        return {"type": "array", "items": _type(args[0], defs)}
    if origin in (dict, Mapping) or hint is dict:
        return {"type": "object", **({"additionalProperties": _type(args[1], defs)} if args else {})}
    raise TypeError(f"no JSON Schema for {hint!r}")
