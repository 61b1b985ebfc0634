"""The quality line ``judge models`` prints for each packaged model, generated from the committed run
summaries like the results page (``judge results render``), never typed.

A packaged model's quality is what the published runs measured with it: per kind, the DSTC10 average of
every method that runs on that model alone, with its CI, from the test-half runs in
``benchmarks/results/``; and for the heads on a model, the head method's test-half average beside its own
prompt's on the same items, with the paired difference (a shipped head's leave-one-set-out figure is not
a test-half figure). The lines live in ``judge/models/models_quality.json`` (package data, so an installed
``judge models`` shows them without the repository); ``judge results check`` and a test fail when the file
differs from what the summaries give. A run computed on earlier halves than today's is named as such.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..data.kinds import KINDS
from ..datasets.benchmarks import dataset_info
from ..models.packaged import PACKAGED
from .figures import ci_text, figure_text, num, p_display
from .results_page import earlier_halves

#: The generated file, relative to the repository root (read at run time as package data).
QUALITY = Path("judge") / "models" / "models_quality.json"
#: What a packaged model without a published run shows.
NOT_YET = "not measured on today's test halves yet (figures from before the leak-free split: docs/journal.md)"


def model_quality(summaries: Sequence[Mapping[str, Any]], models: Sequence[str],
                  history: Mapping[str, Any] | None = None) -> dict[str, str]:
    """One line per model in ``models``: its methods' test-half averages, by kind (``KINDS``), and the
    runs they come from (those on earlier halves than today's marked). A method scored by several runs
    shows the latest run's figure (by date, then name)."""
    stale = {s["name"] for s in summaries if earlier_halves(s, history)}
    return {m: _line(_entries(summaries, m), stale) for m in models}


def head_quality(summaries: Sequence[Mapping[str, Any]], models: Sequence[str],
                 history: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Per model with a head method in a test-half run: the head method's DSTC10 average beside its own prompt's
    on the same items (the run's paired comparison of the two), from the latest such run. A comparison of two
    heads (a new recipe against an earlier one) is the results page's, not this line's."""
    out: dict[str, str] = {}
    for s in _dstc10_tests(summaries):
        averages = {a["method"]: a for a in s["averages"]}
        for c in s.get("comparisons", []):
            head, prompt = s["methods"].get(c["a"], {}), s["methods"].get(c["b"], {})
            models_used = set(head.get("models", {}))
            if not _is_head(head) or _is_head(prompt) or "sets" not in c or len(models_used) != 1:
                continue  # a head against its prompt only: not two heads against each other
            (model,) = models_used
            a, b = averages.get(c["a"]), averages.get(c["b"])
            if model not in models or a is None or b is None:
                continue
            where = f"run {s['name']}" + (", on earlier halves than today's" if earlier_halves(s, history) else "")
            out[model] = (f"test halves ({where}; each set scored by a head of this recipe fitted on the other sets): "
                          f"{c['a']} {figure_text(a['spearman'], a['p'])} {ci_text(a)} against its prompt "
                          f"{c['b']} {figure_text(b['spearman'], b['p'])} {ci_text(b)} on the same {c['n']:,} items, "
                          f"paired difference {num(c['diff'])} {ci_text({'ci_low': c['low'], 'ci_high': c['high']})}, "
                          f"p {_p(p_display(c['p'], c.get('n_boot'), c.get('n_degenerate') or 0))} (docs/results.md)")
    return out


def _is_head(method: Mapping[str, Any]) -> bool:
    return bool(method.get("settings", {}).get("type") == "head")


def _entries(summaries: Sequence[Mapping[str, Any]], model: str) -> dict[str, tuple[Mapping[str, Any], str]]:
    """method -> (its average, the run it comes from), for the methods that run on ``model`` alone."""
    out: dict[str, tuple[Mapping[str, Any], str]] = {}
    for s in _dstc10_tests(summaries):
        for avg in s["averages"]:
            info = s["methods"].get(avg["method"], {})
            if set(info.get("models", {})) == {model} and avg.get("spearman") is not None:
                out.pop(avg["method"], None)  # the later run's figure, in its place in the order
                out[avg["method"]] = (avg, s["name"])
    return out


def _dstc10_tests(summaries: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The runs that scored the test halves of DSTC10 sets only, oldest first (by date, then name): the lines
    quote DSTC10 averages, and a run on other sets (Reliable-Eval, engagement) averages something else under
    the same method names."""
    return [s for s in sorted(summaries, key=lambda s: (s["run"]["date"], s["name"]))
            if s["run"].get("split") == "test" and all(dataset_info(d).dstc10 for d in s["run"]["datasets"])]


def _p(shown: str) -> str:
    return shown if shown.startswith("<") else f"= {shown}"


def _line(entries: Mapping[str, tuple[Mapping[str, Any], str]], stale: Collection[str] = ()) -> str:
    if not entries:
        return NOT_YET
    parts = []
    for kind in [*KINDS, *sorted({a["kind"] for a, _ in entries.values()} - set(KINDS))]:
        figures = [_figure(method, avg) for method, (avg, _) in entries.items() if avg["kind"] == kind]
        if figures:
            parts.append(f"{kind}: {', '.join(figures)}")
    runs = ", ".join(f"{run} (on earlier halves)" if run in stale else run
                     for run in dict.fromkeys(run for _, run in entries.values()))
    return (f"DSTC10 average Spearman on the test halves (conversation-bootstrap 95% CI; † not significant); "
            f"{'; '.join(parts)}; runs {runs} (docs/results.md)")


def _figure(method: str, avg: Mapping[str, Any]) -> str:
    sets = "" if avg.get("sets") == avg.get("of_sets") else f" ({avg.get('sets')} of {avg.get('of_sets')} sets)"
    return f"{figure_text(avg['spearman'], avg['p'])} {ci_text(avg)} {method}{sets}"


def render_quality(summaries: Sequence[Mapping[str, Any]], history: Mapping[str, Any] | None = None) -> str:
    """The text of ``judge/models/models_quality.json`` for every packaged model: its quality line, and its heads'
    test-half line where a run measured one."""
    data = {"quality": model_quality(summaries, list(PACKAGED), history),
            "heads": head_quality(summaries, list(PACKAGED), history)}
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def _read() -> dict[str, dict[str, str]]:
    from importlib import resources

    return dict(json.loads(resources.files("judge.models").joinpath(QUALITY.name).read_text(encoding="utf-8")))


def read_quality() -> dict[str, str]:
    """The generated quality lines, as installed with the package."""
    return dict(_read()["quality"])


def read_head_quality() -> dict[str, str]:
    """The generated test-half lines of the heads on each model, as installed with the package."""
    return dict(_read()["heads"])
