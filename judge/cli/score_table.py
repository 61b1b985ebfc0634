"""``judge score``'s output for a person at a terminal: a table of the rows and a summary.

The rows are the same as the JSONL rows (:mod:`judge.records.rows`); the table shows the id, the score,
the most likely label with its probability and, when the data has one, the human rating. The summary
gives n, failures and the mean score, and where the items carry human ratings Spearman's correlation
with them, its 95% bootstrap CI resampling conversations and the bootstrap p of the same resamples,
which decides significance (the statistics ``judge bench`` and ``judge run`` print and mark).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..harness.summary import cell_stats
from ..records.rows import Row
from ..report.table import p_text
from ..stats.floor import MIN_CONVERSATIONS, too_few_text

#: Widest id shown in full; longer ids are cut with an ellipsis (the JSONL output keeps them whole).
MAX_ID = 32


class ScoreTable:
    """Formats rows one at a time (so a long run shows them as they come) and the closing summary."""

    def __init__(self, ids: Sequence[str], with_human: bool, write: Callable[[str], None]) -> None:
        self.id_width = max([2, *(min(len(i), MAX_ID) for i in ids)])
        self.with_human = with_human
        self.write = write
        #: The rows as the summary reads them: without what it does not read (a file of millions streams).
        self.rows: list[Row] = []

    def header(self) -> None:
        cols = [f"{'id':<{self.id_width}}", f"{'score':>7}", f"{'label (p)':<16}"]
        if self.with_human:
            cols.append(f"{'human':>6}")
        self.write("  ".join(cols).rstrip())

    def add(self, row: Row) -> None:
        self.rows.append(replace(row, label_probs=None, examples=(), flags=(), meta=None, reasoned=None))
        rid = row.id if len(row.id) <= self.id_width else row.id[: self.id_width - 1] + "…"
        if row.error:
            cols = [f"{rid:<{self.id_width}}", f"{'failed':>7}", str(row.error)]
            self.write("  ".join(cols))
            return
        cols = [f"{rid:<{self.id_width}}", f"{row.score:>7.3f}", f"{top_label(row.label_probs):<16}"]
        if self.with_human:
            cols.append(f"{row.human:>6g}" if row.human is not None else f"{'-':>6}")
        self.write("  ".join(cols).rstrip())

    def summary(self, n_boot: int = 1000, seed: int = 0) -> None:
        """n, failures and mean score; Spearman with the humans and its CI when the rows carry ratings."""
        rows = self.rows
        scores = [r.score for r in rows if r.score is not None]
        failed = sum(1 for r in rows if r.error)
        mean = f"{sum(scores) / len(scores):.3f}" if scores else "-"
        quality = next((r.quality for r in rows if r.quality), None)
        self.write("")
        self.write(f"items     {len(rows)} scored, {failed} failed; mean score {mean}"
                   + (f" (quality {quality})" if quality else ""))
        rated = [r for r in rows if r.human is not None]
        if not self.with_human or not rated:
            return

        cell = cell_stats(rows, n_boot, seed)
        sp, ci = cell.spearman, cell.ci
        if sp.value is None:
            self.write(f"spearman  undefined on {sp.n} rated items (needs 3 or more, with varying scores and "
                       "ratings)")
            return
        unit = "conversations" if ci.unit == "group" else "items"
        few = ci.few
        if few is not None:  # below the floor: the value alone, no interval, no p, nothing called significant
            self.write(f"spearman  {sp.value:.3f} with the human ratings  n={sp.n}  {too_few_text(few)}: no "
                       f"interval and no p below {MIN_CONVERSATIONS} (not significant)")
            return
        # The significance is the conversation bootstrap's, as in judge run and judge bench: turns cut from
        # one conversation are not independent, so scipy's item-level p (shown for reference) is too small.
        p = ci.p
        line = (f"spearman  {sp.value:.3f} with the human ratings  p={fmt_p(sp.p)} (item-level), bootstrap p "
                f"{p_text(p, ci.n_boot, ci.n_degenerate)}  n={sp.n}  95% CI "
                f"[{fmt(ci.low)}, {fmt(ci.high)}] ({ci.n_boot} bootstrap resamples of {ci.n_units} {unit})")
        if p is None or p >= 0.05:
            line += " (not significant, bootstrap p >= 0.05)"
        self.write(line)


def top_label(probs: dict[str, float | None] | None) -> str:
    """The most probable label and its probability, e.g. ``Yes (0.62)``; ``-`` without a distribution."""
    if not probs:
        return "-"
    label, p = max(probs.items(), key=lambda kv: (kv[1] if kv[1] is not None else -1.0))
    return f"{label.strip() or repr(label)} ({p:.2f})" if p is not None else label


def fmt(x: float | None) -> str:
    """A correlation or bound as the terminal reports print it (``nan`` where there is none)."""
    return "nan" if x is None or not math.isfinite(x) else f"{x:.3f}"


def fmt_p(p: float | None) -> str:
    return "nan" if p is None else f"{p:.3g}"
