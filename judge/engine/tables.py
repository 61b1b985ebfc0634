"""TOML ``[[methods]]`` tables into method specs: what ``judge run`` configs, methods files and the
shipped presets hold.

Each table is read by its method type (:meth:`judge.engine.spec.MethodType.from_table`), so the keys a
table may hold are the ones its type declares; a file's ``[defaults]`` apply to the methods that run a
model. Errors name the file and the entry: ``methods[2].top_k: must be an integer, got str``.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.errors import InputError
from ..core.fields import close_hint
from ..datasets.paper import paper_labels
from .spec import DEFAULT_TYPE, METHOD_TYPES, MethodSpec, MethodType, method_type


def _err(path: str, where: str, msg: str) -> InputError:
    return InputError(f"{where}: {msg}", file=path)


def default_keys() -> frozenset[str]:
    """The keys a ``[defaults]`` table may hold: those of any method type that runs a model."""
    return frozenset().union(*(kind.table_keys() for kind in map(method_type, METHOD_TYPES.names())
                               if kind.runs_model))


def table_type(raw: Mapping[str, Any]) -> str:
    """The type a table names, or the one a key it holds implies (``scorer``: classic), else the default."""
    if "type" in raw:
        return str(raw["type"])
    implied = [name for name in METHOD_TYPES.names() if (key := method_type(name).implied_by) and key in raw]
    return implied[0] if implied else DEFAULT_TYPE


def parse_methods(tables: Sequence[Any], defaults: Mapping[str, Any], path: str) -> tuple[MethodSpec, ...]:
    """Every method of ``tables`` (``[[methods]]``) with ``defaults`` applied, in order (a table with a list
    of ``k`` stands for several). Names must be unique and ``paper`` rows known."""
    if not isinstance(defaults, Mapping):
        raise _err(path, "defaults", f"must be a table, got {type(defaults).__name__}")
    allowed = default_keys()
    for key in defaults:
        if key not in allowed:
            raise _err(path, f"defaults.{key}", f"unknown key{close_hint(key, dict.fromkeys(allowed))}")
    slots: list[list[MethodSpec] | None] = []  # None: a table naming other methods, read once they are known
    later: dict[int, tuple[int, MethodType, dict[str, Any]]] = {}
    for i, raw in enumerate(tables):
        where = f"methods[{i}]"
        if not isinstance(raw, dict):
            raise _err(path, where, "must be a table")
        name = table_type(raw)
        if name not in METHOD_TYPES:
            known = [DEFAULT_TYPE, *(k for k in METHOD_TYPES.names() if k != DEFAULT_TYPE)]
            raise _err(path, f"{where}.type", f"must be {', '.join(repr(k) for k in known[:-1])} or {known[-1]!r}, "
                       f"got {name!r}")
        kind = method_type(name)
        if kind.refers_to_methods:
            later[len(slots)] = (i, kind, raw)
            slots.append(None)
            continue
        slots.append(read_table(path, where, i, kind, raw, defaults, {}))
    by_name = {m.name: m for group in slots if group is not None for m in group}
    for pos, (i, kind, raw) in later.items():
        slots[pos] = read_table(path, f"methods[{i}]", i, kind, raw, defaults, by_name)
    methods = [m for group in slots for m in group or ()]
    for meth in methods:
        if meth.paper is not None and meth.paper not in paper_labels():
            close = difflib.get_close_matches(meth.paper, paper_labels(), n=2, cutoff=0.5)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            raise _err(path, f"methods[{meth.index}].paper",
                       f"unknown paper row '{meth.paper}'{hint} Known rows: {', '.join(paper_labels())}")
    seen: dict[str, int] = {}
    for meth in methods:
        if meth.name in seen:
            raise _err(path, f"methods[{meth.index}].name",
                       f"method name '{meth.name}' is already used by methods[{seen[meth.name]}]; give each a unique name")
        seen[meth.name] = meth.index
    return tuple(methods)


def read_table(path: str, where: str, index: int, kind: MethodType, raw: dict[str, Any], defaults: Mapping[str, Any],
               methods: Mapping[str, MethodSpec]) -> list[MethodSpec]:
    """The specs one table stands for, its type's errors named by entry: ``methods[2].top_k`` (``where``)."""
    try:
        values = kind.from_table(raw, defaults, methods)
    except InputError as exc:
        raise _err(path, f"{where}.{exc.field or 'options'}", exc.reason) from None
    out = []
    for v in values:
        try:
            out.append(MethodSpec.from_mapping({**v, "type": raw.get("type", table_type(raw)), "index": index}))
        except InputError as exc:
            raise _err(path, f"{where}.{exc.field or 'options'}", exc.reason) from None
    return out
