"""The coverage table of ``judge estimate``'s intervals, from the committed summary the coverage benchmark
writes (``benchmarks/estimate_coverage.py``): shown on the results page and inside docs/trust.md, both written
by ``judge results render`` and checked by ``judge results check``, so that no coverage figure is typed."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

#: The benchmark's summary, in a folder of its own (benchmarks/results/*.json are run summaries; this is not).
COVERAGE = Path("benchmarks") / "results" / "estimate" / "coverage.json"
#: The page that explains the table, and the markers around its copy there.
TRUST = Path("docs") / "trust.md"
MARKERS = ("<!-- coverage:start -->\n", "<!-- coverage:end -->")
#: Below this share of draws with an interval, a coverage is over too few intervals to read (marked ``*``).
READABLE = 0.05


def load_coverage(root: str | Path = ".") -> dict[str, Any] | None:
    """The committed coverage summary under ``root`` (None where there is none)."""
    path = Path(root) / COVERAGE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _cov(k: Mapping[str, Any] | None, key: str) -> str:
    """A coverage in %, marked † outside the 93-97% goal and * where too few draws gave an interval to read it."""
    value = None if k is None else k[key]
    if k is None or value is None:
        return "-"
    mark = "*" if k["with_ci"] < READABLE else "†" if not 0.93 <= value <= 0.97 else ""
    return f"{_pct(value)}{mark}"


def _pair(r: Mapping[str, Any], cell: Callable[[Mapping[str, Any] | None], str]) -> str:
    """A figure of the systems' means and of the differences, as ``means / differences``."""
    return f"{cell(r['means'])} / {cell(r['differences']) if r['differences'] else '-'}"


def coverage_markdown(summary: Mapping[str, Any]) -> str:
    """The coverage table of a summary: each cell ``systems' means / differences``."""
    out = ["| set | judge | n | systems | with CI % | coverage PPI++ % | coverage labels only % | width PPI/labels "
           "| label gain | exact order PPI / labels % | pairs in order PPI / labels % |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in summary["results"]:
        cells = [_pair(r, lambda k: _pct(k["with_ci"]) if k else "-"),
                 _pair(r, lambda k: _cov(k, "coverage_ppi")), _pair(r, lambda k: _cov(k, "coverage_labels")),
                 _pair(r, lambda k: _num(k["width_ratio"]) if k else "-"),
                 _pair(r, lambda k: _num(k["label_gain"]) if k else "-"),
                 f"{_pct(r['ranking_exact_ppi'])} / {_pct(r['ranking_exact_labels'])}",
                 f"{_pct(r['ranking_pairs_ppi'])} / {_pct(r['ranking_pairs_labels'])}"]
        out.append(f"| {r['set']} | {r['judge']} | {r['n']} | {r['systems']} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def splice_coverage(page: str, table: str) -> str:
    """``page`` with ``table`` between the coverage markers."""
    start, end = page.index(MARKERS[0]) + len(MARKERS[0]), page.index(MARKERS[1])
    return page[:start] + table + "\n" + page[end:]


def coverage_section(summary: Mapping[str, Any]) -> str:
    """The results page's section: the table, what it is, and where it is explained."""
    return ("\n## Estimates from a few labels: do their intervals hold?\n\n"
            f"`judge estimate`'s PPI++ intervals against labels only, over {summary['draws']:,} seeded draws of n "
            "labelled rows per set and judge (target: the mean over the scored rows; nominal "
            f"{round(100 * summary['nominal'])}%; each cell `systems' means / differences`; † coverage outside "
            "93-97%, * read from intervals in under 5% of the draws). What each column means, and why the "
            "model-free judges gain nothing here: [trust.md](trust.md). Measured by `python "
            "benchmarks/estimate_coverage.py --make-rows --data-dir ../shared/data` (rows of the cheap judges, "
            "then the draws).\n\n" + coverage_markdown(summary) + "\n")
