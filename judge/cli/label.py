"""``judge label INPUT --quality Q --labels FILE``: people rate the input's items in the browser, one label
per line of FILE; ``judge label INPUT --agreement FILE``: how far its raters agree (docs/label.md)."""

from __future__ import annotations

import argparse
import sys

from ..core.errors import InputError
from ..data.qualities import parse_scale
from . import EXIT_OK


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("label", help="rate items in the browser (a page on 127.0.0.1), each label saved at once; "
                       "or report the raters' agreement (--agreement)")
    p.add_argument("input", nargs="?", default=None, metavar="INPUT",
                   help="the items: a data file (users' JSONL, a chat log, a benchmark file) or a registered set's "
                   "name (with --data-dir), as judge score and judge bench read them")
    p.add_argument("--labels", default=None, metavar="FILE", help="the labels JSONL to append to (created if "
                   "missing; a restart resumes from it)")
    p.add_argument("--quality", action="append", default=[], metavar="Q", help="a quality to rate (repeat for "
                   "several; default: the set's overall quality)")
    p.add_argument("--scale", action="append", default=[], metavar="QUALITY=MIN:MAX",
                   help="declare a quality's scale when the data does not (e.g. helpful=1:5)")
    p.add_argument("--rater", default=None, help="the rater's name, filled in on the page (each rater can type "
                   "their own there)")
    p.add_argument("--order", choices=("uniform", "uncertainty"), default="uniform",
                   help="the order items are shown in: uniform at random (default) or drawn with probability "
                   "growing with the judge's uncertainty (needs --rows); each label records its probability")
    p.add_argument("--rows", default=None, metavar="ROWS", help="scored rows of the input (judge score -o, judge "
                   "bench -o): the judge's answer distribution per item for --order uncertainty; only their items "
                   "are labelled")
    p.add_argument("--seed", type=int, default=0, help="seed of the order (default 0); a restart must use the same")
    p.add_argument("--data-dir", default=None, help="folder holding the registered benchmark files (for set names)")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one, printed)")
    p.add_argument("--agreement", default=None, metavar="LABELS",
                   help="instead of serving: report the agreement of LABELS' raters (Krippendorff's alpha per "
                   "quality over the items two or more rated), with an interval over INPUT's conversations")
    return p


def run(args: argparse.Namespace) -> int:
    if args.agreement is not None:
        return _agreement(args)
    if args.input is None or args.labels is None:
        raise InputError("name the items and the labels file: judge label INPUT --labels FILE", field="INPUT")
    if args.rows is not None and args.order != "uncertainty":
        raise InputError("--rows gives the judge's uncertainty: it is for --order uncertainty", field="--rows")
    if args.order == "uncertainty" and args.rows is None:
        raise InputError("--order uncertainty reads the judge's answer distributions from --rows ROWS", field="--rows")
    from ..core.io import check_output_path
    from ..label.setup import open_desk
    from ..view.serve import serve_forever

    check_output_path(args.labels, "--labels")
    scales = dict(parse_scale(text) for text in args.scale)
    desk, title = open_desk(args.input, args.labels, args.quality, scales=scales, data_dir=args.data_dir,
                            order=args.order, rows=args.rows, seed=args.seed)
    from ..label.app import make_label_server

    server = make_label_server(desk, args.rater, title, args.port)
    counts = ", ".join(f"{r}: {len(ids)}" for r, ids in sorted(desk.done_by_rater().items())) or "none yet"
    print(f"label: {len(desk.order.ids)} items of {title}, {desk.order.kind} order, seed {desk.order.seed}; "
          f"labels to {args.labels} (so far {counts})", file=sys.stderr)
    serve_forever(server, "the labelling page")
    return EXIT_OK


def _agreement(args: argparse.Namespace) -> int:
    from ..label.agreement import agreement, agreement_text, input_conversations
    from ..records.labels import read_labels

    conversations = None if args.input is None else input_conversations(args.input, args.data_dir)
    print(agreement_text(agreement(read_labels(args.agreement), conversations, file=args.agreement), args.agreement))
    return EXIT_OK
