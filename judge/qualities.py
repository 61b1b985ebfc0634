"""Registry of known qualities (name, level, scale, wording for prompts) and benchmark sets."""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import UnknownNameError
from .items import Level


@dataclass(frozen=True)
class Quality:
    """A rated aspect of a response or dialog, with the scale its human ratings use."""

    name: str
    level: Level
    min: float
    max: float
    #: Completes "rate how ... " in the instruction of a rating prompt.
    description: str = ""

    @property
    def key(self) -> str:
        return self.name.lower()


def _q(name: str, level: Level, lo: float, hi: float, desc: str) -> Quality:
    return Quality(name, level, lo, hi, desc)


_T, _D = "turn", "dialog"

FED_TURN = (
    _q("Interesting", _T, 0, 2, "interesting the response is with regards to the dialog history"),
    _q("Engaging", _T, 0, 2, "engaging the response is with regards to the dialog history"),
    _q("Specific", _T, 0, 2, "specific the response is with regards to the dialog history"),
    _q("Relevant", _T, 0, 2, "relevant the response is with regards to the dialog history"),
    _q("Correct", _T, 0, 2, "correct the response is with regards to the dialog history"),
    _q("Semantically appropriate", _T, 0, 2, "semantically appropriate the response is with regards to the dialog history"),
    _q("Understandable", _T, 0, 1, "understandable the response is with regards to the dialog history"),
    _q("Fluent", _T, 0, 2, "fluent the response is with regards to the dialog history"),
    _q("Overall", _T, 0, 4, "good the response is overall with regards to the dialog history"),
)

FED_DIAL = (
    _q("Coherent", _D, 0, 2, "coherent the system is throughout the dialog"),
    _q("Error recovery", _D, 0, 2, "well the system recovers from errors in the dialog"),
    _q("Consistent", _D, 0, 1, "consistent the system is throughout the dialog"),
    _q("Diverse", _D, 0, 2, "diverse the system's responses are throughout the dialog"),
    _q("Depth", _D, 0, 2, "deeply the system discusses topics in the dialog"),
    _q("Likeable", _D, 0, 2, "likeable the system is in the dialog"),
    _q("Understanding", _D, 0, 2, "well the system understands the user in the dialog"),
    _q("Flexible", _D, 0, 2, "flexible and adaptable to the user the system is in the dialog"),
    _q("Informative", _D, 0, 2, "informative the system is in the dialog"),
    _q("Inquisitive", _D, 0, 2, "inquisitive the system is in the dialog"),
    _q("Overall", _D, 0, 4, "good the system is overall in the dialog"),
)

USR = (
    _q("Understandable", _T, 0, 1, "understandable the response is"),
    _q("Natural", _T, 1, 3, "natural the response is"),
    _q("Maintains Context", _T, 1, 3, "well the response maintains the context of the dialog"),
    _q("Engaging", _T, 1, 3, "engaging the response is"),
    _q("Uses Knowledge", _T, 0, 1, "well the response uses the background knowledge"),
    _q("Overall", _T, 1, 5, "good the response is overall"),
)

ZHAO = tuple(
    _q(n, _T, 1, 5, d)
    for n, d in (
        ("content", "good the content of the response is"),
        ("grammar", "grammatical the response is"),
        ("relevance", "relevant the response is to the dialog history"),
        ("appropriateness", "appropriate the response is to the dialog history"),
    )
)
GUPTA = (_q("overall", _T, 1, 5, "good the response is overall"),)
GRADE = (_q("relevance", _T, 1, 5, "relevant the response is to the dialog history"),)

#: Generic overall quality used for users' own data when they do not name a scale.
GENERIC_OVERALL = _q("overall", _T, 1, 5, "good the response is overall")


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
        # Original releases (same annotations, fields the DSTC10 copies lack).
        DatasetInfo("fed", "FED", "fed/fed_data.json", "fed", "turn", "Overall", FED_TURN + FED_DIAL),
        DatasetInfo("usr-topical", "TU-orig", "usr/tc_usr_data.json", "usr", "turn", "Overall", USR),
        DatasetInfo("usr-persona", "PU-orig", "usr/pc_usr_data.json", "usr", "turn", "Overall", USR),
        DatasetInfo("gupta-csv", "DGU-orig", "dailydialog_gupta/mturk_rating_processed_output.csv", "gupta", "turn", "overall", GUPTA),
    )
}

#: The eight DSTC10 Track 5 sets of the paper's multi-domain setting, in the paper's column order.
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


def find_quality(name: str, level: Level | None = None) -> Quality | None:
    """Best-known quality with this name (FED first, then the others), optionally at a level."""
    for group in (FED_TURN, FED_DIAL, USR, ZHAO, GUPTA, GRADE):
        for q in group:
            if q.name.lower() == name.lower() and (level is None or q.level == level):
                return q
    return None
