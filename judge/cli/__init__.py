"""Command line: ``judge score``, ``judge bench`` and the other subcommands (thin layers over the API).

Building the parser imports every subcommand's module, so what only one command uses (the viewer, the results
page, the ``--check`` estimate, downloads, the web server) is imported inside that command's ``run``."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from ..core.distribution import ShadowedError, check_not_shadowed
from ..core.errors import JudgeError, RunStopped

#: The subcommands, each a module under judge.cli of its name with ``add_parser(subparsers)`` and ``run(args) -> int``.
COMMANDS = ("score", "bench", "compare", "gate", "run", "report", "results", "summarize", "fit", "estimate", "data",
            "models", "serve", "view", "label", "cache")

#: Exit codes: 0 all items scored, 2 bad input or setup error, 3 finished but some items failed. ``judge gate``'s
#: verdicts add 1 (fail) and 4 (inconclusive), ``judge results check``'s 1 (differs): see their modules.
EXIT_OK, EXIT_USAGE, EXIT_FAILED_ITEMS = 0, 2, 3


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="judge", description="Language models as judges of dialogue quality.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        mod = importlib.import_module(f"{__name__}.{module}")
        p = mod.add_parser(sub)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        # Again here: if the unrelated 'judge' package was installed over this one, its __init__ ran, not ours.
        check_not_shadowed()
    except ShadowedError as exc:
        print(f"judge: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._run(args))
    except RunStopped as stop:
        print(f"judge: {stop}", file=sys.stderr)
        return EXIT_OK
    except JudgeError as exc:
        print(f"judge: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        # A file the run reads or writes (output folder, cache, template include) is unusable.
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"judge: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("judge: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
