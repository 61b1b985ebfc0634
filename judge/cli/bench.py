"""``judge bench``: one prompt on one benchmark file; prints n, Spearman and Pearson with p-values."""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

from tqdm import tqdm

from ..datasets import check_scale, load_benchmark
from ..errors import InputError
from ..io import atomic_write_jsonl, check_output_path
from ..qualities import dataset_info
from ..stats import correlations
from . import EXIT_FAILED_ITEMS, EXIT_OK
from .options import add_judge_options, build_classic, build_judge, make_selector, report_backend, selection_settings


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("bench", help="correlate a judge with human ratings on a benchmark set")
    p.add_argument("--data-dir", required=True, help="folder holding the benchmark files (e.g. ../shared/data)")
    p.add_argument("--dataset", required=True, help="set name: file stem without _eval (fed-turn, topical-usr, ...)")
    p.add_argument("--limit", type=int, default=None,
                   help="score a seeded random subset of N items (file order kept; --limit-seed)")
    p.add_argument("--limit-seed", type=int, default=0)
    p.add_argument("-o", "--output", default=None, help="also write per-item JSONL here")
    p.add_argument("--seeds", default=None, help="comma-separated selection seeds, one run each, e.g. 0,1,2 "
                   "(default for --selector random: 3 seeds from --seed, else --seed); prints mean and sd")
    add_judge_options(p)
    return p


def parse_seeds(args: argparse.Namespace) -> list[int]:
    """Seeds to run: --seeds, else 3 consecutive seeds for random selection, else --seed."""
    if args.seeds:
        try:
            seeds = [int(x) for x in args.seeds.split(",") if x.strip()]
        except ValueError:
            raise InputError(f"--seeds must be comma-separated integers, got {args.seeds!r}", field="seeds") from None
        if not seeds:
            raise InputError("--seeds is empty", field="seeds")
        return seeds
    base = args.seed if args.seed is not None else 0
    if args.selector == "random" and args.k > 0 and args.seed is None:
        return [base, base + 1, base + 2]
    return [base]


def selection_time(selector, items: list, pool: list, k: int) -> float:
    """Seconds per item spent choosing examples alone (a fresh selector: index building included)."""
    t0 = time.perf_counter()
    for it in items:
        selector.select(it, pool, k)
    return (time.perf_counter() - t0) / max(len(items), 1)


def subset(items: list, limit: int | None, seed: int) -> list:
    """A seeded random subset of ``limit`` items, in file order (first-N would take one system only)."""
    if limit is None or limit >= len(items):
        return items
    keep = set(random.Random(seed).sample(range(len(items)), limit))
    return [it for i, it in enumerate(items) if i in keep]


def run(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 1:
        raise InputError(f"must be >= 1, got {args.limit}", field="--limit")
    if args.output:
        check_output_path(args.output)
    info = dataset_info(args.dataset)
    qname = args.quality or info.overall
    quality = info.quality(qname)
    seeds = parse_seeds(args)
    all_items = load_benchmark(info.name, args.data_dir)
    check_scale(all_items, quality, file=str(Path(args.data_dir) / info.path))
    rated = [it for it in all_items if it.human(quality.name) is not None]
    unrated = len(all_items) - len(rated)
    items = subset(rated, args.limit, args.limit_seed)
    if args.scorer:
        return run_classic(args, info, quality, items, rated, unrated)
    judge = build_judge(args, items, quality, pool=rated)
    human = [it.human(quality.name) for it in items]
    rows: list[dict] = []
    runs = []
    failed_any = 0
    for seed in seeds:
        judge.selector = make_selector(args, judge.quality, seed)
        sel_s = selection_time(make_selector(args, judge.quality, seed), items, judge.pool, judge.k) if judge.k else 0.0
        t0 = time.perf_counter()
        scores = list(tqdm(judge.score(items), total=len(items), desc=info.name, unit="item", file=sys.stderr,
                           disable=None, leave=False))
        elapsed = time.perf_counter() - t0
        corr = correlations([s.value for s in scores], human)
        failed = sum(not s.ok for s in scores)
        failed_any += failed
        used = [len(s.examples) for s in scores]
        settings = selection_settings(judge)
        runs.append((seed, corr, failed, elapsed, sel_s, used))
        rows.extend({**s.to_json(), "human": round(h, 6), "prompt": judge.prompt.name,
                     "model": judge.backend.model_id, "selection": settings} for s, h in zip(scores, human))
    if args.output:
        atomic_write_jsonl(args.output, rows)
    sel = judge.selector.describe()
    guard = "on" if sel.get("group_guard", True) else "OFF"
    print(f"dataset   {info.name} ({info.abbrev}), quality {quality.name}, prompt {judge.prompt.name}, "
          f"model {judge.backend.model_id}, selector {judge.selector.name}, k {judge.k}, "
          f"order {sel.get('order')}, group guard {guard}" + (f", seeds {','.join(map(str, seeds))}" if judge.k and (len(seeds) > 1 or judge.selector.name == "random") else ""))
    print(f"items     {len(items)} scored of {len(rated)} rated ({unrated} without a rating skipped), "
          f"{failed_any} failed" + (f" (over {len(seeds)} runs)" if len(seeds) > 1 else ""))
    for seed, corr, failed, elapsed, sel_s, used in runs:
        sp, pe = corr["spearman"], corr["pearson"]
        prefix = f"seed {seed:<4} " if len(seeds) > 1 else ""
        if prefix:
            print(f"{prefix}n {sp.n}, spearman {sp.value:.3f} (p={sp.p_value:.3g}){_mark(sp)}, "
                  f"pearson {pe.value:.3f} (p={pe.p_value:.3g}){_mark(pe)}")
        else:
            print_correlations(corr)
    if len(runs) > 1:
        for key in ("spearman", "pearson"):
            vals = [r[1][key].value for r in runs]
            print(f"{key:<9} mean {statistics.fmean(vals):.3f} ± {statistics.stdev(vals):.3f} (sample sd over "
                  f"{len(vals)} seeds)")
    all_used = [u for r in runs for u in r[5]]
    if judge.k:
        short = sum(u < judge.k for u in all_used)
        print(f"examples  {statistics.fmean(all_used):.2f} used per item on average (k {judge.k}); "
              f"{short} item-runs had fewer (context window or small pool)")
        print(f"selection {1000 * statistics.fmean(r[4] for r in runs):.2f} ms/item (choosing examples alone, "
              f"index building included)")
    total = sum(r[3] for r in runs)
    n_scored = len(items) * len(runs)
    print(f"time      {total:.1f} s, {total / max(n_scored, 1):.3f} s/item")
    report_backend(judge.backend)
    judge.backend.close()
    return EXIT_FAILED_ITEMS if failed_any else EXIT_OK


def print_correlations(corr: dict) -> None:
    """The n / Spearman / Pearson lines of one run, non-significant values marked."""
    sp, pe = corr["spearman"], corr["pearson"]
    print(f"n         {sp.n}")
    print(f"spearman  {sp.value:.3f}  p={sp.p_value:.3g}{_mark(sp)}")
    print(f"pearson   {pe.value:.3f}  p={pe.p_value:.3g}{_mark(pe)}")


def _mark(c) -> str:
    return "" if c.significant else " (not significant, p >= 0.05)"


def run_classic(args: argparse.Namespace, info, quality, items: list, rated: list, unrated: int) -> int:
    """``judge bench --scorer NAME``: a classic scorer instead of an LLM judge (no model for the LLM loads)."""
    scorer = build_classic(args, quality)
    model = str(scorer.describe().get("model"))
    t0 = time.perf_counter()
    scores = list(tqdm(scorer.score(items), total=len(items), desc=info.name, unit="item", file=sys.stderr,
                       disable=None, leave=False))
    elapsed = time.perf_counter() - t0
    human = [it.human(quality.name) for it in items]
    corr = correlations([s.value for s in scores], human)
    failed = sum(not s.ok for s in scores)
    if args.output:
        atomic_write_jsonl(args.output, [
            {**s.to_json(), "human": round(h, 6), "scorer": args.scorer, "model": model}
            for s, h in zip(scores, human)
        ])
    print(f"dataset   {info.name} ({info.abbrev}), quality {quality.name}, scorer {args.scorer}, model {model}")
    print(f"items     {len(items)} scored of {len(rated)} rated ({unrated} without a rating skipped), "
          f"{failed} failed")
    print_correlations(corr)
    print(f"time      {elapsed:.1f} s, {elapsed / max(len(items), 1):.3f} s/item")
    return EXIT_FAILED_ITEMS if failed else EXIT_OK
