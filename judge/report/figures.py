"""How every generated page prints a figure: a correlation, its interval, its p and the significance mark.

The results page, the README's figures, the per-model figures and the measurement tables all print figures
the same way; they share these helpers, and the place the committed summaries live, from here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..stats.correlation import p_at_floor, p_floor
from ..stats.floor import too_few_text

#: Where the committed run summaries live, relative to the repository root.
SUMMARY_DIR = Path("benchmarks") / "results"
#: Significance level of the pages' marks.
ALPHA = 0.05


def num(x: float | None, digits: int = 3) -> str:
    """A correlation as the page prints it: ``.355``, ``-.041``, ``–`` when undefined."""
    if x is None or not math.isfinite(x):
        return "–"
    text = f"{x:.{digits}f}"
    return text.replace("0.", ".", 1) if text.startswith(("0.", "-0.")) else text


def figure_text(value: float | None, p: float | None) -> str:
    significant = p is not None and math.isfinite(p) and p < ALPHA
    return num(value) + ("" if significant or value is None else " †")


def ci_text(x: Mapping[str, Any]) -> str:
    """``[low, high]``; ``too few conversations (k)`` for a figure whose bootstrap stopped at the floor."""
    if x.get("too_few"):
        return too_few_text(x.get("strata") or x.get("n_conversations"))
    return f"[{num(x.get('ci_low'), 2)}, {num(x.get('ci_high'), 2)}]"


def p_display(p: float | None, n_boot: int | None, n_degenerate: int = 0) -> str:
    """A bootstrap p: ``< 1/n_boot`` at its floor (every resample on one side of zero), else 2
    significant digits without the leading zero."""
    if p is None or not math.isfinite(p):
        return "–"
    if n_boot and p_at_floor(p, n_boot, n_degenerate):
        return "< " + num(p_floor(n_boot, n_degenerate))
    return num(float(f"{p:.2g}"), 3 if p < 0.1 else 2)
