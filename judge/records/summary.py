"""``summary.json``, the cell summary of a results folder, as typed records: what ``judge run`` (and ``judge
bench``) computes once from the per-item rows (:func:`judge.harness.summary.summarise`) and every report,
``judge view`` and ``judge results`` read. Written with one space of indent and its keys in field order, so
that a summary read and written again is the same file byte for byte."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..core.errors import InputError
from ..core.io import atomic_write_text
from ..stats.floor import has_interval
from .record import Record

#: Version of the summary.json layout.
SCHEMA = 2
#: The file's name in a results folder.
SUMMARY_FILE = "summary.json"


@dataclass(frozen=True)
class Corr(Record):
    """A correlation with the human ratings: its value, its item-level p and the pairs it was taken on."""

    value: float | None
    p: float | None
    n: int


@dataclass(frozen=True)
class Interval(Record):
    """A bootstrap CI (resampling ``unit``: ``group``, conversations, or ``item``) with the bootstrap p of the
    same resamples; ``too_few`` when it resampled fewer conversations than the floor (then no interval, no p)."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"too_few"})

    low: float | None
    high: float | None
    level: float
    n_boot: int
    seed: int
    unit: str
    n_units: int
    n_degenerate: int
    p: float | None
    too_few: bool | None = None

    @property
    def few(self) -> int | None:
        """The units resampled when they are fewer than the floor (:mod:`judge.stats.floor`), else None."""
        return self.n_units if self.too_few or not has_interval(self.n_units) else None

    @property
    def conversations(self) -> int | None:
        """How many conversations it resampled (None when it resampled single items)."""
        return self.n_units if self.unit == "group" else None


@dataclass(frozen=True)
class Stats(Record):
    """One cell's scores against the human means: correlations, the CI of Spearman, and counts (failed items,
    scores estimated from sampled answers, scores read from a top-N list that may miss label spellings);
    ``system_spearman`` with three systems or more."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"system_spearman"})

    spearman: Corr
    pearson: Corr
    kendall: Corr
    ci: Interval
    n_items: int
    n_failed: int
    n_estimated: int
    n_incomplete: int
    system_spearman: Corr | None = None


@dataclass(frozen=True)
class CellStats(Record):
    """One cell (method x set x quality x seed): its :class:`Stats`, and what the method learned (``fitted``)."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"fitted"})
    INLINE: ClassVar[frozenset[str]] = frozenset({"stats"})

    method: str
    dataset: str
    quality: str
    seed: int
    stats: Stats
    fitted: dict[str, Any] | None = None

    @property
    def key(self) -> tuple[str, str, str, int]:
        return self.method, self.dataset, self.quality, self.seed


@dataclass(frozen=True)
class WithoutCopies(Record):
    """A reference-based result again without the items whose reply is (nearly) one of its references."""

    spearman: float | None
    n: int
    n_left_out: int
    ci: Interval
    n_conversations: int | None


@dataclass(frozen=True)
class Result(Record):
    """A (method, set, quality) over its seeds, the leaderboard's cell: the mean Spearman and its sd over
    seeds; p, CI and the other figures are the first seed's."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"without_copies"})

    method: str
    dataset: str
    quality: str
    seeds: tuple[int, ...]
    spearman: float | None
    sd: float | None
    p: float | None
    ci: Interval
    n: int
    p_boot: float | None
    n_conversations: int | None
    pearson: Corr
    kendall: Corr
    system_spearman: Corr | None
    n_failed: int
    n_estimated: int
    n_incomplete: int
    without_copies: WithoutCopies | None = None


@dataclass(frozen=True)
class Summary(Record):
    """``summary.json``: the experiment, its methods (with their kinds) and sets, every cell, the results over
    seeds, the DSTC10 averages, the configured comparisons, the human-agreement ceiling, time and counters;
    with ``[[compare]]`` cells their ``pairwise`` entries (:func:`judge.stats.pairwise.pairwise_entry`)."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"pairwise", "pairwise_means", "not_trained_on", "cost_usd"})

    schema: int
    experiment: dict[str, Any]
    methods: dict[str, dict[str, Any]]
    datasets: tuple[dict[str, Any], ...]
    cells: tuple[CellStats, ...]
    results: tuple[Result, ...]
    averages: dict[str, dict[str, Any]]
    comparisons: tuple[dict[str, Any], ...]
    average_comparisons: tuple[dict[str, Any], ...]
    ceiling: dict[str, dict[str, Any]]
    timing: dict[str, dict[str, Any]]
    wall_s: float | None
    skipped: tuple[dict[str, str], ...] = ()
    pairwise: tuple[dict[str, Any], ...] | None = None
    pairwise_means: tuple[dict[str, Any], ...] | None = None
    not_trained_on: tuple[dict[str, Any], ...] | None = None
    left_out: tuple[dict[str, Any], ...] = ()
    counters: dict[str, int] = field(default_factory=dict)
    cost_usd: float | None = None

    def to_text(self) -> str:
        """The file's text (one space of indent, as every results folder has written it)."""
        return json.dumps(self.to_dict(), indent=1, ensure_ascii=False) + "\n"

    def write(self, results_dir: str | Path) -> Path:
        """Write ``summary.json`` into ``results_dir`` (atomically) and return its path."""
        path = Path(results_dir) / SUMMARY_FILE
        atomic_write_text(path, self.to_text())
        return path


def read_summary(results_dir: str | Path) -> Summary:
    """The summary of a results folder (InputError when there is none, or it is not one)."""
    path = Path(results_dir) / SUMMARY_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("no summary.json here; is this a folder written by 'judge run'?", file=str(path)) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc}", file=str(path)) from None
    return Summary.from_dict(data, file=str(path))
