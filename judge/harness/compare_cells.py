"""``[[compare]]`` cells of a ``judge run``: a pairwise method on the pairs of a set, resumable like any cell.

A cell is one ``[[compare]]`` table on one set and quality of the experiment. Its pairs are the set's (its
split half's) replies of different systems to each context (:func:`judge.data.pairs.pairs_within`; ``systems``,
``baseline`` and ``contexts`` as the table says, contexts drawn with the experiment's ``limit_seed``; the
experiment's item ``limit`` does not apply). Everything is checked before any model loads (a set without
pairs, dialog-level or one system per context, is listed as skipped); then the pair rows go to
``compare/<cell>/<set>/<quality>/pairs.jsonl`` and the pointwise method's rows on the pairs' items to
``against.jsonl`` beside them, each line fsynced, a killed run resumed where it stopped
(:mod:`judge.harness.cells`), the settings checked against the folder's (``pairs.meta.json``). The
summary's ``pairwise`` entries come from those files (:func:`judge.stats.pairwise.pairwise_entry`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import InputError, MissingInputError
from ..data.items import Item
from ..data.pairs import Pair, pairs_within, sample_contexts
from ..data.qualities import Quality
from ..datasets.split import split_items
from ..engine import Prepared, prepare
from ..engine.compare import pair_items, point_scores, prepare_pairs
from ..engine.cost import Entry
from ..engine.kinds import method_kinds
from ..engine.session import Session
from ..records.pair_rows import PairRow, read_pair_rows
from ..records.results import compare_path
from ..records.rows import Row, read_rows
from ..stats.pairwise import PointScores, mean_over_sets, pairwise_entry
from .cells import check_meta, compute, read_done, retry_failed
from .config import CompareSpec, Experiment
from .timing import method_timing, read_timing


@dataclass
class CompareCell:
    """One ``[[compare]]`` table on one set and quality: its pairs and the distinct items they hold, the
    pairwise method and the pointwise one beside it, prepared."""

    spec: CompareSpec
    dataset: str
    abbrev: str
    quality: Quality
    pairs: list[Pair]
    items: list[Item]
    prep: Prepared
    against: Prepared | None

    @property
    def label(self) -> str:
        return f"{self.spec.name} {self.abbrev} {self.quality.name}"

    def path(self, root: Path, part: str) -> Path:
        return compare_path(root, self.spec.name, self.dataset, self.quality.name, part)


def plan_compares(exp: Experiment, sets: dict[str, list[Item]]
                  ) -> tuple[list[CompareCell], list[dict[str, str]]]:
    """Every ``[[compare]]`` cell, prepared (errors name the config entry and the set), and the cells skipped
    for a set that has no pairs (as ``summary["skipped"]`` lists them: method, dataset, quality, reason)."""
    cells: list[CompareCell] = []
    skipped: list[dict[str, str]] = []
    for spec in exp.compare_cells:
        for ds in exp.datasets:
            if spec.datasets and ds.name not in spec.datasets:
                continue
            half = split_items(sets[ds.name], exp.split, exp.split_seed)
            for qname in ds.qualities:
                quality = ds.dataset.quality(qname)
                try:
                    cells.append(_cell(spec, ds.name, ds.dataset.abbrev, quality, half, exp))
                except MissingInputError as exc:
                    skipped.append({"method": spec.name, "dataset": ds.name, "quality": quality.name,
                                    "reason": exc.reason})
                except InputError as exc:
                    raise type(exc)(f"{ds.name} {quality.name}: {exc}", file=f"{exp.path}: compare[{spec.index}]") from None
    return cells, skipped


def _cell(spec: CompareSpec, dataset: str, abbrev: str, quality: Quality, items: list[Item],
          exp: Experiment) -> CompareCell:
    pairing = pairs_within(items, file=dataset, systems=spec.systems, baseline=spec.baseline)
    pairs = sample_contexts(pairing.pairs, spec.contexts_for(dataset), exp.limit_seed)
    prep = prepare_pairs(spec.method, pairs, quality)
    shown = pair_items(pairs)
    rated = any(it.human(quality.name) is not None for it in shown)
    against = prepare(spec.against, shown, quality) if spec.against is not None and rated else None
    return CompareCell(spec, dataset, abbrev, quality, pairs, shown, prep, against)


def meta(cell: CompareCell, exp: Experiment) -> dict[str, Any]:
    """The settings a cell's rows were made with: a resume into a folder made otherwise is refused."""
    return {**exp.split_info(), "cell": cell.spec.name, "spec": _settings(cell.spec.method.describe()),
            "against": _settings(cell.spec.against.describe()) if cell.spec.against is not None else None,
            "dataset": cell.dataset, "quality": cell.quality.name, "contexts": cell.spec.contexts_for(cell.dataset),
            "limit_seed": exp.limit_seed, "systems": list(cell.spec.systems or ()), "baseline": cell.spec.baseline,
            "pairs": [p.id for p in cell.pairs]}


def cost_entries(cells: Sequence[CompareCell], root: Path, with_failed: bool = False) -> list[Entry]:
    """What the cells have left to compute, as the engine's replays take them (``--check``'s counting, the
    ``--max-cost`` refusal and the ``--batch`` pre-pass): per cell its pairs left (``with_failed``: also the
    saved pairs that failed, which ``retry_failed`` compares again), then the pointwise method's items left."""
    out: list[Entry] = []
    for cell in cells:
        done, _ = read_done(cell.path(root, "pairs"), [p.id for p in cell.pairs], PairRow)
        retried = [cell.pairs[i] for i, r in enumerate(done) if r.error] if with_failed else []
        out.append(Entry(f"{cell.label} (pairs)", cell.prep, [*retried, *cell.pairs[len(done):]], len(done)))
        if cell.against is not None:
            rows, _ = read_done(cell.path(root, "against"), [it.id for it in cell.items], Row)
            out.append(Entry(f"{cell.label} ({cell.against.spec.name})", cell.against, cell.items[len(rows):],
                             len(rows)))
    return out


def _settings(described: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in described.items() if k != "paper"}


def run_compare(cell: CompareCell, exp: Experiment, root: Path, session: Session,
                progress: Callable[[int], None]) -> None:
    """Compute what is missing of one cell (pairs, then the pointwise rows), retrying failed pairs when the
    experiment retries failures; each part's time is added to its time file."""
    pairs_file = cell.path(root, "pairs")
    pairs_file.parent.mkdir(parents=True, exist_ok=True)
    check_meta(pairs_file, meta(cell, exp))
    qn = cell.quality.name
    done, nbytes = read_done(pairs_file, [p.id for p in cell.pairs], PairRow)
    if len(done) < len(cell.pairs):
        compute(pairs_file, nbytes, session, cell.prep, cell.pairs[len(done):], progress, quality=qn, cell=False)
    elif not pairs_file.exists():
        pairs_file.write_bytes(b"")
    if exp.retry_failed:
        retry_failed(pairs_file, cell.pairs, session, cell.prep, quality=qn)
    if cell.against is not None:
        point_file = cell.path(root, "against")
        rows, nbytes = read_done(point_file, [it.id for it in cell.items], Row)
        if len(rows) < len(cell.items):
            compute(point_file, nbytes, session, cell.against, cell.items[len(rows):], quality=qn, cell=False)


def _read(cell: CompareCell, root: Path) -> tuple[list[PairRow], PointScores | None]:
    """A cell's saved pair rows, and the pointwise method's scores of their replies (None without one)."""
    rows = read_pair_rows(cell.path(root, "pairs"))
    if cell.against is None:
        return rows, None
    return rows, point_scores(cell.pairs, cell.items, read_rows(cell.path(root, "against")))


def entries(cells: Sequence[CompareCell], root: Path, exp: Experiment) -> list[dict[str, Any]]:
    """The summary's ``pairwise`` entries, one per cell, from its saved rows."""
    out = []
    for cell in cells:
        rows, scores = _read(cell, root)
        spec, against = cell.spec.method, cell.against
        out.append(pairwise_entry(
            rows, name=cell.spec.name, dataset=cell.dataset, abbrev=cell.abbrev, quality=cell.quality.name,
            method_name=spec.name, spec=spec.describe(), settings=spec.kind.settings_text(spec.describe()),
            kind=method_kinds(spec, cell.quality).to_dict(), pointwise=scores,
            pointwise_name=against.spec.name if against is not None else None, n_boot=exp.bootstrap, seed=exp.seed))
    return out


def means(cells: Sequence[CompareCell], root: Path, exp: Experiment) -> list[dict[str, Any]]:
    """The summary's ``pairwise_means``: per ``[[compare]]`` table on two sets or more, the mean over its sets
    of the agreement with the humans, with a joint bootstrap over the conversations of all its sets
    (:func:`judge.stats.pairwise.mean_over_sets`)."""
    return [{"name": name, "sets": [c.abbrev or c.dataset for c in mine],
             **mean_over_sets([_read(c, root) for c in mine], n_boot=exp.bootstrap, seed=exp.seed)}
            for name, mine in _by_table(cells).items() if len(mine) >= 2]


def _by_table(cells: Sequence[CompareCell]) -> dict[str, list[CompareCell]]:
    """The cells of each ``[[compare]]`` table, tables in the cells' order."""
    out: dict[str, list[CompareCell]] = {}
    for c in cells:
        out.setdefault(c.spec.name, []).append(c)
    return out


def timing(cells: Sequence[CompareCell], root: Path) -> dict[str, dict[str, Any]]:
    """Per ``[[compare]]`` table: what its pairs cost (and, as ``<name> against``, its pointwise rows)."""
    out: dict[str, dict[str, Any]] = {}
    for name, mine in _by_table(cells).items():
        for label, part in ((name, "pairs"), (f"{name} against", "against")):
            t = method_timing(read_timing(c.path(root, part)) for c in mine)
            if t is not None:
                out[label] = t
    return out
