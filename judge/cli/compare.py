"""``judge compare``: which system's replies are better, by a pairwise judge reading both orders.

``judge compare FILE`` pairs, within each context, the replies of different ``system`` s of one file (a
DSTC10 set, a log of A/B traffic); ``judge compare A.jsonl B.jsonl`` pairs two files item by item (matching
ids, else matching contexts); ``--dataset NAME`` reads a registered set. It prints the win rate of every
system over every other with its conversation-bootstrap CI and p, the Bradley-Terry ranking, how often the
two orders agree and how far the first position is preferred, and with human ratings how often the judge
sides with the humans beside a pointwise method's score differences on the same pairs (docs/pairwise.md).
The flags translate into a pairwise method spec and pairs; :mod:`judge.engine.compare` runs them.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import nullcontext, suppress
from dataclasses import asdict
from pathlib import Path

from ..accounting.counters import report_counters
from ..core.errors import InputError, UnknownNameError
from ..core.io import atomic_file, atomic_write_text, check_output_path
from ..data.items import Item
from ..data.pairs import Pairing, pairs_between, pairs_within, sample_contexts
from ..data.qualities import Quality
from ..datasets import load_items
from ..datasets.benchmarks import dataset_info
from ..datasets.published_judges import published_judges
from ..datasets.source import resolve_source
from ..datasets.split import split_items
from ..engine import MethodSpec, named_method, prepare, with_runtime
from ..engine.compare import pair_items, point_scores, prepare_pairs
from ..engine.cost import Entry
from ..engine.kinds import method_kinds
from ..engine.session import Session
from ..engine.spec import method_type
from ..methods.pairwise import check_not_spec_default
from ..records.pair_rows import PairRow
from ..records.rows import Row
from ..report.pairwise import anchors_text, text_lines
from ..stats.pairwise import pairwise_entry
from . import EXIT_FAILED_ITEMS, EXIT_OK
from .options import (
    add_check_option,
    add_judge_options,
    add_run_options,
    add_type_options,
    check_counts,
    or_overall,
    parse_scales,
    resolve_quality,
    run_options,
    spec_from_args,
)
from .score import _registered_qualities

#: The pointwise method compared beside the pairwise judge by default (a shipped preset: the criteria prompt).
DEFAULT_AGAINST = "criteria"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("compare", help="which system is better: a pairwise judge on two systems' replies to the "
                       "same contexts, win rates and a ranking with CIs (docs/pairwise.md)")
    p.add_argument("inputs", nargs="*", metavar="FILE",
                   help="one file with several systems' replies per context (field 'system'), or two files, one per "
                   "system, compared item by item (matching ids, else matching contexts); or use --dataset")
    p.add_argument("--data-dir", default=None, help="folder holding the registered benchmark files (--dataset)")
    p.add_argument("--dataset", default=None, help="a registered set with several replies per context (TU, PU, DZ, "
                   "DGU, DGR, EG, or its name)")
    p.add_argument("--split", choices=("dev", "test"), default=None,
                   help="--dataset: compare only this half of the set's conversations")
    p.add_argument("--systems", default=None, metavar="X,Y", help="compare only these systems (one file)")
    p.add_argument("--baseline", default=None, metavar="X", help="compare every system with this one only (one file)")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="compare the pairs of N contexts drawn with a "
                   "seeded RNG (--limit-seed), kept in file order")
    p.add_argument("--limit-seed", type=int, default=0)
    p.add_argument("--against", default=DEFAULT_AGAINST, metavar="METHOD",
                   help="a pointwise method (a shipped preset or one of --methods-file) whose score differences are "
                   f"compared with the human preferences beside the pairwise judge's, run on the same model (default "
                   f"{DEFAULT_AGAINST}: the criteria prompt); 'none' for none. Only when the items carry ratings")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples of conversations (default 1000)")
    p.add_argument("-o", "--output", default=None, help="write one JSON row per pair here (atomically; "
                   "docs/pairwise.md, 'Rows'), the summary beside it in FILE.summary.json")
    add_run_options(p)
    add_judge_options(p)
    add_type_options(p, method_type("pairwise"))
    add_check_option(p, "pairs", "the comparison")
    return p


def run(args: argparse.Namespace) -> int:
    check_counts(args, "limit", "bootstrap")
    if args.output:
        check_output_path(args.output)
    check_not_spec_default(args.prompt, "--prompt")
    spec = spec_from_args(args, default_type="pairwise")
    pairing, quality, where = read_pairs(args)
    for note in pairing.notes:
        print(f"note: {note}", file=sys.stderr)
    pairs = sample_contexts(pairing.pairs, args.limit, args.limit_seed)
    prep = prepare_pairs(spec, pairs, quality)
    quality = prep.quality
    items = pair_items(pairs)
    against = against_spec(args, spec, items, quality)
    point = prepare(against, items, quality) if against is not None else None
    # What the run will ask, as the engine replays it: the pairs, then the pointwise method on their replies.
    entries = [Entry(f"{spec.name} ({len(pairs)} pairs)", prep, pairs)]
    if point is not None:
        entries.append(Entry(f"{point.spec.name} ({len(items)} items)", point, items))
    groups = [[e] for e in entries]
    session = Session(run_options(args))
    if args.check:
        for line in session.check(groups):
            print(line)
        return EXIT_OK
    qn = quality.name if quality else None
    rows: list[PairRow] = []
    pointwise = None
    with session.plan(groups):
        bar = session.bar(len(pairs), "comparing", "pair")
        with atomic_file(args.output) if args.output else nullcontext() as f:  # -o: rows stream into the file
            sinks = [rows.append] + ([lambda row: f.write(row.to_json() + "\n")] if f is not None else [])
            failed = session.rows(prep, pairs, *sinks, progress=bar.update, quality=qn)
        bar.close()
        if point is not None:
            scored: list[Row] = []
            session.rows(point, items, scored.append, quality=qn)
            pointwise = point_scores(pairs, items, scored)
        report_counters(session.counters())
    entry = pairwise_entry(rows, name=spec.name, dataset=where, abbrev=None, quality=qn, method_name=spec.name,
                           spec=spec.describe(), settings=spec.kind.settings_text(spec.describe()),
                           kind=method_kinds(spec, quality).to_dict(), pointwise=pointwise,
                           pointwise_name=against.name if against else None, n_boot=args.bootstrap)
    for line in text_lines(entry) + anchors_text(entry, published_judges(where)):
        print(line)
    if args.output:
        atomic_write_text(Path(args.output).with_suffix(".summary.json"),
                          json.dumps(entry, indent=1, ensure_ascii=False) + "\n")
    if failed:
        print(f"judge: {failed} of {len(pairs)} pairs failed (see 'error' in the rows)", file=sys.stderr)
        return EXIT_FAILED_ITEMS
    return EXIT_OK


def read_pairs(args: argparse.Namespace) -> tuple[Pairing, Quality | None, str]:
    """The pairs the arguments name, the quality to ask about and read ratings of, and what they come from."""
    systems = [s.strip() for s in args.systems.split(",") if s.strip()] if args.systems else None
    if args.dataset:
        if args.inputs:
            raise InputError("name the data once: files, or --dataset NAME", field="--dataset")
        src = resolve_source(dataset_info(args.dataset).name, args.data_dir, quality=args.quality,
                             scales=parse_scales(args))
        items = split_items(list(src.items), args.split)
        return (pairs_within(items, file=src.info.name, systems=systems, baseline=args.baseline), src.quality,
                src.info.name)
    if args.split:
        raise InputError("halves are those of a registered set: use --dataset NAME with --split", field="--split")
    if len(args.inputs) == 1:
        items = load_items(args.inputs[0])
        quality = _quality(args, items, args.inputs[0])
        return pairs_within(items, file=args.inputs[0], systems=systems, baseline=args.baseline), quality, args.inputs[0]
    if len(args.inputs) == 2:
        if systems or args.baseline:
            raise InputError("two files are two systems: --systems and --baseline choose among the systems of one file",
                             field="--systems" if systems else "--baseline")
        a, b = (load_items(f) for f in args.inputs)
        quality = _quality(args, [*a, *b], args.inputs[0])
        return pairs_between(a, b, file_a=args.inputs[0], file_b=args.inputs[1]), quality, " vs ".join(args.inputs)
    raise InputError(f"expects one file or two (or --dataset NAME), got {len(args.inputs)}", field="inputs")


def _quality(args: argparse.Namespace, items: list[Item], file: str) -> Quality | None:
    """``--quality``, else a registered set's overall quality (a benchmark file given by path), else
    ``overall`` when the items are rated for it, else none."""
    name = args.quality
    if name is None and items and items[0].dataset:
        with suppress(UnknownNameError):  # a set given by path: no registered overall quality
            name = dataset_info(items[0].dataset).overall
    return resolve_quality(or_overall(name, items), items, _registered_qualities(file, items), parse_scales(args))


def against_spec(args: argparse.Namespace, spec: MethodSpec, items: list[Item], quality: Quality | None
                 ) -> MethodSpec | None:
    """The pointwise method beside the pairwise judge, on its model and runtime (None: ``--against none``, or
    no item rated for the quality, so that there is no human preference to agree with)."""
    if args.against.lower() == "none" or quality is None or not any(it.human(quality.name) is not None for it in items):
        return None
    base = named_method(args.against, args.methods_file)
    return with_runtime(base, backend=spec.backend, model=spec.model, options=spec.options,
                        generate=asdict(spec.generate))

