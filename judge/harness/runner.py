"""Execute an experiment: load each set once, score every cell, append results, then summarise.

Order is fixed (methods in config order, then sets, qualities, seeds), so the same config always
writes the same files. Backends are created lazily and reused while consecutive cells share one.
Cells whose method type shares a pass (one backend, one set) are computed together, their requests
ordered by prefix across the cells (:func:`schedule_groups`); each still writes exactly the rows it
writes alone.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..backends.registry import BACKENDS, VOCABULARIES, sending_options
from ..core.errors import BackendError, InputError, MissingInputError, UnknownNameError
from ..data.items import Item
from ..data.qualities import Quality
from ..datasets import load_benchmark
from ..datasets.identity import may_share
from ..datasets.split import conversation_of, split_items
from ..engine import MethodSpec, Prepared, prepare, run_rows_together
from ..engine import check_names as engine_check_names
from ..engine.cost import Entry
from ..engine.schedule import family_shares
from ..engine.session import RunOptions, Session
from ..engine.spec import OTHER_SETS
from ..records.results import cell_path
from ..records.rows import Row, read_rows
from ..records.summary import Summary
from ..report import render_all
from ..scorers.base import Lane
from ..scorers.units import LaneCost
from .cells import CellWriter, check_meta, check_ratings, compute, read_done, retry_failed
from .compare_cells import CompareCell, plan_compares, run_compare
from .compare_cells import cost_entries as compare_cost_entries
from .compare_cells import entries as compare_entries
from .compare_cells import means as compare_means
from .compare_cells import timing as compare_timing
from .config import Experiment
from .fitted import read_fitted, record_fit
from .prompt_settings import write_prompt_settings
from .summary import summarise
from .timing import read_timing


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
    pool: list[Item]  # example pool: every rated item of the set, or of its dev half when the run has a split
    # Where a listwise template finds the other replies to a context: every item of the scored half (or
    # of the set without a split), whatever the limit keeps, so a sample shows each context's replies
    # as the set holds them. Texts only: no rating of these items is read.
    population: list[Item]
    #: The conversations of the scored items (``conversation_of``: content fingerprints, one name for a
    #: conversation in every file that holds it), so that lodo never learns on ratings of the conversations
    #: it scores.
    conversations: frozenset[str] = frozenset()
    #: ``fit = "lodo"``: the experiment's sets the weights were not learned on, with the reason.
    not_trained_on: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.method.name, self.dataset, self.quality.name, self.seed)

    @property
    def where(self) -> dict[str, str]:
        """The cell as summary.json's lists of cells name it."""
        return {"method": self.method.name, "dataset": self.dataset, "quality": self.quality.name}


#: A cell to compute: the cell, its prepared method, its file, the rows saved there and their size in bytes.
Todo = tuple[Cell, Prepared, Path, list[Row], int]


def check_names(exp: Experiment) -> None:
    """Resolve every method's names through the registries before any work (errors name the entry)."""
    named = [(m, f"methods[{m.index}]") for m in exp.methods]
    named += [(m, f"compare[{c.index}]") for c in exp.compare_cells for m in (c.method, c.against) if m is not None]
    for m, where in named:
        try:
            engine_check_names(m)
        except (UnknownNameError, InputError) as exc:
            raise InputError(str(exc), file=f"{exp.path}: {where}") from None


def load_sets(exp: Experiment, load: Callable[[str], list[Item]] | None = None) -> dict[str, list[Item]]:
    """Every set of the experiment, loaded once: a file given by path as read with the config, a registered
    set by ``load`` (default: from the data directory)."""
    load = load or (lambda name: load_benchmark(name, exp.data_dir))
    return {ds.name: list(ds.source.items) if ds.source is not None else load(ds.name) for ds in exp.datasets}


def plan(exp: Experiment, load: Callable[[str], list[Item]] | None = None,
         sets: dict[str, list[Item]] | None = None) -> list[Cell]:
    """All cells of the experiment, in execution order (datasets are loaded once each; ``sets``: already)."""
    sets = sets if sets is not None else load_sets(exp, load)
    subsets: dict[str, list[Item]] = {}
    pools: dict[str, list[Item]] = {}
    halves: dict[str, list[Item]] = {}
    for ds in exp.datasets:
        halves[ds.name] = split_items(sets[ds.name], exp.split, exp.split_seed)
        subsets[ds.name] = seeded_subset(halves[ds.name], exp.limit, exp.limit_seed)
        # With a split, in-context examples come from the dev half only: a test item is never shown as an
        # example, so choosing on dev and reporting on test reads no test label at all.
        pools[ds.name] = split_items(sets[ds.name], "dev", exp.split_seed) if exp.split else sets[ds.name]
    cells = []
    for m in exp.methods:
        for ds in exp.datasets:
            info = ds.dataset
            for qname in ds.qualities:
                q = info.quality(qname)
                items = [it for it in subsets[ds.name] if it.human(q.name) is not None]
                pool = [it for it in pools[ds.name] if it.human(q.name) is not None]
                for seed in m.run_seeds():
                    cells.append(Cell(m, ds.name, q, seed, items, pool, halves[ds.name],
                                      frozenset(map(conversation_of, items))))
    return cells


def prepare_cell(cell: Cell, exp: Experiment) -> Prepared:
    """The cell's method checked against its items and pool (errors name the config entry)."""
    try:
        return prepare(cell.method, cell.items, cell.quality, pool=cell.pool, population=cell.population,
                       seed=cell.seed)
    except InputError as exc:  # the same class: a missing input stays one (``applicable`` skips it)
        raise type(exc)(f"{cell.dataset} {cell.quality.name}: {exc}",
                        file=f"{exp.path}: methods[{cell.method.index}]") from None


def cell_meta(cell: Cell, exp: Experiment, prep: Prepared) -> dict[str, Any]:
    """The settings a cell is made with (its ``seedN.meta.json``): a resume must find them unchanged, and a
    cell rebuilt from a results folder (:mod:`judge.harness.rebuild`) must too."""
    meta = {
        **exp.split_info(),
        # The paper row only labels the report, and pacing or a spending cap only how requests are sent:
        # changing them must not block a resume.
        "method": cell.method.name, "spec": _resumable_spec(cell.method),
        "dataset": cell.dataset,
        "quality": cell.quality.name, "seed": cell.seed, "limit": exp.limit, "limit_seed": exp.limit_seed,
        "items": [it.id for it in cell.items],
    }
    if _uses_examples(prep):  # where the examples came from: another pool gives other prompts
        meta["example_pool"] = prep.spec.kind.examples(prep.spec)[1] or exp.example_pool()
    if prep.training:  # the sets offered to the fit (other sets give other weights): a resume must not mix them
        meta["training_offered"] = [t.label for t in prep.training]  # what it used: ``record_fit``, after it
    if cell.not_trained_on:  # the experiment's sets lodo must not learn on for this one, and why
        meta["not_trained_on"] = dict(cell.not_trained_on)
    if prep.left_out:  # an ensemble without some optional members on this set
        meta["left_out"] = dict(prep.left_out)
    return meta


def _resumable_spec(spec: MethodSpec) -> dict[str, Any]:
    """What a results folder's cells must have been made with to resume into them: the spec as described,
    without the paper row and the backend's sending options (:func:`judge.backends.registry.sending_options`)."""
    described = {k: v for k, v in spec.describe().items() if k != "paper"}
    members = spec.kind.members(spec)
    if members and isinstance(described.get("members"), dict):  # an ensemble: its members' options too
        described["members"] = {m.name: _resumable_spec(m) for m in members}
    if isinstance(described.get("options"), dict) and spec.kind.runs_model:
        sending = sending_options(spec.backend)
        described["options"] = {k: v for k, v in described["options"].items() if k not in sending}
    return described


def _uses_examples(prep: Prepared) -> bool:
    return prep.spec.kind.examples(prep.spec)[0] > 0 or any(_uses_examples(m) for m in prep.members)


def attach_training(prepared: list[tuple[Cell, Prepared]], exp: Experiment) -> None:
    """Give each ``fit = "lodo"`` ensemble cell the same method prepared on the experiment's other
    datasets (same seed), which its weights are learned on: every other set except those whose cell
    shares a conversation with the scored cell, by content (FED-Turn and FED-Dial, a release file and its
    DSTC10 copy, DailyDialog sets that sampled one dialogue, one file listed under two names or paths),
    whose ratings would carry the scored conversations' labels; registered sets of different corpora share
    none (:func:`judge.datasets.identity.may_share`), whatever their texts' names."""
    for cell, prep in prepared:
        if prep.spec.kind.trained_on(prep.spec) != OTHER_SETS:
            continue
        where = f"{exp.path}: methods[{cell.method.index}]"
        others = [(c, p) for c, p in prepared
                  if c.method.name == cell.method.name and c.seed == cell.seed and c.dataset != cell.dataset]
        shared = {c.dataset: f"shares conversations with {cell.dataset}" for c, _ in others
                  if may_share(c.dataset, cell.dataset) and c.conversations & cell.conversations}
        cell.not_trained_on = tuple(shared.items())
        prep.training = tuple(p for c, p in others if c.dataset not in shared)
        if not prep.training:
            why = f" ({', '.join(sorted(shared))} share its conversations)" if shared else ""
            raise InputError("fit = 'lodo' learns the weights on the experiment's other datasets, and this run has "
                             f"none for {cell.dataset}{why}: give two datasets or more that share no conversation",
                             field="fit", file=where)


def applicable(cells: list[Cell], exp: Experiment) -> tuple[list[tuple[Cell, Prepared]], list[tuple[Cell, str]]]:
    """Prepare every cell before anything is computed. Classic-scorer cells whose set lacks an input
    the scorer needs (BLEU without references, next-user sentiment without next turns) are split off
    and listed as skipped with the reason; any other problem stops the run now. ``lodo`` ensemble cells
    get their training cells here (:func:`attach_training`), so that ``--check`` refuses what the run
    would refuse and counts what the run would score."""
    keep: list[tuple[Cell, Prepared]] = []
    skipped: list[tuple[Cell, str]] = []
    for cell in cells:
        try:
            keep.append((cell, prepare_cell(cell, exp)))
        except MissingInputError as exc:
            if not cell.method.kind.skips_missing_input:
                raise
            skipped.append((cell, exc.reason.split(": ", 2)[-1]))
    attach_training(keep, exp)
    return keep, skipped


def run_experiment(exp: Experiment, *, progress: bool = True, plots: bool = True,
                   load: Callable[[str], list[Item]] | None = None,
                   log: Callable[[str], None] = lambda msg: print(msg, file=sys.stderr)) -> Summary:
    """Run (or resume) every cell, then write ``summary.json`` and the reports. Returns the summary.

    Methods whose backend batches (``--batch``) have the requests the cache lacks, over every cell, answered
    in bulk first (:mod:`judge.engine.batch`), their batches recorded in ``batches/`` beside the cache.

    Every cell is prepared (names, templates, manual sets, scales) before any model loads. Rows reach
    their cell file in item order, one fsynced line each; scores that finish early inside a window of
    prefix-sorted prompts wait in the SQLite cache, so a killed run loses only the prompts in flight
    and a rerun recomputes nothing it finished.
    """
    out = Path(exp.output)
    prepared, compares, skipped_rows = prepare_run(exp, load)
    cells = [c for c, _ in prepared]
    for sk in skipped_rows:
        log(f"skipped: {sk['method']} on {sk['dataset']} {sk['quality']}: {sk['reason']}")
    todo = pending(prepared, out)
    # --max-cost, --batch (a method that cannot be batched, or not on Ray, is refused here): nothing written yet
    session = Session(RunOptions(exp.ray, progress, log))
    session.plan(entry_groups(todo, compares, out, exp, with_failed=exp.retry_failed)[0])
    for cell, prep, path, *_ in todo:
        path.parent.mkdir(parents=True, exist_ok=True)
        check_meta(path, cell_meta(cell, exp, prep))
    total = sum(len(c.items) for c, *_ in todo) + sum(len(c.pairs) for c in compares)
    done = sum(len(t[3]) for t in todo)
    if done:
        log(f"resuming: {done} of {total} item results already saved in {out}")
    t0 = time.perf_counter()
    abbrev = {ds.name: ds.dataset.abbrev for ds in exp.datasets}
    with session:
        bar = session.bar(total, exp.name, "item", initial=done, leave=True)
        try:
            for group in schedule_groups(todo):
                if len(group) > 1:
                    first = todo[group[0]][0]
                    bar.set_postfix_str(f"{len(group)} cells of {first.method.model or 'the default model'} on "
                                        f"{abbrev[first.dataset]}", refresh=False)
                    _compute_together([todo[i] for i in group], session, bar.update)
                for cell, prep, path, rows, nbytes in (todo[i] for i in group):
                    bar.set_postfix_str(cell_label(cell, abbrev[cell.dataset]), refresh=False)
                    remaining = cell.items[len(rows):]
                    if not cell.items and not path.exists():
                        path.write_bytes(b"")  # no rated item in the subset: an empty, finished cell
                    if remaining and len(group) == 1:
                        compute(path, nbytes, session, prep, remaining, bar.update, quality=cell.quality.name,
                                seed=_row_seed(cell))
                    if exp.retry_failed:
                        retry_failed(path, cell.items, session, prep, quality=cell.quality.name, seed=_row_seed(cell))
            for comparing in compares:
                bar.set_postfix_str(comparing.label, refresh=False)
                run_compare(comparing, exp, out, session, bar.update)
        finally:
            bar.close()
    wall = time.perf_counter() - t0
    for _, _, path, *_ in todo:  # a run killed between a fit file and its meta: the next one completes it
        record_fit(path)
    summary = summarise(exp, cells, {c.key: read_rows(p) for c, _, p, *_ in todo}, wall_s=wall,
                        timings={c.key: read_timing(p) for c, _, p, *_ in todo},
                        fitted={c.key: read_fitted(p) for c, _, p, *_ in todo})
    if exp.compare_cells:
        summary = replace(summary, pairwise=tuple(compare_entries(compares, out, exp)),
                          pairwise_means=tuple(compare_means(compares, out, exp)),
                          timing={**summary.timing, **compare_timing(compares, out)})
    # lodo cells whose weights left sets out for sharing conversations with them
    not_trained_on = tuple({**c.where, "sets": dict(c.not_trained_on)} for c, *_ in todo if c.not_trained_on)
    counters = session.counters()
    summary = replace(summary, skipped=tuple(skipped_rows), not_trained_on=not_trained_on or None,
                      left_out=tuple({**c.where, "members": dict(prep.left_out)} for c, prep, *_ in todo if prep.left_out),
                      counters=counters,
                      # hosted APIs: the cost of the usage the server reported
                      cost_usd=counters["cost_micro_usd"] / 1_000_000 if "cost_micro_usd" in counters else None)

    render_all(out, summary, plots=plots)
    return summary


def prepare_run(exp: Experiment, load: Callable[[str], list[Item]] | None = None
                ) -> tuple[list[tuple[Cell, Prepared]], list[CompareCell], list[dict[str, str]]]:
    """Every cell of ``exp`` prepared before any model loads (:func:`applicable`), its ``[[compare]]`` cells, and
    the cells skipped, as ``summary["skipped"]`` lists them (method, dataset, quality, reason)."""
    check_names(exp)
    sets = load_sets(exp, load)
    prepared, skipped = applicable(plan(exp, sets=sets), exp)
    compares, compare_skipped = plan_compares(exp, sets)
    return prepared, compares, [{**c.where, "reason": r} for c, r in skipped] + compare_skipped


def pending(prepared: Sequence[tuple[Cell, Prepared]], out: Path) -> list[Todo]:
    """Each prepared cell with its file in the results folder ``out``, the rows already saved there and their
    size in bytes (what a resume keeps)."""
    todo: list[Todo] = []
    for c, p in prepared:
        path = cell_path(out, *c.key)
        rows, nbytes = read_done(path, [it.id for it in c.items], Row)
        check_ratings(path, c.items, c.quality.name, rows)
        todo.append((c, p, path, rows, nbytes))
    return todo


def cell_label(cell: Cell, abbrev: str) -> str:
    """How the cost table names a cell: method, set abbreviation, quality (and seed, for seeded methods)."""
    seed = f" seed {cell.seed}" if cell.method.seeded else ""
    return f"{cell.method.name} {abbrev} {cell.quality.name}{seed}"


def entry_groups(todo: Sequence[Todo], compares: Sequence[CompareCell], out: Path, exp: Experiment,
                 with_failed: bool = False) -> tuple[list[list[Entry]], list[Entry]]:
    """The cells left to score as the engine's replays take them (:func:`judge.engine.cost.replay_group`): in
    the run's groups and order, each with the items it will score (``with_failed``: also the saved rows that
    failed, which ``retry_failed`` scores again), then the ``[[compare]]`` cells' pairs and pointwise rows; and
    every entry in the cells' order (``--check``'s table)."""
    abbrev = {ds.name: ds.dataset.abbrev for ds in exp.datasets}
    entries = []
    for c, prep, _, rows, _ in todo:
        retried = [c.items[i] for i, r in enumerate(rows) if r.error] if with_failed else []
        entries.append(Entry(cell_label(c, abbrev[c.dataset]), prep, [*retried, *c.items[len(rows):]], len(rows)))
    groups = [[entries[i] for i in group] for group in schedule_groups(todo)]
    extra = compare_cost_entries(compares, out, with_failed)
    return groups + [[e] for e in extra], entries + extra


def schedule_groups(todo: Sequence[Todo]) -> list[list[int]]:
    """The order cells are computed in, as groups of indices into ``todo``: the LLM cells with items left
    that run on one backend (same backend, model, options and generation settings) and one set form
    one group, computed in one prefix-scheduled pass where the first of them stands; every other cell
    is a group of its own. Groups of one compute exactly as before."""
    groups: list[list[int]] = []
    where: dict[tuple[str, str], int] = {}
    for i, (cell, _, _, rows, _) in enumerate(todo):
        share = cell.method.kind.share_key(cell.method)
        if share is not None and len(rows) < len(cell.items):
            key = (share, cell.dataset)
            if key in where:
                groups[where[key]].append(i)
                continue
            where[key] = len(groups)
        groups.append([i])
    return groups


def _compute_together(entries: Sequence[Todo],
                      session: Session, progress: Callable[[int], None]) -> None:
    """Score the remaining items of several LLM cells of one backend and set in one pass whose prompts
    are ordered by prefix across the cells (:func:`judge.engine.run_rows_together`). Each cell gets the
    rows, cache entries and files it gets alone, each row fsynced as it and the cell's earlier rows are
    done; each cell's time file gets its own share (its prompt building and backend calls)."""
    writers = [CellWriter(path, nbytes) for _, _, path, _, nbytes in entries]
    costs = [LaneCost() for _ in entries]
    loads = [0.0] * len(entries)
    try:
        lanes: list[Lane] = []
        for i, (cell, prep, *_rest) in enumerate(entries):
            start = time.perf_counter()
            scorer = session.build(prep)  # the first loads the model; the rest share it
            lane = scorer.lane()
            loads[i] = time.perf_counter() - start
            if lane is None:  # a type that declares a share key must build a lane scorer
                raise TypeError(f"{cell.method.type} methods declare a share key, but {cell.method.name}'s scorer "
                                "states no lane of work")
            write_prompt_settings(entries[i][2], scorer)
            lanes.append(lane)
        run_rows_together(lanes, [c.items[len(rows):] for c, _, _, rows, _ in entries],
                          [c.method.name for c, *_ in entries], [c.quality.name for c, *_ in entries],
                          [w.append for w in writers], progress, seeds=[_row_seed(c) for c, *_ in entries],
                          costs=costs)
    finally:
        for writer, cost, load_s in zip(writers, costs, loads, strict=True):
            writer.close(cost.seconds, load_s, cost.counters, {})


def family_report(prepared: Sequence[tuple[Cell, Prepared]]) -> list[str]:
    """``judge run --check``'s lines on prompt families: per set and family, the prefix its prompts
    share per item, in tokens of the model for llama.cpp methods (its vocabulary only is read) and in
    characters for other backends, which ``--check`` does not contact."""
    tokenizers: dict[str | None, Callable[[str], list[int]] | None] = {}
    notes: list[str] = []

    def tokenizer(spec: MethodSpec) -> Callable[[str], list[int]] | None:
        backend = BACKENDS.canonical(spec.backend)
        if backend not in VOCABULARIES:
            return None
        if spec.model not in tokenizers:
            # The report is informational: a model not installed yet (the run itself will stop on it, with
            # the same message) gives the prefixes in characters instead of failing the check.
            try:
                tokenizers[spec.model] = VOCABULARIES.get(backend)(spec.model)
            except BackendError as exc:
                tokenizers[spec.model] = None
                notes.append(f"note: family prefixes of {spec.model or 'the default model'} in characters: {exc}")
        return tokenizers[spec.model]

    shares = family_shares([(c.dataset, p, c.items) for c, p in prepared], tokenizer)
    return [*notes, *(s.describe() for s in shares)]


def _row_seed(cell: Cell) -> int | None:
    return cell.seed if cell.method.kind.records_seed else None
