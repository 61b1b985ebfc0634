"""``judge bench``: one method on one benchmark set, as a one-cell run of the ``judge run`` engine.

It prints n, Spearman / Pearson / Kendall with p-values and the 95% bootstrap CI, failures and
seconds per item; ``-o`` writes the per-item rows, byte for byte what ``judge run`` writes in the
cell file of the same settings.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path

from ..accounting.counters import report_counters
from ..core.errors import InputError
from ..core.io import atomic_file, check_output_path
from ..datasets.benchmarks import dataset_info
from ..datasets.source import resolve_source
from ..engine import prepare
from ..engine.kinds import kind_text
from ..engine.spec import method_type
from ..harness.config import DatasetSpec, Experiment
from ..harness.runner import run_experiment
from ..records.results import cell_path
from ..records.rows import read_rows
from ..records.summary import Corr, Stats, Summary, WithoutCopies
from ..report.table import p_text
from ..stats.floor import MIN_CONVERSATIONS, too_few_text
from . import EXIT_FAILED_ITEMS, EXIT_OK
from .options import (
    add_check_option,
    add_judge_options,
    add_run_options,
    add_view_option,
    check_counts,
    parse_scales,
    run_options,
    spec_from_args,
)
from .score_table import fmt, fmt_p


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("bench", help="correlate a judge with human ratings: a registered set or any rated file")
    p.add_argument("source", nargs="?", default=None,
                   help="a rated file to benchmark (users' JSONL, a DSTC10/FED/USR/Gupta file), or a registered "
                        "set's name; or use --dataset")
    p.add_argument("--data-dir", default=None, help="folder holding the registered benchmark files "
                   "(e.g. ../shared/data); needed for set names")
    p.add_argument("--dataset", default=None, help="registered set name: file stem without _eval (fed-turn, "
                   "topical-usr, persona-zhao, ...) or abbreviation (FT, TU, PZ, ...)")
    p.add_argument("--as", dest="as_name", default=None, metavar="NAME",
                   help="name a file's set in the output (default: the file stem without _eval)")
    p.add_argument("--limit", type=int, default=None,
                   help="score a seeded random subset of N items (file order kept; --limit-seed)")
    p.add_argument("--limit-seed", type=int, default=0)
    p.add_argument("--split", choices=("dev", "test"), default=None,
                   help="score only this half of the set's conversations (choose on dev, report on test)")
    p.add_argument("--labels", default=None, metavar="FILE",
                   help="take the human ratings of the quality from this labels file (judge label) instead of the "
                        "data: only the items it names are rated, each by its raters' latest labels (docs/label.md)")
    p.add_argument("-o", "--output", default=None, help="also write per-item JSONL here")
    p.add_argument("--results", default=None, metavar="DIR",
                   help="keep the run's results folder here (resumable, as `judge run` writes it); default: a "
                        "temporary folder")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the CI (default 1000)")
    p.add_argument("--seeds", default=None, help="comma-separated selection seeds, one run each, e.g. 0,1,2 "
                   "(default for --selector random: 3 seeds from --seed, else --seed); prints mean and sd")
    add_run_options(p)
    add_view_option(p)
    add_judge_options(p)
    add_check_option(p, "set", "the run")
    return p


def parse_seeds(args: argparse.Namespace) -> tuple[int, ...]:
    """Seeds to run: --seeds, else 3 consecutive seeds for random selection, else --seed."""
    if args.seeds:
        try:
            seeds = tuple(int(x) for x in args.seeds.split(",") if x.strip())
        except ValueError:
            raise InputError(f"--seeds must be comma-separated integers, got {args.seeds!r}", field="seeds") from None
        if not seeds:
            raise InputError("--seeds is empty", field="seeds")
        return seeds
    base = args.seed if args.seed is not None else 0
    if args.selector == "random" and (args.k or 0) > 0 and args.seed is None:
        return (base, base + 1, base + 2)
    return (base,)


def run(args: argparse.Namespace) -> int:
    check_counts(args, "limit", "bootstrap")
    for path, flag in ((args.output, "--output"), (args.view, "--view")):
        if path:
            check_output_path(path, flag)
    spec = spec_from_args(args, parse_seeds(args))
    target = args.source or args.dataset
    if target is None or (args.source and args.dataset):
        raise InputError("name one set: a file or set name as the argument, or --dataset NAME", field="source")
    if args.dataset:
        target = dataset_info(args.dataset).name  # --dataset is a registered name: suggest the closest on a typo
    src = resolve_source(target, args.data_dir, name=args.as_name, quality=args.quality, scales=parse_scales(args))
    if args.labels:
        from ..label.ratings import labelled_source

        src = labelled_source(src, args.labels)
    info, quality, items = src.info, src.quality, list(src.items)
    # Every problem (a missing input, a template error, a manual id) is named now, with its record.
    prepare(spec, [it for it in items if it.human(quality.name) is not None], quality)
    with tempfile.TemporaryDirectory(prefix="judge-bench-") as tmp:
        dataset = DatasetSpec(info.name, (quality.name,), info=info, source=src)
        exp = Experiment(path="judge bench", name=f"bench-{info.name}", data_dir=args.data_dir or ".",
                         output=args.results or tmp, limit=args.limit, limit_seed=args.limit_seed, datasets=(dataset,),
                         methods=(spec,), bootstrap=args.bootstrap, seed=0, retry_failed=False, split=args.split,
                         ray=run_options(args).ray)
        if args.check:
            from ..harness.cost import print_check

            print_check(exp)
            return EXIT_OK
        summary = run_experiment(exp, plots=False, progress=run_options(args).progress)
        rows = [r for seed in spec.run_seeds() for r in read_rows(_cell(exp, seed))]
        if args.output:
            _copy_rows(exp, args.output)
        if args.view:
            from ..view import from_results, write_view

            write_view(from_results([exp.output], experiment=exp), args.view)
    rated = sum(it.human(quality.name) is not None for it in items)
    print_summary(summary, info.abbrev, len(items) - rated, rated)
    if args.labels:
        print(f"labels    the human ratings are {args.labels}'s (each rater's latest label, averaged per item), "
              "not the data's")
    k, pool = spec.kind.examples(spec)
    if k:
        used = [len(r.examples) for r in rows]
        print(f"examples  {statistics.fmean(used):.2f} shown per item on average (k {k}); "
              f"{sum(u < k for u in used)} item-runs had fewer (context window or small pool); "
              f"pool: {pool or summary.experiment['example_pool']}")
    report_counters(summary.counters)
    return EXIT_FAILED_ITEMS if any(c.stats.n_failed for c in summary.cells) else EXIT_OK


def _cell(exp: Experiment, seed: int) -> Path:
    method, ds = exp.methods[0], exp.datasets[0]
    return cell_path(Path(exp.output), method.name, ds.name, ds.qualities[0], seed)


def _copy_rows(exp: Experiment, output: str) -> None:
    """The cell files of every seed, concatenated in seed order, written atomically to ``output``."""
    with atomic_file(output, "wb") as out:
        for seed in exp.methods[0].run_seeds():
            with open(_cell(exp, seed), "rb") as f:
                shutil.copyfileobj(f, out)


def print_summary(summary: Summary, abbrev: str, unrated: int, rated: int) -> None:
    """The bench report: settings, counts, correlations with p and CI per seed, seed mean ± sd, timing."""
    name, spec = next(iter(summary.methods.items()))
    cells = summary.cells
    first = cells[0]
    how = method_type(spec["type"]).settings_text(spec)
    if len(cells) > 1 or spec.get("selector") == "random":
        how += f", seeds {','.join(str(c.seed) for c in cells)}"
    failed = sum(c.stats.n_failed for c in cells)
    print(f"dataset   {first.dataset} ({abbrev}), quality {first.quality}, method {name}: {how}")
    print(f"kind      {kind_text(spec)}")
    print(f"items     {first.stats.n_items} scored of {rated} rated ({unrated} without a rating skipped), "
          f"{failed} failed" + (f" (over {len(cells)} runs)" if len(cells) > 1 else "")
          + (f"; {split} half of the conversations" if (split := summary.experiment.get("split")) else ""))
    without = next((r.without_copies for r in summary.results), None)
    for i, c in enumerate(cells):
        if len(cells) > 1:
            print(f"seed {c.seed}")
        print_correlations(c.stats, without if i == 0 else None)
    if len(cells) > 1:
        for key in ("spearman", "pearson", "kendall"):
            vals = [v for c in cells if (v := _corrs(c.stats)[key].value) is not None]
            if len(vals) > 1:
                print(f"{key:<9} mean {statistics.fmean(vals):.3f} ± {statistics.stdev(vals):.3f} (sample sd over "
                      f"{len(vals)} seeds)")
    wall = summary.wall_s or 0.0
    t = summary.timing.get(name)
    if t is None:  # every row was already saved in the output folder
        print(f"time      {wall:.1f} s wall, no row computed")
        return
    rss = "" if t["peak_rss_mib"] is None else f", peak RSS {t['peak_rss_mib']:.0f} MiB"
    print(f"time      {wall:.1f} s wall: {t['s_per_item']:.3f} s/item over {t['rows']} rows, model load "
          f"{t['load_s']:.1f} s; cache {t['cache_hits']} hits, {t['cache_misses']} misses{rss}")


def _corrs(cell: Stats) -> dict[str, Corr]:
    return {"spearman": cell.spearman, "pearson": cell.pearson, "kendall": cell.kendall}


def print_correlations(cell: Stats, without_copies: WithoutCopies | None = None) -> None:
    """The n / Spearman (with its CI and bootstrap p) / Pearson / Kendall lines of one cell. Spearman's
    significance is the conversation bootstrap's (the CI's unit; ``< 1/n_boot`` at its floor); Pearson
    and Kendall keep scipy's item-level p. A reference-based cell adds its value without the items
    whose response is (nearly) a reference."""
    ci = cell.ci
    unit = "conversations" if ci.unit == "group" else "items"
    print(f"n         {cell.spearman.n} items, {ci.n_units} {unit}")
    few = ci.few
    if few is not None:  # below the floor: values alone, no interval, no p, nothing called significant
        for key, c in _corrs(cell).items():
            print(f"{key:<9} {fmt(c.value)}  {too_few_text(few)}: no interval and no p below "
                  f"{MIN_CONVERSATIONS} (not significant)")
        if without_copies is not None:
            print(f"without   reference copies ({without_copies.n_left_out} items left out): spearman "
                  f"{fmt(without_copies.spearman)}, n {without_copies.n} items, {too_few_text(few)}")
        return
    for key, c in _corrs(cell).items():
        line = f"{key:<9} {fmt(c.value)}  p={fmt_p(c.p)}"
        p = c.p
        if key == "spearman":
            p = ci.p
            line += (f" (item-level), bootstrap p {p_text(p, ci.n_boot, ci.n_degenerate)}"
                     f"  95% CI [{fmt(ci.low)}, {fmt(ci.high)}] ({ci.n_boot} bootstrap resamples of "
                     f"{ci.n_units} {unit}" + (f", {ci.n_degenerate} degenerate" if ci.n_degenerate else "") + ")")
        if p is None or p >= 0.05:
            line += " (not significant, p >= 0.05)"
        print(line)
    if without_copies is not None:
        w = without_copies
        few = w.ci.few
        interval = (too_few_text(few) if few is not None else f"95% CI [{fmt(w.ci.low)}, {fmt(w.ci.high)}], "
                    f"bootstrap p {p_text(w.ci.p, w.ci.n_boot, w.ci.n_degenerate)}")
        print(f"without   reference copies ({w.n_left_out} items whose response is (nearly) a reference left "
              f"out): spearman {fmt(w.spearman)}  {interval}, n {w.n} items, {w.ci.n_units} {unit}")
