"""The four kinds of method, in the order reports list them, and what each is called where: the one list the
engine (which decides a method's kind, :mod:`judge.engine.kinds`), the leaderboards and the results page read.

Kinds never share a table: a reference-based, uses-future or supervised figure answers another question than
a reference-free one (docs/harness.md, "Method kinds").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Kind:
    """One kind of method and its words."""

    name: str
    #: The title of its section on the results page (docs/results.md).
    page_title: str
    #: The title of its section in a run's leaderboard.
    section: str
    #: What ``judge bench`` prints after its name (empty: the name says it).
    note: str = ""


#: Every kind, the strongest caveat last: a method that is several is reported under the last that applies.
KIND_LIST = (
    Kind("reference-free", "Reference-free: the judge reads the conversation and the reply only",
         "Reference-free methods"),
    Kind("reference-based", "Reference-based: the method reads a reference reply",
         "Reference-based methods (read the reference response)"),
    Kind("uses-future", "Uses-future: the method reads the user's turn after the rated reply",
         "Uses-future methods (read the user's turn after the rated response)",
         "reads the user's turn after the rated response"),
    Kind("supervised", "Supervised on the scored set: weights learned on the set's own ratings (out of fold)",
         "Supervised on the scored set (ensemble weights learned on its ratings, cv)",
         "weights learned on the scored set's own ratings, by cross-validation"),
)
#: The kinds' names, in the order reports list their tables.
KINDS = tuple(k.name for k in KIND_LIST)
BY_NAME = {k.name: k for k in KIND_LIST}


def recorded_kind(info: Mapping[str, Any], default: str = "unknown") -> str:
    """A method's kind as a results file recorded it (``MethodKinds.to_dict`` beside its settings), read the
    same way by every report. Files written while there were two kinds hold ``reference-free`` or
    ``reference-based`` with ``uses_future``, and their cross-validated ensembles only their settings
    (``fit = "cv"``): they are read as the four kinds today's runs record. ``default``: a file recording no kind."""
    kind = str(info.get("kind", default))
    if kind in KINDS[2:]:
        return kind
    if info.get("supervised") or info.get("fit") == "cv":  # the second: files before "supervised" was recorded
        return "supervised"
    if kind in KINDS[:2] and info.get("uses_future"):
        return "uses-future"
    return kind
