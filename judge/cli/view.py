"""``judge view RUN_DIR [RUN_DIR ...]``: the runs' items, prompts and statistics in one HTML file."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..core.errors import InputError
from ..core.io import atomic_write_text, check_output_path
from ..records.results import VIEW_FILE
from ..records.summary import read_summary
from ..report import render_html
from . import EXIT_OK


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("view", help="look at what the judge did: a run's items, prompts and statistics in the browser")
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="results folders written by judge run or judge bench "
                   "--results (two or more: shown side by side)")
    p.add_argument("-o", "--output", default=None, help=f"the HTML file to write (default with one folder: "
                   f"RUN_DIR/{VIEW_FILE}, which its leaderboard.html links to)")
    p.add_argument("--data-dir", default=None, help="folder holding the registered benchmark files (default: the "
                   "run's data_dir, read from the working directory)")
    p.add_argument("--title", default=None, help="the page's title (default: the runs' names)")
    p.add_argument("--serve", action="store_true", help="then serve the file on 127.0.0.1 and print its address "
                   "(Ctrl-C stops)")
    p.add_argument("--port", type=int, default=0, help="port for --serve (default: a free one)")
    return p


def run(args: argparse.Namespace) -> int:
    from ..view import from_results, write_view

    for run_dir in args.runs:
        read_summary(run_dir)  # a folder that is not a run (or a summary that is not one) is named before any work
    if args.output is None and len(args.runs) > 1:
        raise InputError("several results folders: name the file to write with -o", field="--output")
    output = Path(args.output) if args.output else Path(args.runs[0]) / VIEW_FILE
    check_output_path(output)
    view = from_results(args.runs, data_dir=args.data_dir, title=args.title)
    write_view(view, output)
    for run_dir in args.runs:
        try:
            link_leaderboard(Path(run_dir), output)
        except OSError as exc:  # a folder one may read but not write: the view is written all the same
            print(f"judge: note: {run_dir}/leaderboard.html not linked to the view: {exc.strerror or exc}",
                  file=sys.stderr)
    rows = sum(len(c.rows) for c in view.cells)
    print(f"view: {output} ({len(view.cells)} cells, {rows} rows)", file=sys.stderr)
    for note in (n for r in view.runs for n in r.notes):
        print(f"judge: note: {note}", file=sys.stderr)
    if args.serve:
        from ..view.serve import serve

        serve(output, args.port)
    return EXIT_OK


def link_leaderboard(run_dir: Path, view: Path) -> None:
    """Render the folder's leaderboard.html again, now linking to the view."""
    target = Path(os.path.relpath(view.resolve(), run_dir.resolve())).as_posix()
    atomic_write_text(run_dir / "leaderboard.html", render_html(read_summary(run_dir), view=target))
