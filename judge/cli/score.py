"""``judge score INPUT``: one JSON line per item (id, score, label probabilities, prompt, model)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from tqdm import tqdm

from ..datasets import check_scale, load_items
from ..errors import InputError, UnknownNameError
from ..io import atomic_jsonl_writer, check_output_path, dumps
from ..qualities import dataset_info
from . import EXIT_FAILED_ITEMS, EXIT_OK
from .options import add_judge_options, build_classic, build_judge, report_backend, resolve_quality, selection_settings


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("score", help="score the items of a file (JSONL or a benchmark file)")
    p.add_argument("input", help="items file: users' JSONL (see docs/data-format.md) or a benchmark file")
    p.add_argument("-o", "--output", default=None, help="write JSONL here (atomically) instead of stdout")
    p.add_argument("--limit", type=int, default=None, help="score only the first N items")
    add_judge_options(p)
    return p


def _registered_qualities(path: str, items: list) -> tuple:
    """The qualities of the benchmark set the items come from (empty for users' own JSONL data)."""
    if Path(path).suffix.lower() == ".jsonl" or not items or not items[0].dataset:
        return ()
    try:
        return tuple(dataset_info(items[0].dataset).qualities)
    except UnknownNameError:
        return ()


def run(args: argparse.Namespace) -> int:
    # Cheap checks first: options, output path, the file, names, scales, the template; the model last.
    if args.limit is not None and args.limit < 1:
        raise InputError(f"must be >= 1, got {args.limit}", field="--limit")
    if args.output:
        check_output_path(args.output)
    items = load_items(args.input)
    if args.limit is not None:
        items = items[: args.limit]
    qname = args.quality
    if qname is None and any("overall" in (k.lower() for k in it.annotations) for it in items):
        qname = "overall"  # report the human overall rating next to each score when the data has one
    quality = resolve_quality(qname, items, _registered_qualities(args.input, items))
    if quality is not None and (args.quality is not None or args.k > 0):
        # The scale is in use (asked for, or it turns example ratings into labels): refuse values off it.
        check_scale(items, quality, file=args.input)
    backend = None
    if args.scorer:
        scorer = build_classic(args, quality)
        meta = {"scorer": args.scorer, "model": scorer.describe().get("model")}
        qname = quality.name if quality else None
        scores = scorer.score(items)
    else:
        judge = build_judge(args, items, quality)
        meta = {"prompt": judge.prompt.name, "model": judge.backend.model_id, "backend": judge.backend.name,
                "selection": selection_settings(judge)}
        qname = judge.quality.name if judge.quality else None
        scores, backend = judge.score(items), judge.backend
    by_id = {it.id: it for it in items}
    failed = 0
    # -o: rows stream into a temp file beside the target, renamed over it only when every item is
    # done (memory stays flat; a failed run leaves no file at the target path).
    with atomic_jsonl_writer(args.output) if args.output else contextlib.nullcontext() as write:
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
            if write is not None:
                write(row)
            else:
                print(dumps(row), flush=True)
    if backend is not None:
        report_backend(backend)
        backend.close()
    if failed:
        print(f"judge: {failed} of {len(items)} items failed (see 'error' in the output)", file=sys.stderr)
        return EXIT_FAILED_ITEMS
    return EXIT_OK
