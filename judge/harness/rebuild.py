"""A finished run's cells made again from what its results folder records, without a model.

``judge view`` shows each item's conversation and the exact prompt its judge read. The rows hold ids,
scores and the ids of the examples shown, not texts, so the sets are read again and every cell is
planned and prepared as the run did it (:func:`judge.harness.runner.plan`, ``prepare_cell``): the
experiment comes from ``summary.json`` (sets, their files and scales, limit, split) and each method from
its cells' ``seedN.meta.json`` (the full spec). A cell counts as rebuilt only when the settings it
gets now equal those its meta file recorded (the resume guard's test: same spec, same items in the
same order, same split and example pool); otherwise it keeps its rows and says why its prompts are
not shown. Nothing here guesses: what cannot be rebuilt is named.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core.errors import JudgeError
from ..data.items import Item
from ..datasets import load_benchmark
from ..datasets.source import resolve_source
from ..engine.spec import MethodSpec, Prepared, method_type
from ..records.results import cell_path
from ..records.summary import Summary
from .config import DatasetSpec, Experiment
from .fitted import meta_settings
from .runner import cell_meta, plan, prepare_cell

#: A cell's key: (method, set, quality, seed).
Key = tuple[str, str, str, int]


@dataclass
class Rebuilt:
    """What could be made again of one run: the sets' items by id, each rebuilt cell's prepared method,
    and for every other cell (or set) the reason."""

    items: dict[str, dict[str, Item]] = field(default_factory=dict)
    prepared: dict[Key, Prepared] = field(default_factory=dict)
    problems: dict[Key, str] = field(default_factory=dict)
    set_problems: dict[str, str] = field(default_factory=dict)
    method_problems: dict[str, str] = field(default_factory=dict)


def read_meta(results_dir: Path, key: Key) -> dict[str, Any] | None:
    """A cell's recorded settings (None: no meta file)."""
    path = cell_path(results_dir, *key).with_suffix(".meta.json")
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def rebuild(results_dir: str | Path, summary: Summary, *, data_dir: str | None = None,
            experiment: Experiment | None = None) -> Rebuilt:
    """The run of ``results_dir`` made again as far as its records allow. ``data_dir`` overrides where
    registered sets are read (the run's own, as written, is read from the working directory);
    ``experiment``: the run's own, when the caller still holds it (``judge bench --view``)."""
    root = Path(results_dir)
    out = Rebuilt()
    keys = [c.key for c in summary.cells]
    metas = {k: read_meta(root, k) for k in keys}
    if experiment is not None:
        exp = experiment
        sets = _load_sets(exp, out)
    else:
        exp, sets = _experiment(root, summary, metas, data_dir, out)
    for key in keys:
        if key[1] in out.set_problems:
            out.problems[key] = out.set_problems[key[1]]
        elif key[0] in out.method_problems:
            out.problems[key] = out.method_problems[key[0]]
    live = replace(exp, datasets=tuple(d for d in exp.datasets if d.name in sets))
    wanted = set(keys)
    for cell in plan(live, lambda name: sets[name]):
        if cell.key not in wanted:
            continue
        try:
            prep = prepare_cell(cell, live)
        except JudgeError as exc:
            out.problems[cell.key] = f"the method no longer prepares on the data: {exc}"
            continue
        recorded = metas.get(cell.key)
        recorded = None if recorded is None else meta_settings(recorded)  # a fit's outcome is no setting
        now = cell_meta(cell, live, prep)
        if recorded is None:
            out.problems[cell.key] = "the cell has no meta file"
        elif now != recorded:
            diff = sorted(k for k in {*now, *recorded} if now.get(k) != recorded.get(k))
            out.problems[cell.key] = ("the data or settings read now differ from the run's "
                                      f"({', '.join(diff)} in its meta file)")
        else:
            out.prepared[cell.key] = prep
    return out


def _experiment(root: Path, summary: Summary, metas: dict[Key, dict[str, Any] | None], data_dir: str | None,
                out: Rebuilt) -> tuple[Experiment, dict[str, list[Item]]]:
    """The run's experiment from its summary and meta files, with the sets that could be read."""
    info = summary.experiment
    datasets = []
    for d in summary.datasets:
        if "path" not in d:
            datasets.append(DatasetSpec(d["name"], tuple(d["qualities"])))
            continue
        try:
            scales = {q: (float(lo), float(hi)) for q, (lo, hi) in d.get("scales", {}).items()}
            src = resolve_source(d["path"], name=d["name"], quality=d["qualities"][0], scales=scales)
        except JudgeError as exc:
            out.set_problems[d["name"]] = f"its file could not be read again: {exc}"
            continue
        datasets.append(DatasetSpec(src.info.name, (src.info.overall,), info=src.info, source=src))
    methods = []
    for name in dict.fromkeys(k[0] for k in metas):
        meta = next((m for k, m in metas.items() if k[0] == name and m is not None), None)
        if meta is None:
            out.method_problems[name] = "its cells have no meta file"
            continue
        spec = dict(meta["spec"])
        try:
            if not method_type(spec.get("type", "llm")).runs_model:
                # An ensemble combines its members' scores (their prompts are in their own cells when the
                # run lists them); a classic scorer reads no prompt.
                out.method_problems[name] = f"a method of type '{spec.get('type')}' sends no prompt of its own"
                continue
            methods.append(MethodSpec.from_mapping({**spec, "name": name}))
        except JudgeError as exc:
            out.method_problems[name] = f"its recorded settings do not make a method here: {exc}"
    exp = Experiment(
        path=str(info.get("config", root)), name=str(info.get("name", root.name)),
        data_dir=data_dir or str(info.get("data_dir", ".")), output=str(root), limit=info.get("limit"),
        limit_seed=int(info.get("limit_seed", 0)), datasets=tuple(datasets), methods=tuple(methods),
        bootstrap=int(info.get("bootstrap", 1000)), seed=int(info.get("seed", 0)), split=info.get("split"),
        split_seed=int(info.get("split_seed", 0)))
    return exp, _load_sets(exp, out)


def _load_sets(exp: Experiment, out: Rebuilt) -> dict[str, list[Item]]:
    """Every set of ``exp`` that can be read (the others get their reason in ``out.set_problems``), and
    their items by id in ``out.items``."""
    sets: dict[str, list[Item]] = {}
    for ds in exp.datasets:
        try:
            sets[ds.name] = list(ds.source.items) if ds.source is not None else load_benchmark(ds.name, exp.data_dir)
        except JudgeError as exc:
            out.set_problems[ds.name] = f"its data could not be read: {exc}"
            continue
        out.items[ds.name] = {it.id: it for it in sets[ds.name]}
    return sets
