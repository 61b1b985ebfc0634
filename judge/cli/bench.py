"""``judge bench``: one prompt on one benchmark file; prints n, Spearman and Pearson with p-values."""

from __future__ import annotations

import argparse
import random
import sys
import time

from tqdm import tqdm

from ..datasets import load_benchmark
from ..io import atomic_write_jsonl
from ..qualities import dataset_info
from ..stats import correlations
from . import EXIT_FAILED_ITEMS, EXIT_OK
from .options import add_judge_options, build_classic, build_judge, resolve_quality


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("bench", help="correlate a judge with human ratings on a benchmark set")
    p.add_argument("--data-dir", required=True, help="folder holding the benchmark files (e.g. ../shared/data)")
    p.add_argument("--dataset", required=True, help="set name: file stem without _eval (fed-turn, topical-usr, ...)")
    p.add_argument("--limit", type=int, default=None,
                   help="score a seeded random subset of N items (file order kept; --limit-seed)")
    p.add_argument("--limit-seed", type=int, default=0)
    p.add_argument("-o", "--output", default=None, help="also write per-item JSONL here")
    add_judge_options(p)
    return p


def subset(items: list, limit: int | None, seed: int) -> list:
    """A seeded random subset of ``limit`` items, in file order (first-N would take one system only)."""
    if limit is None or limit >= len(items):
        return items
    keep = set(random.Random(seed).sample(range(len(items)), limit))
    return [it for i, it in enumerate(items) if i in keep]


def run(args: argparse.Namespace) -> int:
    info = dataset_info(args.dataset)
    qname = args.quality or info.overall
    quality = info.quality(qname)
    all_items = load_benchmark(info.name, args.data_dir)
    rated = [it for it in all_items if it.human(quality.name) is not None]
    unrated = len(all_items) - len(rated)
    items = subset(rated, args.limit, args.limit_seed)
    if args.scorer:
        scorer = build_classic(args, quality)
        model = str(scorer.describe().get("model"))
        method = f"scorer {args.scorer}, model {model}"
        close = lambda: None  # noqa: E731
    else:
        scorer = judge = build_judge(args, items, quality, pool=rated)
        model = judge.backend.model_id
        method = (f"prompt {judge.prompt.name}, model {model}, selector {judge.selector.name}, k {judge.k}")
        close = judge.backend.close
    t0 = time.perf_counter()
    scores = list(tqdm(scorer.score(items), total=len(items), desc=info.name, unit="item", file=sys.stderr,
                       disable=None, leave=False))
    elapsed = time.perf_counter() - t0
    human = [it.human(quality.name) for it in items]
    pred = [s.value for s in scores]
    corr = correlations(pred, human)
    failed = sum(not s.ok for s in scores)
    if args.output:
        atomic_write_jsonl(args.output, [
            {**s.to_json(), "human": round(h, 6), **({"scorer": args.scorer} if args.scorer
                                                     else {"prompt": judge.prompt.name}), "model": model}
            for s, h in zip(scores, human)
        ])
    sp, pe = corr["spearman"], corr["pearson"]
    mark = lambda c: "" if c.significant else " (not significant, p >= 0.05)"  # noqa: E731
    print(f"dataset   {info.name} ({info.abbrev}), quality {quality.name}, {method}")
    print(f"items     {len(items)} scored of {len(rated)} rated ({unrated} without a rating skipped), "
          f"{failed} failed")
    print(f"n         {sp.n}")
    print(f"spearman  {sp.value:.3f}  p={sp.p_value:.3g}{mark(sp)}")
    print(f"pearson   {pe.value:.3f}  p={pe.p_value:.3g}{mark(pe)}")
    print(f"time      {elapsed:.1f} s, {elapsed / max(len(items), 1):.3f} s/item")
    close()
    return EXIT_FAILED_ITEMS if failed else EXIT_OK
