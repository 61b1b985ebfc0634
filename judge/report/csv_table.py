"""The results as a long CSV (one row per method, set and quality), for spreadsheets.

Rows come reference-free methods first (then reference-based, uses-future, supervised on the scored
set), as the leaderboards list them; the ``kind`` column says which is which (``uses_future``: the
method reads the next user turn, whatever its kind). ``p`` is scipy's item-level p-value; the
significance (``significant``, ``p_bootstrap``) is the conversation bootstrap's, the CI's own unit,
and ``p_bootstrap_text`` prints a p at its floor as ``< 1/n_boot``. Below the floor on conversations
(:mod:`judge.stats.floor`) every p and CI column is empty, ``p_bootstrap_text`` says ``too few
conversations (k)`` and ``significant`` is false. The ``*_without_copies`` columns
repeat a reference-based cell without the items whose response is (nearly) a reference.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from ..data.kinds import recorded_kind
from ..datasets.paper import paper_value
from ..records.summary import Result, Summary
from ..stats.floor import too_few_text
from .table import KIND_SECTIONS, p_text

FIELDS = ["method", "kind", "uses_future", "dataset", "quality", "n", "n_conversations", "spearman", "sd_over_seeds",
          "p", "ci_low", "ci_high", "p_bootstrap", "p_bootstrap_text", "significant", "pearson", "pearson_p",
          "kendall", "kendall_p", "system_spearman", "n_failed", "paper_label", "paper",
          "spearman_without_copies", "n_without_copies", "ci_low_without_copies", "ci_high_without_copies"]


def render_csv(summary: Summary) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, FIELDS, lineterminator="\n")
    w.writeheader()
    order = {kind: i for i, (kind, _title) in enumerate(KIND_SECTIONS)}
    methods = summary.methods

    def rank(r: Result) -> tuple[int, bool]:
        spec = methods[r.method]
        return order.get(recorded_kind(spec), len(order)), bool(spec.get("uses_future"))

    for r in sorted(summary.results, key=rank):
        spec = methods[r.method]
        label = spec.get("paper")
        pv = paper_value(label, r.dataset, r.quality) if label else None
        ci, wc = r.ci, r.without_copies
        wci = wc.ci if wc is not None and wc.ci.few is None else None
        w.writerow({
            "method": r.method, "kind": recorded_kind(spec), "uses_future": bool(spec.get("uses_future")),
            "dataset": r.dataset, "quality": r.quality, "n": r.n, "n_conversations": ci.conversations,
            "spearman": r.spearman, "sd_over_seeds": r.sd, "p": r.p, "ci_low": ci.low, "ci_high": ci.high,
            "p_bootstrap": ci.p, "p_bootstrap_text": p_text(ci.p, ci.n_boot, ci.n_degenerate),
            "significant": ci.p is not None and ci.p < 0.05,
            "pearson": r.pearson.value, "pearson_p": r.pearson.p, "kendall": r.kendall.value, "kendall_p": r.kendall.p,
            "system_spearman": r.system_spearman and r.system_spearman.value, "n_failed": r.n_failed,
            "paper_label": label or "", "paper": "" if pv is None else pv.value,
            "spearman_without_copies": wc and wc.spearman, "n_without_copies": wc and wc.n,
            "ci_low_without_copies": wci and wci.low, "ci_high_without_copies": wci and wci.high,
            **(_below_floor(ci.few) if ci.few is not None else {}),
        })
    return buf.getvalue()


def _below_floor(k: int) -> dict[str, Any]:
    """The columns of a row whose bootstrap resampled fewer conversations than the floor: no CI, no p."""
    return {"p": "", "ci_low": "", "ci_high": "", "p_bootstrap": "", "p_bootstrap_text": too_few_text(k),
            "significant": False, "pearson_p": "", "kendall_p": ""}
