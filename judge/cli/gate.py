"""``judge gate BASELINE CANDIDATE``: is the candidate's mean score at most a tolerated drop below the
baseline's? Two results folders, two rows files, or two groups of one rows file (``--by``); the exit code is
the verdict, for CI (docs/gate.md)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..core.errors import InputError
from ..core.io import atomic_write_text, check_output_path
from . import EXIT_OK

if TYPE_CHECKING:
    from ..report.gate import Side

#: Exit codes of ``judge gate``: 0 pass, 1 fail (the interval lies below the tolerance), 4 inconclusive (it
#: straddles it, or too few conversations); 2 is bad input, as for every command. 3 (some items failed) is
#: left to the commands that score, so that a CI script tells the two apart.
EXIT_FAIL, EXIT_INCONCLUSIVE = 1, 4
EXIT_CODES = {"pass": EXIT_OK, "fail": EXIT_FAIL, "inconclusive": EXIT_INCONCLUSIVE}


def _fields(text: str) -> tuple[str, ...]:
    return tuple(f.strip() for f in text.split(",") if f.strip())


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("gate", help="pass, fail or inconclusive: a candidate's scores against a baseline's, for CI "
                       "(exit 0 pass, 1 fail, 4 inconclusive)")
    p.add_argument("baseline", help="the baseline's rows file or results folder ('judge score -o', 'judge run')")
    p.add_argument("candidate", nargs="?", default=None, help="the candidate's rows file or results folder "
                   "(omitted with --by: both sides are groups of the baseline's file)")
    p.add_argument("--max-drop", type=float, required=True, metavar="D",
                   help="the tolerated drop of the mean, on the score's scale: pass when the interval's lower end "
                   "is at or above -D, fail when the whole interval lies below -D, else inconclusive")
    p.add_argument("--by", type=_fields, default=(), metavar="FIELDS",
                   help="compare two groups of one rows file: the meta fields (e.g. version or model,version) "
                   "whose values --baseline and --candidate pick")
    p.add_argument("--baseline", dest="baseline_value", default=None, metavar="VALUE",
                   help="with --by: the baseline's value(s), comma-separated for several fields")
    p.add_argument("--candidate", dest="candidate_value", default=None, metavar="VALUE",
                   help="with --by: the candidate's value(s)")
    p.add_argument("--quality", action="append", default=[], metavar="Q",
                   help="compare only this quality (repeat or comma-separate; default: every quality both hold)")
    p.add_argument("--lower-is-better", action="append", default=[], metavar="Q",
                   help="a quality where lower is better, so that a rise is the drop (repeat or comma-separate; the "
                   "benchmark sets' negative qualities, such as robotic, are known)")
    p.add_argument("--on", choices=("judge", "human"), default="judge",
                   help="what the verdict reads: the judge's scores (default) or the human ratings beside them")
    p.add_argument("--labels", action="append", default=[], metavar="FILE",
                   help="human labels ('judge label'): once for both sides (item ids distinct), or twice, the "
                   "baseline's then the candidate's; replaces the rows' own 'human' values")
    p.add_argument("--pairing", choices=("auto", "paired", "unpaired"), default="auto",
                   help="auto (default): paired by context when at least half of each side's rows share a context "
                   "with the other side, else unpaired")
    p.add_argument("--pair-on", type=_fields, default=(), metavar="FIELDS",
                   help="the meta fields that name a shared context (with the reply's turn); default: the row id")
    p.add_argument("--per", type=_fields, default=(), metavar="FIELDS",
                   help="also show the deltas per value of these meta fields (reported, not gated)")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="resamples of conversations "
                   "(default: 1000)")
    p.add_argument("--seed", type=int, default=0, help="the bootstrap's seed (default: 0): the same inputs give the "
                   "same verdict")
    p.add_argument("--markdown", default=None, metavar="FILE",
                   help="also write a Markdown table of the deltas here (a pull-request comment)")
    p.add_argument("--format", choices=("text", "md"), default="text", help="what goes to stdout (default: text)")
    return p


def _sides(args: argparse.Namespace) -> tuple[Side, Side]:
    from ..report.gate import Side, read_cells, read_label_means, split_cells

    if len(args.labels) > 2:
        raise InputError("--labels takes one file (both sides) or two (the baseline's, the candidate's)",
                         field="--labels")
    labels = [read_label_means(f) for f in args.labels]
    base_labels = labels[0] if labels else {}
    cand_labels = labels[-1] if labels else {}
    if args.by:
        if args.candidate is not None or args.baseline_value is None or args.candidate_value is None:
            raise InputError("--by compares two groups of one file: give one file, --baseline and "
                             "--candidate", field="--by")
        cells = read_cells(args.baseline)
        base_value, cand_value = _fields(args.baseline_value), _fields(args.candidate_value)
        for value in (base_value, cand_value):
            if len(value) != len(args.by):
                raise InputError(f"--by names {len(args.by)} field(s); each value needs as many", field="--by")
        name = f"{args.baseline} {','.join(args.by)}="
        return (Side(name + ",".join(base_value), split_cells(cells, args.by, base_value, args.baseline), base_labels),
                Side(name + ",".join(cand_value), split_cells(cells, args.by, cand_value, args.baseline), cand_labels))
    if args.candidate is None:
        raise InputError("give a candidate (a rows file or results folder), or --by to compare groups of one file",
                         field="candidate")
    if args.baseline_value is not None or args.candidate_value is not None:
        raise InputError("--baseline and --candidate (values) need --by", field="--by")
    sides = (Side(args.baseline, read_cells(args.baseline), base_labels),
             Side(args.candidate, read_cells(args.candidate), cand_labels))
    if len(labels) == 1:
        ids = [{r.id for rows in side.cells.values() for r in rows} & set(labels[0]) for side in sides]
        if ids[0] & ids[1]:
            raise InputError(f"one labels file for both sides, but both sides hold item {min(ids[0] & ids[1])}: "
                             "give each side its own (--labels twice, the baseline's first)", file=args.labels[0])
    return sides


def run(args: argparse.Namespace) -> int:
    from ..report.gate import GateOptions, gate
    from ..report.gate_text import markdown, text

    if args.markdown:
        check_output_path(args.markdown, "--markdown")
    if args.bootstrap < 1:
        raise InputError("--bootstrap must be at least 1", field="--bootstrap")
    if args.max_drop < 0:
        raise InputError("--max-drop is a drop: 0 or more", field="--max-drop")
    baseline, candidate = _sides(args)
    qualities = tuple(q for text_ in args.quality for q in _fields(text_))
    lower = tuple(q for text_ in args.lower_is_better for q in _fields(text_))
    options = GateOptions(args.max_drop, qualities, args.on, args.pairing, args.pair_on, args.per, lower,
                          args.bootstrap, args.seed)
    result = gate(baseline, candidate, options)
    code = EXIT_CODES[result.verdict]
    table = markdown(result)
    if args.markdown:
        atomic_write_text(args.markdown, table)
    sys.stdout.write(table if args.format == "md" else text(result, code))
    return code
