"""``judge score INPUT``: one JSON line per item (the row schema of judge.records.rows); on a terminal, a
table of the rows and a summary instead (:mod:`judge.cli.score_table`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

from tqdm import tqdm

from ..accounting.counters import report_counters
from ..core.errors import InputError, UnknownNameError
from ..core.io import atomic_file, atomic_write_text, check_output_path
from ..data.items import Item
from ..datasets import chat, check_scale, load_items
from ..datasets._common import dataset_name
from ..datasets.benchmarks import dataset_info
from ..datasets.jsonl import JsonlScan, scan
from ..engine import MethodSpec, Prepared, prepare
from ..engine.cost import Entry
from ..engine.kinds import scorer_kinds
from ..engine.session import Session
from ..records.rows import Row
from ..scorers.base import Scorer
from ..stats.by_group import ByGroup
from . import EXIT_FAILED_ITEMS, EXIT_OK
from .input_options import add_input_options, input_options
from .options import (
    add_check_option,
    add_judge_options,
    add_run_options,
    add_view_option,
    check_counts,
    or_overall,
    parse_scales,
    resolve_quality,
    run_options,
    spec_from_args,
)
from .score_table import ScoreTable
from .summarize import GroupOutputs, add_group_options, check_folder, group_fields, rendered, write_summary


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("score", help="score the items of a file (JSONL or a benchmark file)")
    p.add_argument("input", help="items file: users' JSONL (see docs/data-format.md), a chatbot's log "
                   "(docs/chat-logs.md) or a benchmark file")
    p.add_argument("-o", "--output", default=None, help="write JSONL here (atomically) instead of stdout")
    p.add_argument("--limit", type=int, default=None, help="score only the first N items (examples are still "
                   "drawn from the whole file)")
    p.add_argument("--format", choices=("table", "jsonl"), default=None,
                   help="what goes to stdout: table (a table of id, score, most likely label and human rating, and "
                   "a summary with Spearman against the human ratings) or jsonl (one JSON row per item). Default: "
                   "table on a terminal without -o, else jsonl; -o always writes JSONL to the file")
    add_input_options(p)
    add_run_options(p)
    add_view_option(p)
    add_judge_options(p)
    add_check_option(p, "file", "scoring")
    add_group_options(p)
    p.add_argument("--summary", default=None, metavar="DIR", help="with --by: also write the summary as Markdown, "
                   "HTML and CSV into this folder")
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
    check_counts(args, "limit")
    for path, flag in ((args.output, "--output"), (args.view, "--view")):
        if path:
            check_output_path(path, flag)
    check_folder(args.summary, "--summary")
    if args.summary and not args.by:
        raise InputError("--summary writes the summary of --by: name the fields to group by", field="--summary")
    group_fields(args)
    if args.by and args.level == "both":
        raise InputError("a mean over replies and whole conversations together says nothing: summarise one level "
                         "at a time (--level turn or dialog)", field="--by")
    spec = spec_from_args(args)
    session = Session(run_options(args))
    reading = input_options(args)
    # --view shows the conversations of the file's items beside their rows: it reads the whole file.
    if not args.check and not args.view and spec.kind.streams(spec):
        found = _scan(args.input, reading)
        if found is not None:
            return run_streaming(args, spec, session, found)
    all_items = load_items(args.input, **reading)
    items = all_items[: args.limit] if args.limit is not None else all_items
    quality = resolve_quality(or_overall(args.quality, items), items, _registered_qualities(args.input, items),
                              parse_scales(args))
    if quality is not None and (args.quality is not None or (args.k or 0) > 0):
        # The scale is in use (asked for, or it turns example ratings into labels): refuse values off it.
        check_scale(items, quality, file=args.input)
    # The example pool is the whole file (rated items), whatever --limit keeps for scoring; so are the
    # replies a listwise prompt compares.
    prep = prepare(spec, items, quality, pool=all_items, population=all_items)
    groups = [[Entry(spec.name, prep, items)]]
    if args.check:
        for line in session.check(groups):
            print(line)
        return EXIT_OK
    qn = prep.quality.name if prep.quality else None
    return score_items(args, spec, prep, items, len(items), [it.id for it in items],
                       qn is not None and any(it.human(qn) is not None for it in items), session.plan(groups),
                       all_items)


#: Items checked together before the model loads, when a file streams (their templates rendered once).
CHECK_CHUNK = 5_000


def _scan(path: str, reading: dict[str, Any]) -> JsonlScan | chat.ChatScan | None:
    """A first pass over a file that streams (users' JSONL, a chat log), None for one that does not."""
    fmt = reading["format"]
    log = fmt if fmt in chat.CHAT_FORMATS else None if fmt is not None else chat.sniff(path, columns=reading["columns"])
    if log is not None:
        return chat.scan(path, log, dataset_name(path), reading["level"], reading["columns"])
    if fmt in (None, "jsonl") and Path(path).suffix.lower() == ".jsonl":
        return scan(path)
    return None


def run_streaming(args: argparse.Namespace, spec: MethodSpec, session: Session,
                  found: JsonlScan | chat.ChatScan) -> int:
    """``judge score`` of a JSONL file through a method that scores each item from the item alone
    (``MethodType.streams``): the file is read three times instead of held. A first pass checks every
    record and finds what the whole file decides (scale declarations, conversation groups: ``scan``), a
    second checks every item against the method before the model loads (scales, templates), and the third
    streams the items to the scorer while the rows stream to the output; what the table's summary needs
    is kept per row as a tuple. The rows are the ones of the whole-file path, byte for byte. A spending cap
    or a batch of the requests the cache lacks is counted in the second pass, a chunk at a time."""
    limit = args.limit

    def items() -> Iterator[Item]:
        return islice(found.items(), limit)

    quality = resolve_quality(or_overall(args.quality, found.samples), found.samples, (), parse_scales(args))
    prep: Prepared | None = None
    total = width = 0
    rated = False
    it = items()
    while chunk := list(islice(it, CHECK_CHUNK)):
        if quality is not None and (args.quality is not None or (args.k or 0) > 0):
            check_scale(chunk, quality, file=args.input)
        checked = prepare(spec, chunk, quality)
        prep = prep or checked
        session.plan([[Entry(spec.name, prep, chunk)]])  # --max-cost, --batch: counted a chunk at a time
        total += len(chunk)
        width = max([width, *(len(x.id) for x in chunk)])
        shown = checked.quality  # the quality rows report: asked for, or the prompt's own
        rated = rated or (shown is not None and any(x.human(shown.name) is not None for x in chunk))
    assert prep is not None  # the scan found at least one record
    return score_items(args, spec, prep, items(), total, ["x" * width], rated, session)


def score_items(args: argparse.Namespace, spec: MethodSpec, prep: Prepared, items: Iterable[Item], total: int,
                ids: Sequence[str], rated: bool, session: Session, all_items: Sequence[Item] = ()) -> int:
    """Run the planned ``session`` (here, or on a Ray cluster's actors; its batches sent first): score ``items``
    (``total`` of them) into what ``args`` asks for (-o file, table, JSONL on stdout), report the backend's
    counters; the exit code. ``ids`` size the table's id column, ``rated`` says whether it shows human ratings;
    ``all_items`` are the file's items, which ``--view`` shows."""
    qn = prep.quality.name if prep.quality else None
    row_seed = prep.seed if spec.kind.records_seed else None
    with session, GroupOutputs(args) as grouped:
        extra = grouped.add if grouped.active else None
        scorer = session.build(prep)
        bar = session.bar(total, "scoring", "item")
        table = None
        if output_format(args) == "table":
            table = ScoreTable(ids, rated, lambda line: tqdm.write(line, file=sys.stdout))
            table.header()
        kept: list[Row] = []  # the rows, for --view
        keep = kept.append if args.view else None
        # -o: rows stream into a temp file beside the target, renamed over it only when every item is
        # done (memory stays flat; a failed run leaves no file at the target path).
        if args.output:
            with atomic_file(args.output) as f:
                failed = session.rows(prep, items, lambda row: f.write(row.to_json() + "\n"),
                                      table.add if table else None, keep, extra, progress=bar.update, quality=qn,
                                      seed=row_seed, judge=scorer)
            write_meta(args.output, spec, scorer, session.counters())
        else:
            show = table.add if table is not None else lambda row: print(row.to_json(), flush=True)
            failed = session.rows(prep, items, show, keep, extra, progress=bar.update, quality=qn, seed=row_seed,
                                  judge=scorer)
        bar.close()
        if args.view:
            from ..view import from_scored, write_view

            write_view(from_scored(spec, prep, kept, all_items, scorer.prompt_settings(),
                                   scorer_kinds(scorer).to_dict(), args.input), args.view)
        if table is not None:
            table.summary()
        report_counters(session.counters())
    print_groups(args, grouped.summary())
    if failed:
        print(f"judge: {failed} of {total} items failed (see 'error' in the output)", file=sys.stderr)
        return EXIT_FAILED_ITEMS
    return EXIT_OK


def print_groups(args: argparse.Namespace, result: ByGroup | None) -> None:
    """``--by``'s summary: on stdout, or on stderr when stdout carries the rows; with ``--summary``, its files
    too (linking the ``--view`` page)."""
    if result is None:
        return
    if args.summary:
        write_summary(result, args.summary, args.view)
    text = rendered(result, "markdown", args.view)
    if output_format(args) == "jsonl" and not args.output:
        print("\n" + text, end="", file=sys.stderr)
    else:
        print("\n" + text, end="")


def output_format(args: argparse.Namespace) -> str:
    """``--format``, else a table for a person at a terminal and JSONL for a pipe, a file or ``-o``."""
    if args.format is not None:
        return str(args.format)
    return "table" if not args.output and sys.stdout.isatty() else "jsonl"


def write_meta(output: str, spec: MethodSpec, scorer: Scorer, counters: dict[str, int] | None = None) -> None:
    """``OUTPUT.meta.json`` beside a scores file: the method spec, the scorer's resolved settings and
    its kind (reference-free, reference-based, uses-future or supervised on the scored set), from what
    the scorer declares it reads and how it learns its weights; with a hosted API, what this run used and
    what it cost (``usage``, ``cost_usd``: priced from the usage the server reported)."""
    meta: dict[str, object] = {"method": spec.name, "spec": spec.describe(), "scorer": scorer.describe(),
                               "kind": scorer_kinds(scorer).to_dict()}
    fitted = scorer.fitted()
    if fitted is not None:
        meta["fitted"] = fitted
    if counters and "requests" in counters:
        meta["usage"] = dict(counters)
        if "cost_micro_usd" in counters:
            meta["cost_usd"] = counters["cost_micro_usd"] / 1_000_000
    atomic_write_text(Path(output).with_suffix(".meta.json"), json.dumps(meta, indent=1, default=str) + "\n")
