"""The registered benchmark sets, one record each, read from ``benchmarks.toml`` beside this module: where
each file lives under a data dir and where it comes from, its format and level, the qualities its raters
used (with their scales), the key that holds its overall rating, the corpus its conversations come from
and the terms it was published under.

``judge bench FT``, ``datasets = ["TU", ...]`` in a harness config, ``judge data``, the split (which sets
may share conversations) and the paper's tables all read these records; any other file is benchmarked
by path (:mod:`judge.datasets.source`).
"""

from __future__ import annotations

import tomllib
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import InputError, UnknownNameError
from ..data.items import Level
from ..data.qualities import QUALITY_GROUPS, RECORDS, Quality


@dataclass(frozen=True)
class SourceFile:
    """Where ``judge data download`` fetches a set's file: a public repository at a fixed commit."""

    repo: str
    commit: str
    path: str
    sha256: str
    #: Bytes, where recorded (None: only the sha256 was published with the entry).
    size: int | None = None

    @property
    def url(self) -> str:
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{urllib.parse.quote(self.path)}"


@dataclass(frozen=True)
class DatasetInfo:
    """A benchmark set: where its file lives under a data dir, its format, scales and overall key, and (for a
    registered set) its corpus, where its file comes from and its terms. A file given by path gets one built
    from its content, with the registry-only fields left empty."""

    name: str
    abbrev: str
    path: str
    format: str
    level: Level
    overall: str
    qualities: tuple[Quality, ...] = field(default=())
    #: The dialogue corpus its conversations come from: only sets of one corpus may share conversations.
    corpus: str = ""
    #: Cuts short windows out of longer dialogues (a context may open with another item's later turn).
    windows: bool = False
    #: An original release (FED, USR, Gupta) of a set the DSTC10 release also holds.
    original: bool = False
    #: Position among the paper's eight DSTC10 sets (0: not among them).
    dstc10: int = 0
    license: str = ""
    source: SourceFile | None = None

    def quality(self, name: str) -> Quality:
        for q in self.qualities:
            if q.name.lower() == name.lower():
                return q
        raise UnknownNameError(f"quality of {self.name}", name, [q.name for q in self.qualities])


def _read(path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, DatasetInfo]]:
    """The corpora and the sets of the records file (their quality groups are read by :mod:`judge.data.qualities`),
    checked as far as they refer to each other: a wrong name in a record fails every import of judge, which
    the test suite sees at once."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    groups = QUALITY_GROUPS
    corpora: dict[str, dict[str, Any]] = data["corpora"]
    sets: dict[str, DatasetInfo] = {}
    for raw in data["sets"]:
        src = raw.get("source")
        info = DatasetInfo(
            name=raw["name"], abbrev=raw["abbrev"], path=raw["file"], format=raw["format"], level=raw["level"],
            overall=raw["overall"], qualities=tuple(q for g in raw["qualities"] for q in groups[g]),
            corpus=raw["corpus"], windows=raw.get("windows", False), original=raw.get("original", False),
            dstc10=raw.get("dstc10", 0), license=raw["license"], source=SourceFile(**src) if src else None)
        if info.corpus not in corpora:
            raise ValueError(f"{path}: set {info.name}: unknown corpus {info.corpus!r}")
        info.quality(info.overall)  # the overall key is one of its qualities
        sets[info.name] = info
    for corpus, entry in corpora.items():
        if sets.get(entry["anchor"]) is None or sets[entry["anchor"]].corpus != corpus:
            raise ValueError(f"{path}: corpus {corpus}: its anchor {entry['anchor']!r} is not one of its sets")
    return corpora, sets


CORPORA, DATASETS = _read(RECORDS)

#: The eight DSTC10 Track 5 sets of the paper's multi-domain setting, in the paper's column order
#: (the release's other two, persona-zhao and convai2-grade, are registered but not in the paper).
DSTC10_SETS = tuple(d.name for d in sorted((d for d in DATASETS.values() if d.dstc10), key=lambda d: d.dstc10))


def dataset_info(name: str) -> DatasetInfo:
    """Look up a benchmark set by name (file stem without `_eval`) or abbreviation (TU, DZ, ...)."""
    if name in DATASETS:
        return DATASETS[name]
    for d in DATASETS.values():
        if d.abbrev.lower() == name.lower() or d.name.lower() == name.lower():
            return d
    raise UnknownNameError("dataset", name, list(DATASETS) + [d.abbrev for d in DATASETS.values()])


def corpus_sets(corpus: str) -> tuple[str, ...]:
    """The registered sets of one corpus, its anchor first (whose groups name the conversations they share),
    then in the records' order."""
    anchor = CORPORA[corpus]["anchor"]
    return (anchor, *(n for n, d in DATASETS.items() if d.corpus == corpus and n != anchor))


def indexed(corpus: str) -> bool:
    """Whether the sets of ``corpus`` are in the conversation index (``conversations.json``): dialogue corpora
    are; the response-pair sets (``index = false``) share no dialogue with them, and each of their
    instructions is named by its own text (:func:`judge.datasets.identity.content_name`)."""
    return bool(CORPORA[corpus].get("index", True))


def registered_quality(name: str) -> Quality:
    """The quality ``name`` of the registered benchmark sets, when every set that rates it uses one scale
    (``appropriateness``: 1-5 in both Zhao sets). A name the sets rate on different scales (``Overall``:
    0-4 in FED, 1-5 in USR) is refused, because guessing the scale would mislabel examples; so is a name
    no set rates."""
    found: dict[tuple[str, float, float], list[str]] = {}
    quality: dict[tuple[str, float, float], Quality] = {}
    for d in DATASETS.values():
        for q in d.qualities:
            if q.name.lower() == name.lower():
                key = (q.level, q.min, q.max)
                found.setdefault(key, []).append(d.name)
                quality.setdefault(key, q)
    if not found:
        known = sorted({q.name for d in DATASETS.values() for q in d.qualities}, key=str.lower)
        raise UnknownNameError("quality", name, known)
    if len(found) > 1:
        scales = "; ".join(f"{level} {lo:g}-{hi:g} in {', '.join(sets)}" for (level, lo, hi), sets in found.items())
        raise InputError(f"'{name}' is rated on different scales or levels by the benchmark sets ({scales}): pass the set's "
                         f"quality, e.g. dataset_info({next(iter(found.values()))[0]!r}).quality({name!r}), or a "
                         "pool whose items carry it", field="quality")
    return next(iter(quality.values()))


def files_table() -> str:
    """The table of docs/data-format.md ("Benchmark files"), generated from the records (a test keeps the
    page equal to it)."""
    lines = ["| name (abbrev.) | file under the data dir | format | level | overall key (scale) | corpus | license |",
             "|---|---|---|---|---|---|---|"]
    for d in DATASETS.values():
        q = d.quality(d.overall)
        lines.append(f"| {d.name} ({d.abbrev}) | `{d.path}` | `{d.format}` | {d.level} | `{q.name}` ({q.min:g}-{q.max:g}) "
                     f"| {d.corpus} | {d.license} |")
    return "\n".join(lines)
