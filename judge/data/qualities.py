"""Known qualities (name, level, scale, wording for prompts) and reading a quality's scale for data.

The known ones are the benchmark sets' (their records, ``judge/datasets/benchmarks.toml``, hold them);
the sets themselves are registered in :mod:`judge.datasets.benchmarks`.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import InputError, UnknownNameError
from .items import Item, Level

#: A declared rating scale: (min, max).
Scale = tuple[float, float]


@dataclass(frozen=True)
class Quality:
    """A rated aspect of a response or dialog, with the scale its human ratings use.

    A quality of users' data whose scale nobody declared has ``min``/``max`` NaN
    (:func:`quality_for` with ``strict=False``): it can still name the human ratings to report,
    but anything that needs the scale (range checks, example labels, yes/no thresholds) calls
    :meth:`scale`, which refuses it with a message saying how to declare one.
    """

    name: str
    level: Level
    min: float
    max: float
    #: Completes "rate how ... " in the instruction of a rating prompt.
    description: str = ""
    #: A negative quality (Reliable-Eval's ``robotic``, ``repetitive``): higher ratings mean a worse
    #: system, so a good judge's scores correlate negatively with them. Reports mark such a quality
    #: "lower is better" and orient it before averaging (:func:`oriented`).
    negative: bool = False

    @property
    def key(self) -> str:
        return self.name.lower()

    @property
    def has_scale(self) -> bool:
        return math.isfinite(self.min) and math.isfinite(self.max)

    def scale(self, purpose: str = "this step") -> Scale:
        """(min, max); InputError when the scale is unknown, because guessing one mislabels data."""
        if not self.has_scale:
            raise InputError(f"quality '{self.name}' has no known scale, and {purpose} needs one: declare it with "
                             f"--scale {self.name}=MIN:MAX, or with \"scales\": {{\"{self.name}\": [MIN, MAX]}} "
                             "in the JSONL lines", field="quality")
        return self.min, self.max


#: The file holding the benchmark sets' records, their quality groups among them (read here because every
#: quality lookup needs the groups, and judge.datasets, which reads the rest, builds on this module).
RECORDS = Path(__file__).resolve().parents[1] / "datasets" / "benchmarks.toml"


def _read_groups(path: Path) -> dict[str, tuple[Quality, ...]]:
    """The ``[qualities]`` groups of the records file: the rating scales the benchmark sets' raters used."""
    raw = tomllib.loads(path.read_text(encoding="utf-8"))["qualities"]
    return {name: tuple(Quality(q["name"], q["level"], float(q["min"]), float(q["max"]), q.get("description", ""),
                                bool(q.get("negative", False)))
                        for q in group) for name, group in raw.items()}


#: The benchmark sets' qualities by group, in the records' order (FED first: a lookup by name prefers them).
QUALITY_GROUPS = _read_groups(RECORDS)

#: How reports mark a negative quality beside its correlation.
LOWER_IS_BETTER = "lower is better"


def oriented(value: float, negative: bool) -> float:
    """A correlation with a quality, turned so that higher means better agreement: a negative quality's
    sign is flipped. Averages over qualities use it (a good judge's -.4 on ``robotic`` and .4 on ``fun``
    agree equally well); the per-quality figures are reported as measured, marked :data:`LOWER_IS_BETTER`."""
    return -value if negative else value


def find_quality(name: str, level: Level | None = None) -> Quality | None:
    """Best-known quality with this name (FED first, then the others), optionally at a level."""
    for group in QUALITY_GROUPS.values():
        for q in group:
            if q.name.lower() == name.lower() and (level is None or q.level == level):
                return q
    return None


def declared_scales(source: Mapping[str, Scale] | Iterable[Item]) -> dict[str, Scale]:
    """Scales keyed by lower-cased quality name, from a mapping or from items' ``scales``."""
    if isinstance(source, Mapping):
        return {str(k).lower(): (float(v[0]), float(v[1])) for k, v in source.items()}
    out: dict[str, Scale] = {}
    for item in source:
        for k, v in item.scales.items():
            out.setdefault(k.lower(), v)
    return out


def _generic_description(name: str, level: Level | None) -> str:
    who = "the system is in the dialog" if level == "dialog" else "the response is"
    return f"good {who} overall" if name.lower() == "overall" else f"good {who} in terms of {name}"


def quality_for(name: str, source: Mapping[str, Scale] | Sequence[Item] = (), level: Level | None = None, *,
                known: Sequence[Quality] = (), strict: bool = True) -> Quality:
    """The Quality (with its scale) that ``name`` means for this data.

    Looked up in this order: a declared scale (``source``: a mapping quality -> (min, max), or
    items whose ``scales`` came from their file), then ``known`` (the registered set's qualities).
    Nothing else gives a scale: a user's ``overall`` is not assumed to be 1-5 and a user's
    ``engaging`` does not take FED's 0-2 (it only borrows FED's wording for prompts). Without a scale, ``strict`` raises InputError saying how to declare one;
    ``strict=False`` returns a scale-less Quality (NaN bounds) for callers that only read human
    means, and anything that later needs the scale refuses it (:meth:`Quality.scale`).
    A name that is neither declared, known, a registered quality's nor annotated on any item is an
    UnknownNameError listing the annotated ones.
    """
    declared = declared_scales(source)
    items = [] if isinstance(source, Mapping) else list(source)
    base = next((q for q in known if q.name.lower() == name.lower()), None)
    if base is not None and name.lower() not in declared:
        return base
    # A registered quality of the same name lends its *wording* (prompts stay the same), never its scale.
    wording = base or find_quality(name, level)
    q_level = base.level if base else (level or "turn")
    desc = wording.description if wording else _generic_description(name, q_level)
    if name.lower() in declared:
        lo, hi = declared[name.lower()]
        return Quality(base.name if base else annotated_name(name, items), q_level, lo, hi, desc,
                       base.negative if base else False)
    annotated = sorted({k for it in items for k in it.annotations})
    if items and wording is None and name.lower() not in (k.lower() for k in annotated):
        raise UnknownNameError("quality", name, annotated or [q.name for q in known])
    unscaled = Quality(annotated_name(name, items), q_level, math.nan, math.nan, desc)
    if strict:
        unscaled.scale("it")
    return unscaled


def annotated_name(name: str, items: Sequence[Item]) -> str:
    """The spelling the data uses for ``name`` (keys match case-insensitively)."""
    for it in items:
        for k in it.annotations:
            if k.lower() == name.lower():
                return k
    return name


_SCALE_TEXT = re.compile(r"^\s*(?P<name>[^=]+?)\s*=\s*(?P<lo>[^:]+?)\s*:\s*(?P<hi>[^:]+?)\s*$")


def parse_scale(text: str, flag: str = "--scale") -> tuple[str, Scale]:
    """``"overall=0:2"`` -> ``("overall", (0.0, 2.0))``; InputError naming ``flag`` on bad text."""
    m = _SCALE_TEXT.match(text)
    if not m:
        raise InputError(f"expected QUALITY=MIN:MAX (e.g. overall=1:5), got {text!r}", field=flag)
    try:
        lo, hi = float(m["lo"]), float(m["hi"])
    except ValueError:
        raise InputError(f"MIN and MAX must be numbers, got {text!r}", field=flag) from None
    return m["name"], check_scale_bounds(lo, hi, field=flag)


def check_scale_bounds(lo: float, hi: float, *, file: str | None = None, record: str | int | None = None,
                       field: str | None = None) -> Scale:
    """Finite bounds with min < max, else InputError at the given place."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise InputError(f"scale bounds must be finite numbers, got {lo:g}:{hi:g}", file=file, record=record,
                         field=field)
    if not lo < hi:
        raise InputError(f"scale needs MIN < MAX, got {lo:g}:{hi:g}", file=file, record=record, field=field)
    return float(lo), float(hi)
