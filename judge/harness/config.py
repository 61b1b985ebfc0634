"""Experiment configs (TOML): datasets x qualities x methods, validated with errors that name the bad key.

A method is a table its method type reads (:mod:`judge.engine.tables`): an LLM judge (prompt, selector,
k, seeds, backend, model), a likelihood signal, a classic scorer, an ensemble, or a registered type. Names of
prompts, selectors, backends and scorers are checked later, at run time, through their registries,
so a name added by another module works as soon as that module is installed.
"""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from ..core.errors import InputError, JudgeError
from ..core.fields import close_hint
from ..data.qualities import Scale, parse_scale
from ..datasets.benchmarks import DatasetInfo, dataset_info
from ..datasets.source import Source, resolve_source
from ..datasets.split import SPLITS
from ..engine.named import named_method, with_runtime
from ..engine.ray_options import RayOptions, ray_from_table
from ..engine.spec import MethodSpec, method_type
from ..engine.tables import parse_methods, read_table
from ..records.results import slug

TOP_KEYS = {
    "name": str, "description": str, "data_dir": str, "output": str, "limit": int, "limit_seed": int,
    "datasets": list, "qualities": (list, str), "methods": list, "defaults": dict, "bootstrap": int,
    "seed": int, "compare": list, "retry_failed": bool, "scales": dict, "split": str, "split_seed": int, "run": dict,
}
DATASET_KEYS = {"name": str, "qualities": (list, str), "path": str, "quality": str, "scales": dict}
#: Keys of a ``[[compare]]`` table besides its pairwise method's own (prompt, orders, model, ...).
COMPARE_KEYS = {"name": str, "against": str, "systems": list, "baseline": str, "contexts": (int, dict), "datasets": list}
#: The pointwise method beside a pairwise cell when its table names none (a shipped preset: the criteria prompt).
DEFAULT_AGAINST = "criteria"
_TYPE_NAMES = {str: "a string", int: "an integer", list: "a list", dict: "a table", bool: "true or false"}


def _err(path: str, where: str, msg: str) -> InputError:
    return InputError(f"{where}: {msg}", file=path)


def _check_keys(path: str, where: str, table: dict[str, Any], allowed: dict[str, Any]) -> None:
    for key, value in table.items():
        if key not in allowed:
            raise _err(path, f"{where}{'.' if where else ''}{key}", f"unknown key{close_hint(key, allowed)}")
        want = allowed[key]
        types = want if isinstance(want, tuple) else (want,)
        # bool is an int in Python; keep them apart so `k = true` is refused.
        ok = any(isinstance(value, t) and not (t is int and isinstance(value, bool)) for t in types)
        if not ok:
            names = " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in types)
            raise _err(path, f"{where}{'.' if where else ''}{key}", f"must be {names}, got {type(value).__name__}")


@dataclass(frozen=True)
class DatasetSpec:
    """One set of an experiment: a registered benchmark, or a file given by path (``source``)."""

    name: str  # canonical registry name, or the name given to a file
    qualities: tuple[str, ...]  # canonical quality names of that set
    info: DatasetInfo | None = None  # None: the registered set ``name``
    source: Source | None = None  # a file given by path, loaded once when the config is read

    @property
    def dataset(self) -> DatasetInfo:
        return self.info or dataset_info(self.name)


@dataclass(frozen=True)
class CompareSpec:
    """A ``[[compare]]`` table: a pairwise method run on the pairs of each of the experiment's sets (``datasets``:
    some of them), for each of their qualities. ``against`` is the pointwise method whose score differences
    are set beside the pairwise judge's on the same pairs (None: none); ``systems``, ``baseline`` and
    ``contexts`` choose the pairs as ``judge compare`` does (:mod:`judge.data.pairs`; contexts drawn with the
    experiment's ``limit_seed``)."""

    name: str
    method: MethodSpec
    against: MethodSpec | None = None
    systems: tuple[str, ...] | None = None
    baseline: str | None = None
    #: Contexts drawn per set: one number for every set, or per set name (a set not named: every context).
    contexts: int | tuple[tuple[str, int], ...] | None = None
    datasets: tuple[str, ...] = ()
    index: int = 0

    def contexts_for(self, dataset: str) -> int | None:
        """How many contexts to draw from ``dataset`` (None: every one)."""
        if isinstance(self.contexts, tuple):
            return dict(self.contexts).get(dataset)
        return self.contexts


@dataclass(frozen=True)
class Experiment:
    """A validated experiment: what to run and where to write it."""

    path: str
    name: str
    data_dir: str
    output: str
    limit: int | None
    limit_seed: int
    datasets: tuple[DatasetSpec, ...]
    methods: tuple[MethodSpec, ...]
    bootstrap: int = 1000
    seed: int = 0
    compare: tuple[tuple[str, str], ...] = ()
    retry_failed: bool = True
    description: str = ""
    #: "dev" or "test": score only that half of each set's conversations (None: every item).
    split: str | None = None
    split_seed: int = 0
    #: Where the model work runs (``[run] ray = ...``, ``--ray``): None here, else a Ray cluster's actors. It
    #: changes no result, so it is no part of the results' settings.
    ray: RayOptions | None = None
    #: ``[[compare]]`` tables: pairwise methods on the pairs of each set (docs/pairwise.md).
    compare_cells: tuple[CompareSpec, ...] = ()

    def split_info(self) -> dict[str, Any]:
        """The split this experiment scores, for provenance (empty when it scores every item)."""
        return {} if self.split is None else {"split": self.split, "split_seed": self.split_seed}

    def example_pool(self) -> str:
        """Where k-shot methods without a pool file of their own take examples from: with a split, the dev
        half of the set (a test item is never shown as an example), else every rated item of it."""
        return "dev half" if self.split else "whole set"

    def with_overrides(
        self,
        *,
        limit: int | None = None,
        data_dir: str | None = None,
        output: str | None = None,
        backend: str | None = None,
        model: str | None = None,
        threads: int | None = None,
        datasets: list[str] | None = None,
        split: str | None = None,
        methods: list[str] | None = None,
    ) -> Experiment:
        """The experiment with command-line overrides applied (backend/model/threads: every LLM method;
        ``datasets``: keep only these of the config's sets, by name or abbreviation)."""
        generate = {"threads": threads} if threads is not None else None
        chosen = [with_runtime(m, backend=backend, model=model, generate=generate) for m in self.methods]
        cells = [replace(c, method=with_runtime(c.method, backend=backend, model=model, generate=generate),
                         against=c.against and with_runtime(c.against, backend=backend, model=model, generate=generate))
                 for c in self.compare_cells]
        if methods is not None:
            known = [m.name for m in self.methods] + [c.name for c in self.compare_cells]
            missing = [x for x in methods if x not in known]
            if missing:
                raise InputError(f"not in the config: {', '.join(missing)} (it has {', '.join(known)})",
                                 file=self.path, field="--methods")
            chosen = [m for m in chosen if m.name in methods]
            cells = [c for c in cells if c.name in methods]
        kept = self.datasets
        if datasets is not None:
            names = {x.name.lower(): x.name for x in self.datasets}
            wanted = [names.get(d.lower()) or dataset_info(d).name for d in datasets]
            missing = [d for d in wanted if d not in {x.name for x in self.datasets}]
            if missing:
                raise InputError(f"not in the config: {', '.join(missing)} (it has "
                                 f"{', '.join(x.name for x in self.datasets)})", file=self.path, field="--datasets")
            kept = tuple(x for x in self.datasets if x.name in wanted)
            cells = [replace(c, datasets=tuple(d for d in c.datasets if d in wanted)) for c in cells
                     if not c.datasets or set(c.datasets) & set(wanted)]
        return replace(self, compare_cells=tuple(cells), datasets=kept,
                       limit=limit if limit is not None else self.limit,
                       split=split if split is not None else self.split, data_dir=data_dir or self.data_dir,
                       output=output or self.output, methods=tuple(chosen),
                       compare=tuple((a, b) for a, b in self.compare if methods is None or {a, b} <= set(methods)))


def _qualities_for(path: str, where: str, info: DatasetInfo, wanted: list[str] | str) -> tuple[str, ...]:
    if isinstance(wanted, str):
        wanted = [wanted]
    out: list[str] = []
    for q in wanted:
        if not isinstance(q, str):
            raise _err(path, where, f"quality names must be strings, got {q!r}")
        if q.lower() == "all":
            names = [x.name for x in info.qualities]
        elif q.lower() == "overall":
            names = [info.overall]
        else:
            try:
                names = [info.quality(q).name]
            except Exception as exc:
                raise _err(path, where, str(exc)) from None
        out.extend(n for n in names if n not in out)
    return tuple(out)


def _scales(path: str, where: str, table: dict[str, Any]) -> dict[str, Scale]:
    """``{ overall = [0, 2] }`` -> {"overall": (0.0, 2.0)} (the TOML form of ``--scale overall=0:2``)."""
    out: dict[str, Scale] = {}
    for q, bounds in table.items():
        if not (isinstance(bounds, list) and len(bounds) == 2
                and all(isinstance(b, int | float) and not isinstance(b, bool) for b in bounds)):
            raise _err(path, f"{where}.{q}", f"must be [min, max], got {bounds!r}")
        try:
            out[q] = parse_scale(f"{q}={bounds[0]}:{bounds[1]}", flag=f"{where}.{q}")[1]
        except InputError as exc:
            raise _err(path, f"{where}.{q}", exc.reason) from None
    return out


def _path_dataset(path: str, where: str, d: dict[str, Any], top_scales: dict[str, Scale],
                  datasets: list[DatasetSpec]) -> DatasetSpec:
    """A set given as ``{ path = "...", name = "...", quality = "...", scales = {...} }``."""
    scales = {**top_scales, **_scales(path, f"{where}.scales", d.get("scales", {}))}
    if "qualities" in d:
        raise _err(path, f"{where}.qualities", "a file given by path is benchmarked on one quality: use quality")
    try:
        src = resolve_source(d["path"], name=d.get("name"), quality=d.get("quality"), scales=scales)
    except JudgeError as exc:
        raise _err(path, where, str(exc)) from None
    if any(x.name == src.info.name for x in datasets):
        raise _err(path, where, f"dataset '{src.info.name}' is listed twice; give it another name")
    return DatasetSpec(src.info.name, (src.info.overall,), info=src.info, source=src)


def parse_experiment(data: dict[str, Any], path: str = "<config>") -> Experiment:
    """Validate a parsed TOML document and expand it into concrete methods."""
    _check_keys(path, "", data, TOP_KEYS)
    has_cells = any(isinstance(c, dict) for c in data.get("compare", []))
    if not data.get("methods") and not has_cells:
        raise _err(path, "methods", "at least one [[methods]] entry (or [[compare]] table) is required")
    if "datasets" not in data or not data["datasets"]:
        raise _err(path, "datasets", "at least one dataset is required")
    default_q = data.get("qualities", ["overall"])
    top_scales = _scales(path, "scales", data.get("scales", {}))
    datasets: list[DatasetSpec] = []
    for i, d in enumerate(data["datasets"]):
        where = f"datasets[{i}]"
        if isinstance(d, str):
            name, qs = d, default_q
        elif isinstance(d, dict):
            _check_keys(path, where, d, DATASET_KEYS)
            if "path" in d:
                datasets.append(_path_dataset(path, where, d, top_scales, datasets))
                continue
            if "name" not in d:
                raise _err(path, f"{where}.name", "missing (a registered set's name, or give its file as path)")
            name, qs = d["name"], d.get("qualities", default_q)
        else:
            raise _err(path, where, "must be a set name or a table {name, qualities} or {path, name, quality}")
        try:
            info = dataset_info(name)
        except Exception as exc:
            raise _err(path, where, str(exc)) from None
        if any(x.name == info.name for x in datasets):
            raise _err(path, where, f"dataset '{info.name}' is listed twice")
        datasets.append(DatasetSpec(info.name, _qualities_for(path, where, info, qs)))

    methods = parse_methods(data.get("methods", []), data.get("defaults", {}), path) if data.get("methods") else ()
    for m in methods:
        if m.kind.compares:
            raise _err(path, f"methods[{m.index}].type", f"a {m.type} method compares two replies to one context and "
                       "scores no item alone: write it as a [[compare]] table")
    seen = {m.name: m.index for m in methods}
    compare: list[tuple[str, str]] = []
    cells: list[CompareSpec] = []
    for j, pair in enumerate(data.get("compare", [])):
        if isinstance(pair, dict):
            cells.append(_compare_cell(path, j, pair, data.get("defaults", {}), {m.name: m for m in methods},
                                       datasets, cells))
            continue
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
            raise _err(path, f"compare[{j}]", "must be a pair of method names, e.g. [\"bm25c-k4\", \"zero-shot\"] (a "
                       "paired test), or a table (a pairwise cell, [[compare]])")
        for x in pair:
            if x not in seen:
                raise _err(path, f"compare[{j}]", f"unknown method '{x}'; methods: {', '.join(seen)}")
        compare.append((pair[0], pair[1]))
    limit = data.get("limit")
    if limit is not None and limit < 1:
        raise _err(path, "limit", "must be >= 1")
    if data.get("split") not in (None, *SPLITS):
        raise _err(path, "split", f"must be one of {', '.join(SPLITS)}, got {data['split']!r}")
    stem = Path(path).stem if path != "<config>" else "experiment"
    return Experiment(path=path, name=data.get("name", stem), description=data.get("description", ""),
                      data_dir=data.get("data_dir", "data"),
                      output=data.get("output", f"results/{slug(data.get('name', stem))}"), limit=limit,
                      limit_seed=data.get("limit_seed", 0), datasets=tuple(datasets), methods=tuple(methods),
                      bootstrap=data.get("bootstrap", 1000), seed=data.get("seed", 0), compare=tuple(compare),
                      retry_failed=data.get("retry_failed", True), split=data.get("split"),
                      split_seed=data.get("split_seed", 0), ray=ray_from_table(data.get("run", {}), path),
                      compare_cells=tuple(cells))


def _compare_cell(path: str, j: int, table: dict[str, Any], defaults: dict[str, Any], methods: dict[str, MethodSpec],
                  datasets: list[DatasetSpec], cells: list[CompareSpec]) -> CompareSpec:
    """One ``[[compare]]`` table: its own keys (:data:`COMPARE_KEYS`), the rest its pairwise method's, with the
    config's ``[defaults]`` applied; errors named ``compare[j].key``."""
    where = f"compare[{j}]"
    kind = method_type("pairwise")
    own = {k: v for k, v in table.items() if k in COMPARE_KEYS}
    rest = {k: v for k, v in table.items() if k not in COMPARE_KEYS}
    allowed: dict[str, Any] = {**COMPARE_KEYS, **dict.fromkeys(kind.table_keys() | {"type"}, object)}
    _check_keys(path, where, {**own, **rest}, allowed)
    if rest.get("type", "pairwise") != "pairwise":
        raise _err(path, f"{where}.type", f"a [[compare]] table holds a pairwise method, got type {rest['type']!r}")
    rest["type"] = "pairwise"
    if "name" in own:
        rest["name"] = own["name"]
    (method,) = read_table(path, where, j, kind, rest, defaults, {})
    name = method.name
    if name in methods or any(c.name == name for c in cells):
        raise _err(path, f"{where}.name", f"'{name}' is already the name of another method or [[compare]] table; "
                   "give each a unique name")
    return CompareSpec(name, method, _against(path, where, own.get("against", DEFAULT_AGAINST), method, methods),
                       _strings(path, f"{where}.systems", own["systems"]) if "systems" in own else None,
                       own.get("baseline"), _contexts(path, where, own.get("contexts"), datasets),
                       _cell_sets(path, f"{where}.datasets", own.get("datasets", []), datasets), j)


def _against(path: str, where: str, name: str, method: MethodSpec, methods: dict[str, MethodSpec]) -> MethodSpec | None:
    """The pointwise method beside a pairwise cell: a [[methods]] entry by name, else a shipped preset run where
    the pairwise method runs; none for ``"none"``."""
    if name.lower() == "none":
        return None
    if name in methods:
        return methods[name]
    try:
        preset = named_method(name)
    except JudgeError as exc:
        raise _err(path, f"{where}.against", f"neither a [[methods]] entry nor a shipped preset: {exc}") from None
    if preset.kind.compares:
        raise _err(path, f"{where}.against", f"'{name}' compares two replies; against names a method that scores one")
    return with_runtime(preset, backend=method.backend, model=method.model, options=method.options,
                        generate=asdict(method.generate))


def _strings(path: str, where: str, value: list[Any]) -> tuple[str, ...]:
    if not value or not all(isinstance(x, str) for x in value):
        raise _err(path, where, f"must be a non-empty list of names, got {value!r}")
    return tuple(value)


def _contexts(path: str, where: str, value: int | dict[str, Any] | None, datasets: list[DatasetSpec]
              ) -> int | tuple[tuple[str, int], ...] | None:
    """``contexts = 20`` for every set, or ``contexts = { TU = 4, DGR = 30 }`` per set (names or abbreviations)."""
    if isinstance(value, dict):
        return tuple((_cell_sets(path, f"{where}.contexts", [name], datasets)[0],
                      _count(path, f"{where}.contexts.{name}", n)) for name, n in value.items())
    return None if value is None else _count(path, f"{where}.contexts", value)


def _count(path: str, where: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _err(path, where, f"must be an integer >= 1, got {value!r}")
    return value


def _cell_sets(path: str, key: str, names: list[Any], datasets: list[DatasetSpec]) -> tuple[str, ...]:
    """The config's sets a cell runs on (by name or abbreviation; empty: every set); errors name ``key``."""
    out = []
    for name in _strings(path, key, names) if names else ():
        found = [d.name for d in datasets if name.lower() in (d.name.lower(), d.dataset.abbrev.lower())]
        if not found:
            raise _err(path, key, f"'{name}' is not one of the config's sets ({', '.join(d.name for d in datasets)})")
        out.append(found[0])
    return tuple(out)


def load_experiment(path: str | Path) -> Experiment:
    """Read and validate an experiment TOML file (errors name the file and the bad key)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the config: {exc.strerror}", file=str(p)) from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 (byte {exc.start})", file=str(p)) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"invalid TOML: {exc}", file=str(p)) from None
    return parse_experiment(data, str(p))
