"""Reliable-Eval's system level, read from a ``judge run`` folder: ``judge results system RUN_DIR``.

For every cell of a Reliable-Eval set (its first seed), the judge's per-system means are correlated with the
human per-system means of the same conversations over the ten systems (:mod:`judge.stats.system_level`,
conversations resampled within each system), once with the raw 0-100 sliders and once with the authors'
per-worker z-scores (each row says which). Beside it: where the judge ranks the quality-control bot (it
should be last) and the human self-replication ceiling, the system-level correlation of the two free-topic
runs' human means (all their conversations), on the same scores. A negative quality (``robotic``,
``repetitive``) is marked "lower is better": a good judge's figure there is negative.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..data.items import Item
from ..data.qualities import LOWER_IS_BETTER
from ..datasets import load_benchmark
from ..datasets.benchmarks import DATASETS
from ..datasets.reliable_eval import QUALITY_CONTROL
from ..records.results import slug
from ..records.rows import Row, read_rows
from ..stats.system_level import SystemAgreement, rank_of, replication, system_agreement
from .table import fmt

#: The registered Reliable-Eval sets and the two runs whose agreement is the ceiling.
SETS = ("reliable-eval-free1", "reliable-eval-free2", "reliable-eval-ice")
RUNS = ("reliable-eval-free1", "reliable-eval-free2")
#: Which human scores a row uses: the raw sliders (the items' annotations) or the per-worker z-scores (meta).
SCORES = ("raw", "z")


@dataclass(frozen=True)
class SystemRow:
    method: str
    dataset: str
    quality: str
    scores: str
    judge: SystemAgreement
    #: Where the judge puts the quality-control bot (rank, systems; 1 = best), and where people do.
    qc_judge: tuple[int, int] | None
    qc_human: tuple[int, int] | None
    ceiling: SystemAgreement | None
    negative: bool


def human_scores(rows: Sequence[Row], quality: str, scores: str) -> list[float | None]:
    """Each row's human rating: its ``human`` (raw slider) or its worker's z-score (``meta["z:<quality>"]``)."""
    if scores == "raw":
        return [r.human for r in rows]
    return [_number((r.meta or {}).get(f"z:{quality}")) for r in rows]


def _number(x: object) -> float | None:
    """A metadata value as a rating (None where the item has none)."""
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def ceiling(data_dir: str | Path, quality: str, scores: str, n_boot: int, seed: int) -> SystemAgreement:
    """The two free-topic runs' human system means, correlated (the quality-control bot left out)."""
    runs = _runs(str(data_dir))
    values = [[float(it.annotations[quality][0] if scores == "raw" else it.meta[f"z:{quality}"])  # type: ignore[arg-type]
               for it in items] for items in runs]
    systems = [[str(it.system) for it in items] for items in runs]
    return replication(values[0], systems[0], values[1], systems[1], exclude={QUALITY_CONTROL}, n_boot=n_boot,
                       seed=seed)


@cache
def _runs(data_dir: str) -> tuple[list[Item], ...]:
    """The two free-topic runs, loaded once per data directory."""
    return tuple(load_benchmark(name, data_dir) for name in RUNS)


def cells(run_dir: str | Path) -> list[tuple[str, str, str, Path]]:
    """(method, set, quality, rows file) of every Reliable-Eval cell's first seed in a results folder."""
    root = Path(run_dir) / "items"
    if not root.is_dir():
        raise InputError("not a 'judge run' results folder (no items/ inside)", file=str(run_dir))
    out = []
    for method_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for name in SETS:
            set_dir = method_dir / slug(name)
            for q in DATASETS[name].qualities:
                seeds = sorted((set_dir / slug(q.name)).glob("seed*.jsonl"))
                if seeds:
                    out.append((method_dir.name, name, q.name, seeds[0]))
    return out


def system_rows(run_dir: str | Path, data_dir: str | Path, *, n_boot: int = 1000, seed: int = 0) -> list[SystemRow]:
    """The system-level rows of every Reliable-Eval cell in ``run_dir``, with raw and z-scored humans."""
    found = cells(run_dir)
    if not found:
        raise InputError("no Reliable-Eval cell in this results folder (sets: " + ", ".join(SETS) + ")",
                         file=str(run_dir))
    ceilings: dict[tuple[str, str], SystemAgreement] = {}
    out = []
    for method, name, quality, path in found:
        rows = [r for r in read_rows(path) if r.system]
        systems = [str(r.system) for r in rows]
        scores_ = [r.score for r in rows]
        negative = DATASETS[name].quality(quality).negative
        for kind in SCORES:
            human = human_scores(rows, quality, kind)
            judge = system_agreement(scores_, human, systems, exclude={QUALITY_CONTROL}, n_boot=n_boot, seed=seed)
            if (quality, kind) not in ceilings:
                ceilings[(quality, kind)] = ceiling(data_dir, quality, kind, n_boot, seed)
            out.append(SystemRow(method, name, quality, kind, judge, _rank(judge.left, False),
                                 _rank(judge.right, negative), ceilings[(quality, kind)], negative))
    return out


def _rank(means: dict[str, float] | Any, negative: bool) -> tuple[int, int] | None:
    return rank_of(means, QUALITY_CONTROL, negative) if QUALITY_CONTROL in means else None


def rank_text(rank: Sequence[int] | None) -> str:
    """Where a system lands, ``3 of 11``; ``–`` where it was not ranked."""
    return f"{rank[0]} of {rank[1]}" if rank else "–"


def _figure(a: SystemAgreement) -> str:
    ci = f" [{fmt(a.low)}, {fmt(a.high)}]" if a.has_interval else " (too few conversations for an interval)"
    return fmt(a.value) + ci


def markdown(rows: Sequence[SystemRow]) -> str:
    """The table ``judge results system`` prints."""
    out = ["## Reliable-Eval: system level (Spearman over the per-system means, quality-control bot left out)", "",
           "| method | set | quality | human scores | systems | conversations | judge | p | QC bot (judge's rank) "
           "| QC bot (people's rank) | ceiling: people, run 1 vs run 2 |",
           "|---|---|---|---|---:|---:|---|---:|---:|---:|---|"]
    for r in rows:
        quality = f"{r.quality} ({LOWER_IS_BETTER})" if r.negative else r.quality
        ceil = f"{_figure(r.ceiling)} (n = {r.ceiling.n_systems})" if r.ceiling else "–"
        scores = "raw 0-100" if r.scores == "raw" else "per-worker z"
        out.append(f"| {r.method} | {DATASETS[r.dataset].abbrev} | {quality} | {scores} | {r.judge.n_systems} | "
                   f"{r.judge.n_conversations} | {_figure(r.judge)} | {fmt(r.judge.p_value)} | {rank_text(r.qc_judge)} | "
                   f"{rank_text(r.qc_human)} | {ceil} |")
    out += ["", "The judge's rank of the quality-control bot counts from its highest mean score (1 = best); it should "
            f"be last. For a quality marked {LOWER_IS_BETTER}, people's ratings run the other way (a high "
            "`robotic` is bad), so a good judge's figure is negative, while the ceiling (people against people) "
            "stays positive."]
    return "\n".join(out) + "\n"
