"""``judge report RESULTS_DIR``: re-render the leaderboards, CSV and plots from saved results."""

from __future__ import annotations

import argparse

from ..records.summary import read_summary
from ..report import render_all, render_markdown
from . import EXIT_OK


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("report", help="re-render reports of a results folder (no scoring)")
    p.add_argument("results_dir", help="folder written by 'judge run'")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots (no matplotlib needed)")
    p.add_argument("--print", action="store_true", help="also print the Markdown leaderboard")
    return p


def run(args: argparse.Namespace) -> int:
    summary = read_summary(args.results_dir)
    for path in render_all(args.results_dir, None, plots=not args.no_plots):
        print(path)
    if args.print:
        print(render_markdown(summary))
    return EXIT_OK
