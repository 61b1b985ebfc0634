"""Execute an experiment: load each set once, score every cell, append results, then summarise.

Order is fixed (methods in config order, then sets, qualities, seeds), so the same config always
writes the same files. Backends are created lazily and reused while consecutive cells share one.
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError, UnknownNameError
from ..io import atomic_write_text
from ..items import Item
from ..qualities import Quality, dataset_info
from ..scorer import Score, Scorer
from .cells import CellWriter, cell_path, item_row, read_done, read_rows, rewrite
from .config import Experiment, MethodSpec


def seeded_subset(items: Sequence[Item], limit: int | None, seed: int) -> list[Item]:
    """``limit`` items drawn with a seeded RNG, kept in file order (first-N would cover one system only)."""
    if limit is None or limit >= len(items):
        return list(items)
    keep = set(random.Random(seed).sample(range(len(items)), limit))
    return [it for i, it in enumerate(items) if i in keep]


@dataclass
class Cell:
    method: MethodSpec
    dataset: str
    quality: Quality
    seed: int
    items: list[Item]  # the items scored (rated for this quality), in file order
    pool: list[Item]  # example pool: every rated item of the set

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.method.id, self.dataset, self.quality.name, self.seed)


def check_names(exp: Experiment) -> None:
    """Resolve every prompt / selector / backend / scorer name through its registry before any work."""
    from ..backends import backend_names
    from ..classic import classic_names
    from ..prompts import builtin_prompts
    from ..selectors import get_selector

    for m in exp.methods:
        where = f"{exp.path}: methods[{m.index}]"
        try:
            if m.type == "classic":
                if m.scorer not in classic_names():
                    raise UnknownNameError("scorer", str(m.scorer), classic_names())
                continue
            if m.backend not in backend_names():
                raise UnknownNameError("backend", m.backend, backend_names())
            if m.prompt != "fed" and not m.prompt.endswith(".j2") and m.prompt not in builtin_prompts():
                raise UnknownNameError("prompt", m.prompt, list(builtin_prompts()) + ["fed"])
            if m.prompt.endswith(".j2") and not Path(m.prompt).is_file():
                raise InputError("template file not found", file=m.prompt, field="prompt")
            get_selector(m.selector, seed=m.seeds[0], group_guard=m.group_guard, **m.selector_options) \
                if m.selector != "none" else None
        except (UnknownNameError, InputError) as exc:
            raise InputError(str(exc), file=where) from None
        except TypeError as exc:  # a selector that does not take one of the options given
            raise InputError(f"selector '{m.selector}': {exc}", file=where, field="selector_options") from None


def plan(exp: Experiment, load: Callable[[str], list[Item]] | None = None) -> list[Cell]:
    """All cells of the experiment, in execution order (datasets are loaded once each)."""
    from ..datasets import load_benchmark

    load = load or (lambda name: load_benchmark(name, exp.data_dir))
    sets: dict[str, list[Item]] = {}
    subsets: dict[str, list[Item]] = {}
    for ds in exp.datasets:
        sets[ds.name] = load(ds.name)
        subsets[ds.name] = seeded_subset(sets[ds.name], exp.limit, exp.limit_seed)
    cells = []
    for m in exp.methods:
        for ds in exp.datasets:
            info = dataset_info(ds.name)
            for qname in ds.qualities:
                q = info.quality(qname)
                items = [it for it in subsets[ds.name] if it.human(q.name) is not None]
                pool = [it for it in sets[ds.name] if it.human(q.name) is not None]
                for seed in m.run_seeds():
                    cells.append(Cell(m, ds.name, q, seed, items, pool))
    return cells


class ScorerFactory:
    """Builds the scorer of a cell, keeping one backend alive while consecutive cells share it."""

    def __init__(self) -> None:
        self._key: str | None = None
        self._backend: Any = None

    def backend(self, m: MethodSpec) -> Any:
        from ..backends import create_backend
        from ..config import GenerateConfig

        key = json.dumps([m.backend, m.model, m.options, m.generate], sort_keys=True, default=str)
        if key != self._key:
            self.close()
            self._backend = create_backend(m.backend, m.model, GenerateConfig(**m.generate), **m.options)
            self._key = key
        return self._backend

    def scorer(self, cell: Cell) -> Scorer:
        m = cell.method
        if m.type == "classic":
            from ..classic import create_classic

            return create_classic(str(m.scorer), quality=cell.quality, **m.options)
        from ..llm_judge import LLMJudge
        from ..prompts import fed_prompt_name, get_prompt, load_template
        from ..selectors import get_selector

        if m.prompt == "fed":
            prompt = get_prompt(fed_prompt_name(cell.quality.level, cell.quality.name))
        elif m.prompt.endswith(".j2"):
            prompt = load_template(m.prompt, quality=cell.quality)
        else:
            prompt = get_prompt(m.prompt)
        selector = (get_selector(m.selector, seed=cell.seed, group_guard=m.group_guard, **m.selector_options)
                    if m.k else get_selector("none"))
        backend = self.backend(m)
        # One prompt per call unless the backend batches: results are then saved item by item.
        batch = m.generate.get("batch_size", 16 if backend.capabilities.batching else 1)
        return LLMJudge(prompt, backend, quality=cell.quality, selector=selector, k=m.k, pool=cell.pool,
                        top_k=m.top_k, chat=m.chat, top_n=m.generate.get("top_n", 20), batch_size=batch)

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
        self._backend, self._key = None, None


def _meta(cell: Cell, exp: Experiment) -> dict[str, Any]:
    return {
        # The paper row only labels the report; changing it must not block a resume.
        "method": cell.method.id, "spec": {k: v for k, v in cell.method.describe().items() if k != "paper"},
        "dataset": cell.dataset,
        "quality": cell.quality.name, "seed": cell.seed, "limit": exp.limit, "limit_seed": exp.limit_seed,
        "items": [it.id for it in cell.items],
    }


def _check_meta(path: Path, meta: dict[str, Any]) -> None:
    """Refuse to resume into a cell written with other settings (mixing them would corrupt results)."""
    mpath = path.with_suffix(".meta.json")
    if mpath.exists():
        old = json.loads(mpath.read_text(encoding="utf-8"))
        if old != meta:
            diff = sorted(k for k in meta if old.get(k) != meta.get(k))
            raise InputError(
                f"existing results were made with different settings ({', '.join(diff)}); "
                "write to a new results folder (-o) or delete this one", file=str(mpath))
    else:
        atomic_write_text(mpath, json.dumps(meta, indent=1, ensure_ascii=False) + "\n")


def _applicable(cells: list[Cell]) -> tuple[list[Cell], list[tuple[Cell, str]]]:
    """Split off classic-scorer cells whose set lacks an input the scorer needs (BLEU without
    references, next-user sentiment without next turns): a grid runs every applicable pair and lists
    the others as skipped, with the reason, before anything is computed."""
    from ..classic import create_classic

    keep: list[Cell] = []
    skipped: list[tuple[Cell, str]] = []
    for cell in cells:
        if cell.method.type == "classic" and cell.items:
            scorer = create_classic(str(cell.method.scorer), quality=cell.quality, **cell.method.options)
            check = getattr(scorer, "check", None)
            if check is not None:
                try:
                    check(cell.items)
                except InputError as exc:
                    skipped.append((cell, exc.reason))
                    continue
        keep.append(cell)
    return keep, skipped


def _score_one_by_one(scorer: Scorer, items: Sequence[Item]) -> Iterator[tuple[Item, Score]]:
    by_id = {it.id: it for it in items}
    for s in scorer.score(items):
        yield by_id[s.item_id], s


def run_experiment(
    exp: Experiment,
    *,
    progress: bool = True,
    plots: bool = True,
    load: Callable[[str], list[Item]] | None = None,
    log: Callable[[str], None] = lambda msg: print(msg, file=sys.stderr),
) -> dict[str, Any]:
    """Run (or resume) every cell, then write ``summary.json`` and the reports. Returns the summary."""
    from tqdm import tqdm

    from .summary import summarise

    check_names(exp)
    out = Path(exp.output)
    cells, skipped = _applicable(plan(exp, load))
    for cell, reason in skipped:
        log(f"skipped: {cell.method.id} on {cell.dataset} {cell.quality.name}: {reason}")
    todo: list[tuple[Cell, Path, list[dict[str, Any]], int]] = []
    for cell in cells:
        path = cell_path(out, *cell.key)
        path.parent.mkdir(parents=True, exist_ok=True)
        _check_meta(path, _meta(cell, exp))
        rows, nbytes = read_done(path, [it.id for it in cell.items])
        todo.append((cell, path, rows, nbytes))
    total = sum(len(c.items) for c, *_ in todo)
    done = sum(len(r) for _, _, r, _ in todo)
    if done:
        log(f"resuming: {done} of {total} item results already saved in {out}")
    t0 = time.perf_counter()
    factory = ScorerFactory()
    bar = tqdm(total=total, initial=done, desc=exp.name, unit="item", file=sys.stderr,
               disable=None if progress else True, dynamic_ncols=True)
    try:
        for cell, path, rows, nbytes in todo:
            bar.set_postfix_str(f"{cell.method.id} {dataset_info(cell.dataset).abbrev} {cell.quality.name}"
                                f"{f' seed {cell.seed}' if cell.method.seeded else ''}", refresh=False)
            remaining = cell.items[len(rows):]
            if not cell.items and not path.exists():
                path.write_bytes(b"")  # no rated item in the subset: an empty, finished cell
            if remaining:
                writer = CellWriter(path, nbytes)
                try:
                    scorer = factory.scorer(cell)
                    for item, s in _score_one_by_one(scorer, remaining):
                        writer.append(item_row(item, cell.quality.name, s))
                        bar.update(1)
                finally:
                    writer.close()
            if exp.retry_failed:
                _retry_failed(cell, path, factory)
    finally:
        bar.close()
        factory.close()
    wall = time.perf_counter() - t0
    summary = summarise(exp, cells, {c.key: read_rows(p) for c, p, *_ in todo}, wall_s=wall)
    summary["skipped"] = [{"method": c.method.id, "dataset": c.dataset, "quality": c.quality.name, "reason": r}
                          for c, r in skipped]
    from ..report import render_all

    render_all(out, summary, plots=plots)
    return summary


def _retry_failed(cell: Cell, path: Path, factory: ScorerFactory) -> None:
    """Re-score the items of a finished cell that failed; rewrite the file only if any now succeed."""
    rows = read_rows(path)
    failed = [i for i, r in enumerate(rows) if r.get("error")]
    if not failed:
        return
    items = [cell.items[i] for i in failed]
    scorer = factory.scorer(cell)
    changed = False
    for i, (item, s) in zip(failed, _score_one_by_one(scorer, items), strict=True):
        new = item_row(item, cell.quality.name, s)
        if new != rows[i]:
            rows[i], changed = new, True
    if changed:
        rewrite(path, rows)
