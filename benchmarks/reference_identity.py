"""``reference_identity``: how much a results folder's correlations owe to replies that *are* the reference.

On some benchmark sets one of the rated "systems" is the original human reply, which is also the
set's reference (Topical-USR, Persona-USR and DailyDialog-Zhao all have one). A reference-based
scorer gives those items its top score, and people rate them high, so it gains on them for free.
This check recomputes every cell's Spearman correlation without the items whose reply equals one of
its references (compared after lower-casing and folding white space), beside the correlation on all
items, and the DSTC10-style average over the sets of each method with those values.

It reads a finished ``judge run`` folder (``summary.json`` and the per-item files) and the benchmark
data the items came from; nothing is scored again.

    python benchmarks/reference_identity.py results/cpu-leaderboard ../shared/data
    python benchmarks/reference_identity.py RESULTS DATA --methods q15-criteria,q15-ensemble-ref
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.datasets import load_benchmark
from judge.items import Item
from judge.results import cell_path, read_rows
from judge.stats import correlate


def _folded(text: str | None) -> str:
    return " ".join((text or "").lower().split())


def reply_is_reference(item: Item) -> bool:
    """Whether the item's reply is, word for word, one of its references."""
    return item.response is not None and any(_folded(r) == _folded(item.response) for r in item.references)


def check(results: Path, data_dir: Path, methods: list[str] | None = None) -> list[dict[str, Any]]:
    """One row per cell (seed 0): Spearman on all items and without the reply-is-reference ones."""
    summary = json.loads((results / "summary.json").read_text(encoding="utf-8"))
    identical: dict[str, set[str]] = {}
    out = []
    for r in summary["results"]:
        if methods and r["method"] not in methods:
            continue
        ds = r["dataset"]
        if ds not in identical:
            identical[ds] = {it.id for it in load_benchmark(ds, data_dir) if reply_is_reference(it)}
        rows = read_rows(cell_path(results, r["method"], ds, r["quality"], 0))
        kept = [x for x in rows if x["id"] not in identical[ds]]
        out.append({
            "method": r["method"], "dataset": ds, "n": len(rows), "n_kept": len(kept),
            "all": correlate([x["score"] for x in rows], [x["human"] for x in rows]).value,
            "without": correlate([x["score"] for x in kept], [x["human"] for x in kept]).value,
        })
    return out


def _fmt(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="a judge run results folder")
    ap.add_argument("data_dir", type=Path, help="the benchmark data the run read")
    ap.add_argument("--methods", default=None, help="only these methods (comma-separated)")
    args = ap.parse_args(argv)
    rows = check(args.results, args.data_dir, args.methods.split(",") if args.methods else None)
    print("| method | set | n | Spearman, all items | n without reply = reference | Spearman without |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['method']} | {r['dataset']} | {r['n']} | {_fmt(r['all'])} | {r['n_kept']} | {_fmt(r['without'])} |")
    print()
    print("| method | sets | avg, all items | avg without |")
    print("|---|---:|---:|---:|")
    for m in dict.fromkeys(str(r["method"]) for r in rows):
        mine = [r for r in rows if r["method"] == m]
        both = [(r["all"], r["without"]) for r in mine if r["all"] is not None and r["without"] is not None]
        if both:
            avg_all = sum(a for a, _ in both) / len(both)
            avg_without = sum(w for _, w in both) / len(both)
            print(f"| {m} | {len(both)} | {avg_all:.3f} | {avg_without:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
