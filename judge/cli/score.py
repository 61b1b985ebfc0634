"""``judge score INPUT``: one JSON line per item (id, score, label probabilities, prompt, model)."""

from __future__ import annotations

import argparse
import sys

from tqdm import tqdm

from ..datasets import load_items
from ..io import atomic_write_jsonl, dumps
from . import EXIT_FAILED_ITEMS, EXIT_OK
from .options import add_judge_options, build_classic, build_judge, resolve_quality


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("score", help="score the items of a file (JSONL or a benchmark file)")
    p.add_argument("input", help="items file: users' JSONL (see docs/data-format.md) or a benchmark file")
    p.add_argument("-o", "--output", default=None, help="write JSONL here (atomically) instead of stdout")
    p.add_argument("--limit", type=int, default=None, help="score only the first N items")
    add_judge_options(p)
    return p


def run(args: argparse.Namespace) -> int:
    items = load_items(args.input)
    if args.limit is not None:
        items = items[: args.limit]
    qname = args.quality
    if qname is None and any("overall" in (k.lower() for k in it.annotations) for it in items):
        qname = "overall"  # report the human overall rating next to each score when the data has one
    quality = resolve_quality(qname, items)
    if args.scorer:
        scorer = build_classic(args, quality)
        meta = {"scorer": args.scorer, "model": scorer.describe().get("model")}
        qname = quality.name if quality else None
        scores, close = scorer.score(items), (lambda: None)
    else:
        judge = build_judge(args, items, quality)
        meta = {"prompt": judge.prompt.name, "model": judge.backend.model_id, "backend": judge.backend.name}
        qname = judge.quality.name if judge.quality else None
        scores, close = judge.score(items), judge.backend.close
    by_id = {it.id: it for it in items}
    rows, failed = [], 0
    bar = tqdm(scores, total=len(items), desc="scoring", unit="item", file=sys.stderr,
               disable=None, leave=False)
    for s in bar:
        row = s.to_json()
        row.update(meta)
        row["quality"] = qname
        if qname is not None:
            human = by_id[s.item_id].human(qname)
            if human is not None:
                row["human"] = round(human, 6)
        failed += not s.ok
        if args.output:
            rows.append(row)
        else:
            print(dumps(row), flush=True)
    if args.output:
        atomic_write_jsonl(args.output, rows)
    close()
    if failed:
        print(f"judge: {failed} of {len(items)} items failed (see 'error' in the output)", file=sys.stderr)
        return EXIT_FAILED_ITEMS
    return EXIT_OK
