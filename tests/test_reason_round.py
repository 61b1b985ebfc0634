"""Round 10 (what a rationale first buys, docs/journal.md) is published from its committed summary: the table
of the results page, of the journal and of benchmarks/README.md is what ``judge.report.reason_table`` renders
from ``benchmarks/results/reason-q15-dev.json``, every figure quoted beside it is in that summary, and the
summary holds the candidate the measurement's script derives as the run's own are held. No model is run."""

from __future__ import annotations

import json
import re
from pathlib import Path

from judge.report import results_page as page
from judge.report.reason_table import measure_table

ROOT = Path(__file__).resolve().parents[1]
NAME = "reason-q15-dev"
SAMPLED = "q15-criteria-reason128-sampled5"
#: A figure with its CI as the docs print one (``.290 [.09, .46]``, ``−.225 [−.41, −.01]``, a † between).
FIGURE = re.compile(r"([+\-−]?\.\d{3})(?: †)? \[([+\-−]?\.\d\d), ([+\-−]?\.\d\d)\]")


def _summary() -> dict:
    return json.loads((ROOT / page.SUMMARY_DIR / f"{NAME}.json").read_text(encoding="utf-8"))


def _section(path: Path, start: str) -> str:
    """The text of a document's section from its heading ``start`` to the next heading of that level."""
    text = path.read_text(encoding="utf-8")
    level = start.split(" ", 1)[0]
    body = text.split(start, 1)[1]
    return start + body.split(f"\n{level} ", 1)[0]


SECTIONS = ((ROOT / "docs" / "journal.md", "## Round 10: what thinking buys (dev half)"),
            (ROOT / "benchmarks" / "README.md", "## reason_measure: what a rationale first buys"),
            (ROOT / "docs" / "results.md", "## A rationale before the answer"))


def test_round_10_tables_are_the_committed_summarys():
    """The journal, benchmarks/README.md and the results page show the table rendered from the summary: a
    figure typed into one of them, or a summary changed without them, fails here."""
    table = measure_table(_summary())
    for path, heading in SECTIONS:
        assert table in _section(path, heading), f"{path.name}: Round 10's table differs from the summary's"


def test_round_10_figures_quoted_beside_the_table_are_in_the_summary():
    """Every Spearman or difference quoted with its CI in those sections is a figure of the summary."""
    s = _summary()
    known = set()
    for x in [*s["cells"], *s["averages"]]:
        known.add((page.num(x["spearman"]), page.num(x["ci_low"], 2), page.num(x["ci_high"], 2)))
    for c in s["comparisons"]:
        known.add((page.num(c["diff"]), page.num(c["low"], 2), page.num(c["high"], 2)))
    quoted = 0
    for path, heading in SECTIONS:
        text = " ".join(_section(path, heading).split())
        for m in FIGURE.finditer(text):
            quoted += 1
            figure = tuple(g.replace("−", "-").lstrip("+") for g in m.groups())
            assert figure in known, f"{path.name}: {m.group(0)} is not in {NAME}.json"
    assert quoted >= 3 * 9  # per table: 6 cells, 2 averages and the paired difference


def test_the_summary_holds_the_derived_candidate_as_the_runs_own():
    """The sampled candidate has a cell per set, an average and its paired comparisons like the run's two, the
    measure block a row per candidate, and the regenerating commands name the config and the script."""
    s = _summary()
    methods = ["q15-criteria", "q15-criteria-reason128", SAMPLED]
    assert list(s["methods"]) == methods and list(s["measure"]["candidates"]) == methods
    assert s["methods"][SAMPLED]["settings"]["sampled_answers"] == {"from": "q15-criteria-reason128", "answers": 5,
                                                                    "seed": 0}
    assert all(e["kind"] == "reference-free" for e in s["methods"].values())
    for m in methods:
        cells = [c for c in s["cells"] if c["method"] == m]
        assert [c["abbrev"] for c in cells] == s["run"]["datasets"] == ["DZ", "TU", "FT"]
        assert all(c["split"] == "dev" and c["n"] == s["measure"]["candidates"][m]["items"] // 3 for c in cells)
        constant = s["measure"]["candidates"][m].get("constant", {})
        assert all((c["spearman"] is None) == (c["abbrev"] in constant) for c in cells)
    against = {(c["a"], c.get("abbrev") or c["sets"]) for c in s["comparisons"]}
    assert {(a, w) for a in methods[1:] for w in ("DZ", "TU", "FT", 3)} <= against
    assert s["run"]["command"].startswith("judge run benchmarks/configs/reason_q15_dev.toml ")
    assert s["measure"]["command"] == f"python benchmarks/reason_measure.py results/{NAME} --collect {NAME}"
