"""The paper's published numbers (paper_values.toml), looked up by row label, set and quality.

Facts about the registered sets, kept beside them: method tables name a row (``paper = ...``) that
:mod:`judge.engine.tables` checks when it reads them, and the reports print the values beside ours."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from ..core.errors import UnknownNameError
from .benchmarks import dataset_info


@dataclass(frozen=True)
class PaperValue:
    value: float
    significant: bool
    table: str

    def text(self) -> str:
        return f"{self.value:.3f}" + ("" if self.significant else "*")


def _parse(s: str) -> tuple[float, bool]:
    s = s.strip()
    return float(s.rstrip("*")), not s.endswith("*")


@cache
def paper_tables() -> dict:
    return tomllib.loads(resources.files(__package__).joinpath("paper_values.toml").read_text(encoding="utf-8"))


def paper_labels() -> list[str]:
    """Every row label a method may point at with ``paper = ...``."""
    out: list[str] = []
    for t in paper_tables().values():
        labels = t.get("models") or list(t["values"])
        out.extend(x for x in labels if x not in out)
    return out


def paper_value(label: str, dataset: str, quality: str) -> PaperValue | None:
    """The paper's Spearman for row ``label`` on (set, quality), or None where the paper has none."""
    try:
        info = dataset_info(dataset)
    except UnknownNameError:  # a set given by path: the paper has no value for it
        return None
    for name, t in paper_tables().items():
        vals = t["values"]
        if "models" in t:  # tables 3/4: rows are qualities, columns models
            if t["dataset"] != info.name or label not in t["models"]:
                continue
            for q, row in vals.items():
                if q.lower() == quality.lower():
                    v, sig = _parse(row[t["models"].index(label)])
                    return PaperValue(v, sig, name)
        elif "sets" in t:  # tables 5/6: rows are models, columns sets (overall quality only)
            if label in vals and info.abbrev in t["sets"] and quality.lower() == info.overall.lower():
                v, sig = _parse(vals[label][t["sets"].index(info.abbrev)])
                return PaperValue(v, sig, name)
        elif label in vals and info.name in vals[label] and quality.lower() == info.overall.lower():
            v, sig = _parse(vals[label][info.name])
            return PaperValue(v, sig, name)
    return None
