"""Every file generated from the committed run summaries: the results page (:mod:`.results_page`), the
quality lines ``judge models`` prints (:mod:`.model_figures`), the README's figures (:mod:`.readme_figures`,
a block inside README.md) and the coverage table of estimates from labels (:mod:`.coverage_table`, on the
results page and inside docs/trust.md). ``judge results render`` writes them and
``judge results check`` (and the tests) compare them with what is on disk, so none is ever typed.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .coverage_table import TRUST, coverage_markdown, coverage_section, load_coverage, splice_coverage
from .figures import SUMMARY_DIR
from .model_figures import QUALITY, render_quality
from .readme_figures import README, render_block, splice
from .results_page import PAGE, load_history, load_summaries, render_page


def rendered(summaries: Sequence[Mapping[str, Any]], history: Mapping[str, Any] | None = None,
             root: str | Path | None = None) -> dict[Path, str]:
    """Every generated file (path relative to the repository root -> its text); ``history``: which test items
    earlier splits put in dev halves and which the last split change moved (``results_page.HISTORY``). With
    ``root`` holding a README.md, the README too, its figures block replaced (the rest of it as it is); with
    ``root`` holding the coverage summary, its table on the results page and inside docs/trust.md."""
    coverage = load_coverage(root) if root is not None else None
    out = {PAGE: render_page(summaries, history, coverage_section(coverage) if coverage else None), QUALITY: render_quality(summaries, history)}
    readme = Path(root) / README if root is not None else None
    if readme is not None and readme.is_file():
        out[README] = splice(readme.read_text(encoding="utf-8"), render_block(summaries, history))
    trust = Path(root) / TRUST if root is not None else None
    if coverage is not None and trust is not None and trust.is_file():
        out[TRUST] = splice_coverage(trust.read_text(encoding="utf-8"), coverage_markdown(coverage))
    return out


def differs(root: str | Path = ".") -> list[str]:
    """The unified diff between the generated files on disk and what ``rendered`` writes from the summaries
    under ``root`` (empty when they agree)."""
    root = Path(root)
    out: list[str] = []
    for path, want in rendered(load_summaries(root / SUMMARY_DIR), load_history(root), root).items():
        have = (root / path).read_text(encoding="utf-8") if (root / path).is_file() else ""
        out += difflib.unified_diff(have.splitlines(keepends=True), want.splitlines(keepends=True),
                                    fromfile=f"{path} (on disk)", tofile=f"{path} (rendered)")
    return out
