"""``leaderboard_schedule`` benchmark: a model's whole zero-shot leaderboard, one method at a time against
scheduled, and ``--check``'s estimate against the wall time it predicts.

The methods are every zero-shot prompt of one model in a leaderboard config (default: Qwen2.5-Coder-1.5B in
``benchmarks/configs/cpu_leaderboard.toml``: yes/no, rating, criteria, relevance, criteria rating; the
ensembles over them cost no model time and are left out). They run on a fixed, seeded ``--items`` items
of each set's test half, each pass in its own process with its own model load and an empty cache (its own
``JUDGE_CACHE``, so its own rate file too):

* ``check``: ``judge run --check`` on the scheduled run: the prompt tokens it will evaluate after prefix
  reuse and the estimated time, at the rate a calibration measures in this pass (what a new user gets);
* ``each``: one ``judge run`` per method, one after another (how a run went before scheduling);
* ``scheduled``: one ``judge run`` of every method, the cells of one set and model scored in one
  prefix-scheduled pass (docs/harness.md, "Scheduling by prefix");
* ``full``: ``--check``'s estimate for the config's full run (its own ``limit`` per set) at the rate the
  ``scheduled`` pass left (the calibration's, scaled to what that run took), the figure a user reads
  before a many-hour run.

The run passes start from the ``check`` pass's rate file, as a user's run after ``--check`` does, and
refine it; their caches are empty.

It prints per pass the wall time (model loads excluded, and included), items/s, prompt tokens evaluated
and peak RSS, the scheduled pass against the one-by-one pass, the estimate against the scheduled pass's
wall time, and whether the two passes wrote the same rows. Exit status 1 when the estimate misses the
measured time by more than 25% or the rows differ. ``--estimate-only`` skips the one-by-one pass.

    python benchmarks/leaderboard_schedule.py --data-dir ../shared/data                   # 10 items per set, Qwen-1.5B
    python benchmarks/leaderboard_schedule.py --model smollm2-135m-instruct --items 1 --datasets DZ,FD   # seconds
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from prefix_share import peak_rss_mb, subprocess_pass  # the house's timed passes, one process each

ROOT = Path(__file__).resolve().parents[1]
#: How far the estimate may be from the measured wall time (model loads excluded), as a fraction of it.
TOLERANCE = 0.25


def _experiment(spec: dict[str, Any], out: Path) -> Any:
    """The config with this benchmark's overrides: the model's zero-shot methods, the test half, the items."""
    sys.path.insert(0, str(ROOT))
    from judge.harness import load_experiment

    return load_experiment(spec["config"]).with_overrides(
        limit=spec["limit"], data_dir=spec["data_dir"], output=str(out), threads=spec["threads"],
        datasets=spec["datasets"], split="test", methods=spec["methods"])


def zero_shot_methods(config: str, model: str) -> list[str]:
    """The config's prompting methods of ``model`` that show the judge no examples."""
    sys.path.insert(0, str(ROOT))
    from judge.harness import load_experiment
    from judge.models.packaged import DEFAULT_MODEL

    exp = load_experiment(config)
    return [m.name for m in exp.methods
            if m.type == "llm" and (m.model or DEFAULT_MODEL) == model and m.kind.examples(m)[0] == 0]


def check_pass(spec: dict[str, Any]) -> dict[str, Any]:
    """``--check`` of the run the spec describes: tokens after reuse and seconds at the pass's rate."""
    from judge.engine.cost import timed
    from judge.harness import plan
    from judge.harness.cost import cost_estimate
    from judge.harness.runner import applicable

    exp = _experiment(spec, Path(spec["work"]) / "out")
    prepared, _ = applicable(plan(exp), exp)
    t0 = time.perf_counter()
    cells, rates = cost_estimate(exp, prepared, lambda _msg: None)
    llm = [c for c in cells if c.how == "counted" and c.tokens]
    rate = next(iter(rates.values()), None)
    return {"tokens": sum(c.tokens or 0 for c in llm), "decodes": sum(c.decodes for c in llm),
            "items": sum(c.items for c in cells), "seconds": sum(timed(c, rates) for c in llm),
            "rate": rate.describe() if rate else None, "check_s": time.perf_counter() - t0}


def run_pass(spec: dict[str, Any]) -> dict[str, Any]:
    """The run (``each``: one run per method, in the config's order) on the pass's empty cache."""
    from judge.harness import run_experiment

    work = Path(spec["work"])
    groups = [[m] for m in spec["methods"]] if spec["each"] else [spec["methods"]]
    wall = load = total = 0.0
    tokens = decodes = rows = 0
    for i, methods in enumerate(groups):
        exp = _experiment({**spec, "methods": methods}, work / f"out{i}")
        t0 = time.perf_counter()
        summary = run_experiment(exp, progress=False, plots=False, log=lambda _msg: None)
        total += time.perf_counter() - t0
        for t in summary.timing.values():
            if t:
                load += t["load_s"]
                rows += t["rows"]
        tokens += summary.counters.get("tokens_evaluated", 0)
        decodes += summary.counters.get("decodes", 0)
    wall = total - load
    cells = {str(p).split("/items/", 1)[1]: p.read_text("utf-8") for p in sorted(work.glob("out*/items/**/*.jsonl"))}
    return {"wall": wall, "load": load, "total": total, "rows": rows, "tokens": tokens, "decodes": decodes,
            "peak_mb": peak_rss_mb(),
            "cells": cells}


def one_pass(spec: dict[str, Any]) -> dict[str, Any]:
    """A pass in this process: its own cache (and rate file) first, then the work."""
    os.environ["JUDGE_CACHE"] = str(Path(spec["work"]) / "cache.sqlite")
    return check_pass(spec) if spec["kind"] == "check" else run_pass(spec)


def _rows(cells: dict[str, str]) -> dict[tuple[str, str], Any]:
    """(cell, item id) -> the scored row without its timing, for comparing two passes."""
    out = {}
    for cell, text in cells.items():
        for line in text.splitlines():
            row = json.loads(line)
            row.pop("elapsed_s", None)
            out[(cell, row["id"])] = row
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=str(ROOT / "benchmarks" / "configs" / "cpu_leaderboard.toml"))
    ap.add_argument("--model", default="qwen2.5-coder-1.5b", help="the model whose zero-shot methods run")
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--items", type=int, default=10, help="items per set (seeded subset of the test half)")
    ap.add_argument("--datasets", default=None, help="comma-separated (default: the config's)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--estimate-only", action="store_true",
                    help="skip the one-by-one pass: only --check against the scheduled run (half the time)")
    ap.add_argument("--pass-json", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.pass_json:
        print(json.dumps(one_pass(json.loads(args.pass_json))))
        return 0

    methods = zero_shot_methods(args.config, args.model)
    if not methods:
        raise SystemExit(f"{args.config}: no zero-shot prompting method of model {args.model}")
    datasets = args.datasets.split(",") if args.datasets else None
    root = Path(tempfile.mkdtemp(prefix="judge-leaderboard-schedule-"))
    base = {"config": args.config, "data_dir": args.data_dir, "threads": args.threads, "datasets": datasets,
            "methods": methods, "limit": args.items}
    print(f"leaderboard_schedule: {args.model}, {len(methods)} zero-shot methods ({', '.join(methods)}), "
          f"{args.items} items per set of the test half; {platform.machine()}, {os.cpu_count()} CPUs, "
          f"{args.threads} threads; {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC")
    res: dict[str, dict[str, Any]] = {}
    passes = (("check", "check", False), ("each", "run", True), ("scheduled", "run", False))
    for name, kind, each in (p for p in passes if not (args.estimate_only and p[0] == "each")):
        work = root / name
        work.mkdir()
        if kind == "run" and (root / "check" / "rates.json").is_file():  # a run after --check refines its rate
            shutil.copy(root / "check" / "rates.json", work / "rates.json")
        res[name] = subprocess_pass({**base, "name": name, "kind": kind, "each": each, "work": str(work)}, __file__)
    # The full run's estimate at the rate the scheduled run measured (its rate file, a fresh cache).
    full = root / "full"
    full.mkdir()
    shutil.copy(root / "scheduled" / "rates.json", full / "rates.json")
    res["full"] = subprocess_pass({**base, "name": "full", "kind": "check", "each": False, "work": str(full),
                                   "limit": None}, __file__)
    shutil.rmtree(root, ignore_errors=True)
    return report(res, args.items)


def report(res: dict[str, dict[str, Any]], items: int) -> int:
    each, sched, check, full = res.get("each"), res["scheduled"], res["check"], res["full"]
    print(f"{'pass':<10} {'rows':>5} {'wall s':>8} {'+load s':>8} {'items/s':>8} {'tokens':>8} {'decodes':>8} "
          f"{'tok/s':>6} {'peak MB':>8}")
    for name, r in (("each", each), ("scheduled", sched)):
        if r is not None:
            print(f"{name:<10} {r['rows']:>5} {r['wall']:>8.1f} {r['total']:>8.1f} {r['rows'] / r['wall']:>8.2f} "
                  f"{r['tokens']:>8} {r['decodes']:>8} {r['tokens'] / r['wall']:>6.1f} {r['peak_mb']:>8.0f}")
    if each is not None:
        print(f"scheduled vs one by one: items/s {each['wall'] / sched['wall']:.2f}x, tokens evaluated "
              f"{sched['tokens'] / max(each['tokens'], 1):.2f}x, peak memory {sched['peak_mb'] / each['peak_mb']:.2f}x")
    miss = check["seconds"] / sched["wall"] - 1
    print(f"--check before the scheduled run: {check['tokens']} tokens in {check['decodes']} decodes, "
          f"{check['seconds']:.0f} s at {check['rate']}; measured {sched['tokens']} tokens in {sched['decodes']} "
          f"decodes, {sched['wall']:.0f} s (model loads excluded), {sched['total']:.0f} s with them: estimate "
          f"{miss:+.0%} (target within {TOLERANCE:.0%})")
    print(f"--check for the full run: {full['items']} item scorings, {full['tokens']} tokens in {full['decodes']} "
          f"decodes, about {full['seconds'] / 3600:.1f} h at {full['rate']} (refined by the scheduled run)")
    same = each is None or _rows(each["cells"]) == _rows(sched["cells"])
    if each is not None:
        print(f"rows: scheduled equal one by one: {same} ({len(_rows(sched['cells']))} rows)")
    return 0 if same and abs(miss) <= TOLERANCE else 1

if __name__ == "__main__":
    sys.exit(main())
