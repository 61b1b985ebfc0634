"""``pairwise_cost`` benchmark: what reading both orders of a pair costs against one order, and a pair
against one pointwise item.

A pairwise judge reads each pair twice, with either reply first (docs/pairwise.md). Both prompts of a pair
hold the same instructions and the same conversation and part at the first reply, where the prompt is cut
(``Prompt.shared``), so on llama.cpp the second order reuses the first's KV cache up to there: the
conversation is evaluated once, and each order costs its two replies and the question after them. This
measures that, on seeded contexts of Topical-USR (long conversations: the case it is for), each pass in
its own process with its own model load and a fresh SQLite cache:

* ``one``: one order per pair (``orders = "one"``, drawn per pair by a seeded hash), the baseline;
* ``both``: both orders (the default);
* ``pointwise``: the criteria prompt (``yesno-criteria``) on every reply of those pairs, one prompt each.

Two pairings of the same contexts: ``single``, one pair per context (each pair alone: what a pair costs
when its conversation is evaluated for it, as a served ``/v1/compare`` request or a ``--baseline`` run with
two systems has it), and ``all``, every two systems of each context (``judge compare``'s default), where the
conversation is evaluated once for all of a context's pairs in both passes, so the second order's share of
the cost is larger.

It prints per pass the wall time (model load excluded), pairs (or items), tokens evaluated after prefix
reuse, llama.cpp decodes and peak RSS; then both orders against one per pair, in seconds and in tokens
(target, on ``single``: at most 1.6x), and a pair's tokens (both orders) against one pointwise item's. Exit
status 1 when the target is missed.

    python benchmarks/pairwise_cost.py --model qwen2.5-coder-1.5b --contexts 4 --once     # TU, minutes
    python benchmarks/pairwise_cost.py --contexts 2 --once                                 # SmolLM2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from prefix_share import peak_rss_mb, subprocess_pass  # the house's timed passes, one process each

ROOT = Path(__file__).resolve().parents[1]
#: Cost of both orders per pair against one order, with each pair's conversation evaluated for it.
TARGET = 1.6


def pairs_of(spec: dict[str, Any]) -> tuple[list[Any], Any]:
    """The pairs of ``spec['contexts']`` seeded contexts of the set (``single``: the first pair of each)."""
    sys.path.insert(0, str(ROOT))
    from judge.data.pairs import pairs_within, sample_contexts
    from judge.datasets import load_benchmark
    from judge.datasets.benchmarks import dataset_info

    info = dataset_info(spec["dataset"])
    pairs = sample_contexts(pairs_within(load_benchmark(info.name, spec["data_dir"]), file=info.name).pairs,
                            spec["contexts"], 0)
    if spec["pairing"] == "single":
        firsts: dict[str, Any] = {}
        for p in pairs:
            firsts.setdefault(p.context, p)
        pairs = list(firsts.values())
    return pairs, info.quality(info.overall)


def one_pass(spec: dict[str, Any]) -> dict[str, Any]:
    """One side: the pairs compared in one or both orders, or their replies scored by the criteria prompt."""
    os.environ["JUDGE_CACHE"] = str(Path(spec["work"]) / "cache.sqlite")
    from judge.core.config import GenerateConfig
    from judge.engine import MethodSpec, prepare
    from judge.engine.compare import pair_items, prepare_pairs
    from judge.engine.session import RunOptions, Session
    from judge.records.pair_rows import PairRow
    from judge.records.rows import Row

    pairs, quality = pairs_of(spec)
    generate = GenerateConfig(threads=spec["threads"])
    rows: list[Row | PairRow] = []
    with Session(RunOptions(progress=False)) as session:
        t0 = time.perf_counter()
        if spec["side"] == "pointwise":
            todo: Any = pair_items(pairs)
            prep = prepare(MethodSpec(prompt="yesno-criteria", model=spec["model"], generate=generate), todo, quality)
        else:
            todo = pairs
            method = MethodSpec(type="pairwise", orders=spec["side"], model=spec["model"], generate=generate)
            prep = prepare_pairs(method, pairs, quality)
        judge = session.build(prep)
        load = time.perf_counter() - t0
        t1 = time.perf_counter()
        session.rows(prep, todo, rows.append, quality=quality.name, judge=judge)
        wall = time.perf_counter() - t1
        counters = session.counters()
    return {"wall": wall, "load": load, "rows": len(rows), "pairs": len(pairs),
            "tokens": counters.get("tokens_evaluated", 0), "decodes": counters.get("decodes", 0),
            "failed": sum(r.error is not None for r in rows), "peak_mb": peak_rss_mb()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None, help="default: the embedded SmolLM2")
    ap.add_argument("--dataset", default="TU")
    ap.add_argument("--contexts", type=int, default=4, help="seeded contexts of the set (default 4)")
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--once", action="store_true", help="one, both, pointwise once per pairing (default ABBA: one, "
                    "both, both, one, then pointwise)")
    ap.add_argument("--pass-json", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.pass_json:
        print(json.dumps(one_pass(json.loads(args.pass_json))))
        return 0
    order = ["one", "both"] if args.once else ["one", "both", "both", "one"]
    print(f"pairwise_cost: {args.contexts} seeded {args.dataset} contexts, model {args.model or 'default'}; "
          f"{platform.machine()}, {os.cpu_count()} CPUs, {args.threads} threads; "
          f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC")
    print(f"{'pairing':<8} {'pass':<10} {'wall s':>8} {'rows':>5} {'rows/s':>7} {'tokens':>7} {'tok/row':>8} "
          f"{'decodes':>8} {'failed':>6} {'peak MB':>8}")
    met = True
    with tempfile.TemporaryDirectory(prefix="judge-pairwise-cost-") as tmp:
        for pairing in ("single", "all"):
            results: dict[str, list[dict[str, Any]]] = {"one": [], "both": [], "pointwise": []}
            for i, side in enumerate([*order, "pointwise"]):
                work = Path(tmp) / f"{pairing}{i}"
                work.mkdir()
                spec = {"model": args.model, "dataset": args.dataset, "contexts": args.contexts, "data_dir": args.data_dir,
                        "threads": args.threads, "side": side, "pairing": pairing, "work": str(work), "name": side}
                r = subprocess_pass(spec, __file__)
                results[side].append(r)
                print(f"{pairing:<8} {side:<10} {r['wall']:>8.2f} {r['rows']:>5} {r['rows'] / r['wall']:>7.3f} "
                      f"{r['tokens']:>7} {r['tokens'] / r['rows']:>8.1f} {r['decodes']:>8} {r['failed']:>6} "
                      f"{r['peak_mb']:>8.0f}")
            met &= summarise(pairing, results)
    return 0 if met else 1


def summarise(pairing: str, results: dict[str, list[dict[str, Any]]]) -> bool:
    """The ratios of one pairing (seconds and tokens per pair, both orders against one), and a pair's tokens
    against a pointwise item's; whether the target holds (``single`` only)."""
    def per_row(side: str, key: str) -> float:
        return sum(r[key] for r in results[side]) / sum(r["rows"] for r in results[side])

    seconds = per_row("both", "wall") / per_row("one", "wall")
    tokens = per_row("both", "tokens") / per_row("one", "tokens")
    item = per_row("pointwise", "tokens")
    pair = per_row("both", "tokens")
    print(f"{pairing}: both orders vs one, per pair: {seconds:.2f}x in seconds, {tokens:.2f}x in tokens evaluated; "
          f"a pair in both orders {pair:.0f} tokens against {item:.0f} for one reply scored alone by the criteria "
          f"prompt ({pair / item:.2f}x)")
    if pairing != "single":
        return True
    ok = seconds <= TARGET
    print(f"target: both orders at most {TARGET}x one order per pair, the conversation evaluated once: "
          f"{seconds:.2f}x: {'met' if ok else 'missed'}")
    return ok


if __name__ == "__main__":
    sys.exit(main())
