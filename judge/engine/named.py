"""Methods by name: ``--method NAME`` in ``judge score``, ``judge bench`` and ``judge serve``.

A methods file holds ``[[methods]]`` tables exactly as a ``judge run`` config does (and an optional
``[defaults]``), so a method is written once and named everywhere; the shipped presets
(``judge/methods/presets.toml``) are such a file. Tables are read by the config parser into the same
:class:`MethodSpec` every other entry point builds (:mod:`judge.engine.tables`), so nothing here builds a judge.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..core.errors import InputError, UnknownNameError
from .spec import MethodSpec
from .tables import parse_methods

#: The shipped presets.
PRESETS = Path(__file__).resolve().parents[1] / "methods" / "presets.toml"
#: Keys a methods file may hold at its top level.
FILE_KEYS = ("methods", "defaults", "name", "description")


def load_methods(path: str | Path) -> dict[str, MethodSpec]:
    """Every method of a methods file, by name (errors name the file and the bad key)."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read the methods file: {exc.strerror}", file=str(p)) from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"invalid TOML: {exc}", file=str(p)) from None
    extra = sorted(set(data) - set(FILE_KEYS))
    if extra:
        raise InputError(f"{extra[0]}: a methods file holds only {', '.join(FILE_KEYS)}", file=str(p))
    for key in ("name", "description"):
        if key in data and not isinstance(data[key], str):
            raise InputError(f"{key}: must be a string, got {type(data[key]).__name__}", file=str(p))
    methods = data.get("methods", [])
    if not isinstance(methods, list) or not methods:
        raise InputError("methods: at least one [[methods]] entry is required", file=str(p))
    return {m.name: m for m in parse_methods(methods, data.get("defaults", {}), str(p))}


def named_method(name: str, methods_file: str | Path | None = None) -> MethodSpec:
    """The method ``name`` of ``methods_file`` (when given), else of the shipped presets."""
    methods = load_methods(methods_file if methods_file is not None else PRESETS)
    if name not in methods:
        raise UnknownNameError("method", name, list(methods))
    return methods[name]


def with_runtime(spec: MethodSpec, *, backend: str | None = None, model: str | None = None,
                 options: Mapping[str, object] | None = None,
                 generate: Mapping[str, Any] | None = None) -> MethodSpec:
    """``spec`` with where-and-how-to-run settings applied to every method that runs a model (members too):
    the backend, the model, backend options (added to the method's own) and :class:`GenerateConfig`
    fields. None (and an empty mapping) leaves the method's own setting, except that another backend
    without a model drops the method's model (one named for llama.cpp means nothing to another backend):
    the backend's default runs. ``judge run``'s overrides and ``--method`` both come through here."""
    kind = spec.kind
    if kind.members(spec):
        members = tuple(with_runtime(m, backend=backend, model=model, options=options, generate=generate)
                        for m in kind.members(spec))
        return spec.with_changes(members=members)
    if not kind.runs_model:
        return spec
    gen = replace(spec.generate, **generate) if generate else spec.generate
    merged = {**spec.options, **options} if options else spec.options
    own_model = None if backend else spec.model
    return replace(spec, backend=backend or spec.backend, model=model if model is not None else own_model,
                   options=merged, generate=gen)
