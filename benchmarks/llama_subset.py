"""What the in-process llama.cpp pass benchmarks share (``likelihood_speed``, ``reason_read``): the options
that pick a seeded subset of one DSTC10 set and the model, and the subset itself."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.data.items import Item
from judge.datasets import load_benchmark
from judge.datasets.benchmarks import DatasetInfo, dataset_info
from judge.harness.runner import seeded_subset


def add_subset_options(ap: argparse.ArgumentParser, dataset: str) -> None:
    """--data-dir, --dataset (default ``dataset``), --limit, --model, --threads and --repeat (ABBA rounds)."""
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--dataset", default=dataset, help="a DSTC10 set (abbreviation or name)")
    ap.add_argument("--limit", type=int, default=12, help="items (seeded subset)")
    ap.add_argument("--model", default=None, help="default: the embedded SmolLM2")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1, help="ABBA rounds")


def subset(args: argparse.Namespace) -> tuple[DatasetInfo, list[Item]]:
    """The set and its seeded subset of ``args.limit`` items (the harness's, seed 0)."""
    info = dataset_info(args.dataset)
    return info, seeded_subset(load_benchmark(info.name, args.data_dir), args.limit, 0)
