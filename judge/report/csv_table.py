"""The results as a long CSV (one row per method, set and quality), for spreadsheets."""

from __future__ import annotations

import csv
import io
from typing import Any

from .paper import paper_value

FIELDS = ["method", "dataset", "quality", "n", "spearman", "sd_over_seeds", "p", "ci_low", "ci_high", "significant",
          "pearson", "pearson_p", "kendall", "kendall_p", "system_spearman", "n_failed", "paper_label", "paper"]


def render_csv(summary: dict[str, Any]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, FIELDS, lineterminator="\n")
    w.writeheader()
    for r in summary["results"]:
        label = summary["methods"][r["method"]].get("paper")
        pv = paper_value(label, r["dataset"], r["quality"]) if label else None
        w.writerow({
            "method": r["method"], "dataset": r["dataset"], "quality": r["quality"], "n": r["n"],
            "spearman": r["spearman"], "sd_over_seeds": r["sd"], "p": r["p"], "ci_low": r["ci"]["low"],
            "ci_high": r["ci"]["high"], "significant": r["p"] is not None and r["p"] < 0.05,
            "pearson": r["pearson"]["value"], "pearson_p": r["pearson"]["p"], "kendall": r["kendall"]["value"],
            "kendall_p": r["kendall"]["p"],
            "system_spearman": (r.get("system_spearman") or {}).get("value"), "n_failed": r["n_failed"],
            "paper_label": label or "", "paper": "" if pv is None else pv.value,
        })
    return buf.getvalue()
