"""``scaling`` benchmark: time per item as k grows, and BM25 selection time as the pool grows.

Part 1: a DSTC10 set (``--dataset``, default dailydialog-grade), the first ``--n`` items, the yes/no
prompt, BM25-context examples (the rest of the set as the pool, leave-group-out), k = 0, 4, 8, 12,
the default model, no cache. Per k: prompt tokens per item, tokens actually evaluated per item
(after KV prefix reuse and window reordering) and seconds per item; seconds per evaluated token
staying flat shows that only the evaluated suffix costs time.

Part 2: BM25-context selection alone, pools of 100, 1,000 and 10,000 candidates built by
replicating the set's items with fresh ids and groups and a perturbed response (so no two
candidates are identical): the index build (once per pool) and the mean time per query, and the
share of one item's scoring time (from part 1, k=4) that selection takes.

    python benchmarks/scaling.py            # n=8 items, k 0 4 8 12, pools 100 1000 10000
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.core.config import GenerateConfig
from judge.data.items import Item
from judge.datasets import load_benchmark
from judge.datasets.benchmarks import dataset_info
from judge.engine import MethodSpec, prepare
from judge.engine.session import RunOptions, Session
from judge.scorers.llm import LLMJudge
from judge.selectors import get_selector
from judge.selectors.bm25 import BM25Selector


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def k_curve(session: Session, threads: int | None, items: list[Item], pool: list[Item], quality,
            ks: list[int]) -> list[dict]:
    rows = []
    for k in ks:
        spec = MethodSpec(prompt="yesno", selector="bm25-context" if k else "none", k=k,
                          generate=GenerateConfig(threads=threads, cache=False))
        judge = session.build(prepare(spec, items, quality, pool=pool))
        assert isinstance(judge, LLMJudge)
        judge.backend.llm.reset()  # type: ignore[attr-defined]  # each k starts from an empty KV cache  # each k starts from an empty KV cache
        t0 = time.perf_counter()
        scores = list(judge.score(items))
        wall = time.perf_counter() - t0
        n_eval = sum(s.n_evaluated_tokens for s in scores)
        rows.append({"k": k, "wall": wall, "per_item": wall / len(items), "failed": sum(not s.ok for s in scores),
                     "prompt_tok": sum(s.n_prompt_tokens for s in scores) / len(items),
                     "eval_tok": n_eval / len(items), "ms_per_tok": 1000 * wall / max(n_eval, 1),
                     "shown": statistics.mean(len(s.examples) for s in scores)})
    return rows


def grow_pool(base: list[Item], n: int) -> list[Item]:
    """``n`` candidates: copies of ``base`` with fresh ids/groups and the copy number in the response."""
    out = []
    for i in range(n):
        it = base[i % len(base)]
        copy = i // len(base)
        resp = it.response if copy == 0 else f"{it.response} ({copy})"
        out.append(dataclasses.replace(it, id=f"{it.id}#{copy}", group=f"{it.group}#{copy}", response=resp))
    return out


def pool_curve(base: list[Item], queries: list[Item], sizes: list[int], quality, k: int) -> list[dict]:
    rows = []
    for n in sizes:
        pool = grow_pool(base, n)
        sel = get_selector("bm25-context", seed=0)
        assert isinstance(sel, BM25Selector)
        t0 = time.perf_counter()
        sel.index(pool)
        build = time.perf_counter() - t0
        t0 = time.perf_counter()
        for q in queries:
            sel.rank(q, pool, k)
        per_query = (time.perf_counter() - t0) / len(queries)
        rows.append({"pool": n, "build": build, "per_query": per_query, "indexes": len(sel._indexes)})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="dailydialog-grade")
    ap.add_argument("--n", type=int, default=8, help="items scored per k (default 8)")
    ap.add_argument("--ks", type=int, nargs="+", default=[0, 4, 8, 12])
    ap.add_argument("--pools", type=int, nargs="+", default=[100, 1000, 10000])
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    args = ap.parse_args()

    info = dataset_info(args.dataset)
    data = load_benchmark(args.dataset, args.data_dir)
    quality = next(q for q in info.qualities if q.name == info.overall) if info.overall else info.qualities[0]
    rated = [it for it in data if it.human(quality.name) is not None]
    items = rated[: args.n]
    load = os.getloadavg()
    with Session(RunOptions(progress=False)) as session:
        krows = k_curve(session, args.threads, items, rated, quality, args.ks)
    prows = pool_curve(rated, rated[: args.queries], args.pools, quality, 4)
    load_end = os.getloadavg()

    print(f"scaling: {info.name} ({quality.name}), yes/no prompt, BM25-context examples from the set's "
          f"{len(rated)} rated items (leave-group-out), default model (llama.cpp, "
          f"{args.threads or os.cpu_count()} threads), no cache, n={len(items)} items per k")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"load average at start {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}, at end {load_end[0]:.2f}")
    print(f"{'k':>3} {'shown':>6} {'prompt tok/item':>15} {'eval tok/item':>13} {'eval share':>10} "
          f"{'s/item':>7} {'ms/eval tok':>11} {'failed':>6}")
    for r in krows:
        print(f"{r['k']:>3} {r['shown']:>6.1f} {r['prompt_tok']:>15.0f} {r['eval_tok']:>13.0f} "
              f"{100 * r['eval_tok'] / r['prompt_tok']:>9.0f}% {r['per_item']:>7.2f} {r['ms_per_tok']:>11.2f} "
              f"{r['failed']:>6}")
    k4 = next((r for r in krows if r["k"] == 4), krows[-1])
    print(f"\nBM25-context selection (k=4), {args.queries} queries per pool; share = per query / "
          f"scoring s/item at k={k4['k']} ({k4['per_item']:.2f} s)")
    print(f"{'pool':>6} {'index build s':>13} {'per query ms':>12} {'share':>7} {'indexes built':>13}")
    for r in prows:
        print(f"{r['pool']:>6} {r['build']:>13.3f} {1000 * r['per_query']:>12.2f} "
              f"{100 * r['per_query'] / k4['per_item']:>6.2f}% {r['indexes']:>13}")
    print(f"peak RSS {peak_rss_mb():.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
