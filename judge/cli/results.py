"""``judge results collect|render|check``: the published results page from committed run summaries."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..core.io import atomic_write_text
from ..harness import load_experiment
from . import EXIT_OK

#: Exit code of ``judge results check`` when a generated file differs from what ``render`` would write.
EXIT_DIFFERS = 1


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("results", help="collect run summaries and render docs/results.md from them")
    verbs = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    c = verbs.add_parser("collect", help="write the small summary of a 'judge run' folder to benchmarks/results/")
    c.add_argument("run_dir", help="folder written by 'judge run'")
    c.add_argument("--name", required=True, help="the run's name: benchmarks/results/NAME.json")
    c.add_argument("--allow-mock", action="store_true", help=argparse.SUPPRESS)  # tests only: never published
    c.add_argument("--command", default=None, help="the command that regenerates the run (default: rebuilt "
                   "from its config; needed when the run overrode a method's model or backend)")
    c.add_argument("--data-dir", default="../shared/data", help="where the Reliable-Eval files are, for a run "
                   "with a Reliable-Eval set: its system-level table (judge results system) is kept too "
                   "(default: ../shared/data)")
    r = verbs.add_parser("render", help="write docs/results.md, judge/models/models_quality.json and "
                         "README.md's figures from every committed summary")
    k = verbs.add_parser("check", help="exit 1 when those files differ from what render would write")
    s = verbs.add_parser("system", help="Reliable-Eval's system-level correlations of a 'judge run' folder, with the "
                         "quality-control bot's rank and the human run-1 vs run-2 ceiling")
    s.add_argument("run_dir", help="folder written by 'judge run' on a Reliable-Eval set")
    s.add_argument("--data-dir", default="../shared/data", help="where the Reliable-Eval files are (the ceiling "
                   "reads both free-topic runs; default: ../shared/data)")
    s.add_argument("--bootstrap", type=int, default=1000, help="resamples of the conversations (default: 1000)")
    for verb in (c, r, k):
        verb.add_argument("--root", default=".", help="repository root holding benchmarks/results/ and docs/ "
                          "(default: .)")
    return p


def run(args: argparse.Namespace) -> int:
    from ..report import published
    from ..report import results_page as page

    if args.action == "system":
        from ..report import system_level

        print(system_level.markdown(system_level.system_rows(args.run_dir, args.data_dir, n_boot=args.bootstrap)),
              end="")
        return EXIT_OK
    root = Path(args.root)
    if args.action == "collect":
        summary = page.collect(args.run_dir, args.name, load_config=load_experiment, root=root, command=args.command,
                               allow_mock=args.allow_mock, system_level=_system_level(args.run_dir, args.data_dir))
        print(page.write_summary(summary, root / page.SUMMARY_DIR))
        if unlisted := page.unlisted_cells(args.run_dir):
            print(f"judge: note: {len(unlisted)} cells of the folder are not in its summary and were left out "
                  f"({', '.join(unlisted[:4])}{', ...' if len(unlisted) > 4 else ''}): an earlier run wrote them; "
                  "run the config once whole (it scores nothing already saved), then collect", file=sys.stderr)
        return EXIT_OK
    if args.action == "render":
        for path, text in published.rendered(page.load_summaries(root / page.SUMMARY_DIR),
                                             page.load_history(root), root).items():
            atomic_write_text(root / path, text)
            print(root / path)
        return EXIT_OK
    diff = published.differs(root)
    if diff:
        sys.stdout.writelines(diff)
        print("judge: the generated files differ from the committed summaries; run 'judge results render'",
              file=sys.stderr)
        return EXIT_DIFFERS
    return EXIT_OK


def _system_level(run_dir: str, data_dir: str) -> list[dict[str, object]] | None:
    """Reliable-Eval's system-level rows of a run, as its committed summary keeps them (None without a
    Reliable-Eval cell)."""
    from ..report import system_level
    from ..report.results_sections import committed_system_rows

    if not (Path(run_dir) / "items").is_dir() or not system_level.cells(run_dir):  # a compare-only run has no items/
        return None
    return committed_system_rows(system_level.system_rows(run_dir, data_dir))
