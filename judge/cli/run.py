"""``judge run CONFIG``: run (or resume) an experiment grid and write its results folder."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from ..accounting.counters import report_counters
from ..harness import load_experiment, run_experiment
from . import EXIT_FAILED_ITEMS, EXIT_OK
from .options import add_run_options, check_counts, run_options


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("run", help="run an experiment config (datasets x qualities x methods); resumable")
    p.add_argument("config", help="experiment TOML file (see docs/harness.md)")
    p.add_argument("--limit", type=int, default=None, help="score a seeded subset of N items per set")
    p.add_argument("--data-dir", default=None, help="folder holding the benchmark files (overrides data_dir)")
    p.add_argument("-o", "--output", default=None, help="results folder (overrides output)")
    p.add_argument("--backend", default=None, help="run every LLM method on this backend")
    p.add_argument("--model", default=None, help="run every LLM method with this model")
    p.add_argument("--threads", type=int, default=None, help="CPU threads for local backends")
    p.add_argument("--datasets", default=None, metavar="A,B", help="run only these of the config's sets "
                   "(names or abbreviations, comma-separated)")
    p.add_argument("--methods", default=None, metavar="A,B", help="run only these of the config's methods "
                   "(names, comma-separated; an ensemble still reads its members through the cache)")
    p.add_argument("--split", choices=("dev", "test"), default=None,
                   help="score only this half of each set's conversations (overrides split): choose methods on "
                   "dev, report on test")
    add_run_options(p)
    p.add_argument("--check", action="store_true", help="validate the config and every cell against its data "
                   "(templates, manual sets, scales), list the cells and what each will cost: prompt tokens after prefix "
                   "reuse (the model's vocabulary is read, no weights) and the time at this machine's measured rate "
                   "(measured once per model and settings, refreshed by runs)")
    return p


def run(args: argparse.Namespace) -> int:
    check_counts(args, "limit")
    exp = load_experiment(args.config).with_overrides(
        limit=args.limit, data_dir=args.data_dir, output=args.output, backend=args.backend, model=args.model,
        threads=args.threads, datasets=args.datasets.split(",") if args.datasets else None, split=args.split,
        methods=args.methods.split(",") if args.methods else None)
    options = run_options(args, exp.ray)
    exp = replace(exp, ray=options.ray)
    if args.check:
        from ..harness.cost import print_check

        print_check(exp)
        return EXIT_OK
    summary = run_experiment(exp, progress=options.progress)
    report_counters(summary.counters)
    failed = sum(r.n_failed for r in summary.results)
    failed_pairs = sum(e["n_failed"] for e in summary.pairwise or ())
    compared = f", {len(summary.pairwise)} compare cells, {failed_pairs} failed pairs" if summary.pairwise else ""
    print(f"results: {exp.output}/leaderboard.md ({len(summary.cells)} cells, {failed} failed items{compared}, "
          f"{summary.wall_s or 0:.0f} s)", file=sys.stderr)
    if failed or failed_pairs:
        print(f"judge: {failed} items and {failed_pairs} pairs failed (see 'error' in {exp.output}/items/ and "
              f"compare/); rerun to retry them", file=sys.stderr)
        return EXIT_FAILED_ITEMS
    return EXIT_OK
