"""The quality line ``judge models`` prints for each packaged model, generated from the committed run
summaries like the results page (``judge results render``), never typed.

A packaged model's quality is what the published runs measured with it: per kind, the DSTC10 average of
every method that runs on that model alone, with its CI, from the test-half runs in
``benchmarks/results/``. The lines live in ``judge/models_quality.json`` (package data, so an installed
``judge models`` shows them without the repository); ``judge results check`` and a test fail when the file
differs from what the summaries give.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .results_page import KIND_ORDER, ci_text, figure_text

#: The generated file, relative to the repository root (read at run time as package data).
QUALITY = Path("judge") / "models_quality.json"
#: What a packaged model without a published run shows.
NOT_YET = "not measured on today's test halves yet (figures from before the leak-free split: docs/journal.md)"


def model_quality(summaries: Sequence[Mapping[str, Any]], models: Sequence[str]) -> dict[str, str]:
    """One line per model in ``models``: its methods' test-half averages, by kind (``KIND_ORDER``), and the
    runs they come from. A method scored by several runs shows the latest run's figure (by date, then
    name)."""
    return {m: _line(_entries(summaries, m)) for m in models}


def _entries(summaries: Sequence[Mapping[str, Any]], model: str) -> dict[str, tuple[Mapping[str, Any], str]]:
    """method -> (its average, the run it comes from), for the methods that run on ``model`` alone."""
    out: dict[str, tuple[Mapping[str, Any], str]] = {}
    for s in sorted(summaries, key=lambda s: (s["run"]["date"], s["name"])):
        if s["run"].get("split") != "test":
            continue
        for avg in s["averages"]:
            info = s["methods"].get(avg["method"], {})
            if set(info.get("models", {})) == {model} and avg.get("spearman") is not None:
                out.pop(avg["method"], None)  # the later run's figure, in its place in the order
                out[avg["method"]] = (avg, s["name"])
    return out


def _line(entries: Mapping[str, tuple[Mapping[str, Any], str]]) -> str:
    if not entries:
        return NOT_YET
    parts = []
    for kind in [*KIND_ORDER, *sorted({a["kind"] for a, _ in entries.values()} - set(KIND_ORDER))]:
        figures = [_figure(method, avg) for method, (avg, _) in entries.items() if avg["kind"] == kind]
        if figures:
            parts.append(f"{kind}: {', '.join(figures)}")
    runs = ", ".join(dict.fromkeys(run for _, run in entries.values()))
    return (f"DSTC10 average Spearman on the test halves (conversation-bootstrap 95% CI; † not significant); "
            f"{'; '.join(parts)}; runs {runs} (docs/results.md)")


def _figure(method: str, avg: Mapping[str, Any]) -> str:
    sets = "" if avg.get("sets") == avg.get("of_sets") else f" ({avg.get('sets')} of {avg.get('of_sets')} sets)"
    return f"{figure_text(avg['spearman'], avg['p'])} {ci_text(avg)} {method}{sets}"


def render_quality(summaries: Sequence[Mapping[str, Any]]) -> str:
    """The text of ``judge/models_quality.json`` for every packaged model."""
    from ..models import PACKAGED

    return json.dumps(model_quality(summaries, list(PACKAGED)), indent=1, ensure_ascii=False) + "\n"


def read_quality() -> dict[str, str]:
    """The generated lines, as installed with the package."""
    from importlib import resources

    text = resources.files("judge").joinpath(QUALITY.name).read_text(encoding="utf-8")
    return dict(json.loads(text))
