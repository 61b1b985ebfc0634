"""The registered benchmark sets: where each file lives under a data dir, its format, level, the
qualities its raters used (with their scales) and the key that holds its overall rating.

``judge bench FT``, ``datasets = ["TU", ...]`` in a harness config and the paper's tables name sets
by these names or abbreviations; any other file is benchmarked by path (:mod:`judge.datasets.source`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InputError, UnknownNameError
from ..items import Level
from ..qualities import FED_DIAL, FED_TURN, GRADE, GUPTA, USR, ZHAO, Quality


@dataclass(frozen=True)
class DatasetInfo:
    """A known benchmark set: where its file lives under a data dir, its format, scales and overall key."""

    name: str
    abbrev: str
    path: str
    format: str
    level: Level
    overall: str
    qualities: tuple[Quality, ...] = field(default=())

    def quality(self, name: str) -> Quality:
        for q in self.qualities:
            if q.name.lower() == name.lower():
                return q
        raise UnknownNameError(f"quality of {self.name}", name, [q.name for q in self.qualities])


_D10 = "dstc10_track5/"

DATASETS: dict[str, DatasetInfo] = {
    d.name: d
    for d in (
        DatasetInfo("fed-turn", "FT", _D10 + "fed-turn_eval.json", "dstc10", "turn", "Overall", FED_TURN),
        DatasetInfo("fed-dial", "FD", _D10 + "fed-dial_eval.json", "dstc10-dial", "dialog", "Overall", FED_DIAL),
        DatasetInfo("topical-usr", "TU", _D10 + "topical-usr_eval.json", "dstc10", "turn", "Overall", USR),
        DatasetInfo("persona-usr", "PU", _D10 + "persona-usr_eval.json", "dstc10", "turn", "Overall", USR),
        DatasetInfo("dailydialog-zhao", "DZ", _D10 + "dailydialog-zhao_eval.json", "dstc10", "turn", "appropriateness", ZHAO),
        DatasetInfo("dailydialog-gupta", "DGU", _D10 + "dailydialog-gupta_eval.json", "dstc10", "turn", "overall", GUPTA),
        DatasetInfo("dailydialog-grade", "DGR", _D10 + "dailydialog-grade_eval.json", "dstc10", "turn", "relevance", GRADE),
        DatasetInfo("empathetic-grade", "EG", _D10 + "empathetic-grade_eval.json", "dstc10", "turn", "relevance", GRADE),
        # The other two DSTC10 Track 5 dev sets (not among the paper's eight; see DSTC10_SETS).
        DatasetInfo("persona-zhao", "PZ", _D10 + "persona-zhao_eval.json", "dstc10", "turn", "appropriateness", ZHAO),
        DatasetInfo("convai2-grade", "CG", _D10 + "convai2-grade_eval.json", "dstc10", "turn", "relevance", GRADE),
        # Original releases (same annotations, fields the DSTC10 copies lack).
        DatasetInfo("fed", "FED", "fed/fed_data.json", "fed", "turn", "Overall", FED_TURN + FED_DIAL),
        DatasetInfo("usr-topical", "TU-orig", "usr/tc_usr_data.json", "usr", "turn", "Overall", USR),
        DatasetInfo("usr-persona", "PU-orig", "usr/pc_usr_data.json", "usr", "turn", "Overall", USR),
        DatasetInfo("gupta-csv", "DGU-orig", "dailydialog_gupta/mturk_rating_processed_output.csv", "gupta", "turn", "overall", GUPTA),
    )
}

#: The eight DSTC10 Track 5 sets of the paper's multi-domain setting, in the paper's column order
#: (the release's other two, persona-zhao and convai2-grade, are registered but not in the paper).
DSTC10_SETS = (
    "topical-usr",
    "dailydialog-zhao",
    "persona-usr",
    "dailydialog-gupta",
    "dailydialog-grade",
    "fed-turn",
    "empathetic-grade",
    "fed-dial",
)


def dataset_info(name: str) -> DatasetInfo:
    """Look up a benchmark set by name (file stem without `_eval`) or abbreviation (TU, DZ, ...)."""
    if name in DATASETS:
        return DATASETS[name]
    for d in DATASETS.values():
        if d.abbrev.lower() == name.lower() or d.name.lower() == name.lower():
            return d
    raise UnknownNameError("dataset", name, list(DATASETS) + [d.abbrev for d in DATASETS.values()])


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
