"""``judge summarize ROWS --by version``: answers per version of a chatbot from rows already scored (a rows
file of ``judge score -o``, or a results folder of one cell), and the options ``judge score --by`` shares
with it to print the same right after scoring (docs/chat-logs.md, "Answers per version").

The rows stream through :class:`judge.stats.by_group.Tally` (and, with ``--otlp-out``, the OTLP event
writer) one at a time, so a rows file of a million turns is summarised in little memory."""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import IO

from ..core.errors import InputError
from ..core.io import atomic_file, atomic_write_text, check_output_path
from ..data.qualities import find_quality
from ..records.by_group import tally_row
from ..records.results import VIEW_FILE
from ..records.rows import Row, iter_rows
from ..report import by_group as render
from ..report.evaluation_events import EventWriter
from ..stats.by_group import ByGroup, Tally
from . import EXIT_OK

#: The files a summary folder holds, by format.
SUMMARY_FILES = {"markdown": "by_group.md", "html": "by_group.html", "csv": "by_group.csv"}


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("summarize", help="mean score per version (or any field of a chat log) with intervals over "
                       "conversations, the distribution and the worst conversations, from scored rows")
    p.add_argument("rows", metavar="ROWS", help="a rows file (judge score -o) or a results folder of one cell")
    p.add_argument("-o", "--output", default=None, metavar="DIR", help="write the summary as Markdown, HTML and CSV "
                   f"({', '.join(SUMMARY_FILES.values())}) into this folder")
    p.add_argument("--format", choices=tuple(SUMMARY_FILES), default="markdown",
                   help="what goes to stdout (default: markdown)")
    p.add_argument("--view", default=None, metavar="FILE", help="the judge view page the worst conversations link to "
                   f"(default for a results folder: its {VIEW_FILE})")
    add_group_options(p, required=True)
    return p


def add_group_options(p: argparse.ArgumentParser, *, required: bool = False) -> None:
    """``--by``, ``--worst``, ``--lower-is-better``, ``--bootstrap`` and ``--otlp-out``: what ``judge summarize``
    and ``judge score`` share."""
    g = p.add_argument_group("answers per version (docs/chat-logs.md)")
    g.add_argument("--by", default=None, required=required, metavar="FIELD,...",
                   help="group the scores by these fields of the log (model, version, date, system or any key it "
                   "has; several: one group per combination) and print each group's mean with its 95%% interval "
                   "over conversations, its distribution and its worst conversations")
    g.add_argument("--worst", type=int, default=5, metavar="N", help="worst conversations listed per group (default: 5)")
    g.add_argument("--lower-is-better", action="store_true",
                   help="a higher score is worse on the scored quality, so the worst conversations are the highest "
                   "(known without it for the benchmark sets' negative qualities, such as robotic)")
    g.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                   help="resamples of the conversations for the intervals (default: 1000)")
    g.add_argument("--otlp-out", default=None, metavar="FILE", help="also write every score as an OpenTelemetry "
                   "gen_ai.evaluation.result event (OTLP JSON logs), parented to the span it judges")


def group_fields(args: argparse.Namespace) -> tuple[str, ...]:
    """``--by``'s fields, checked (the options' errors come before any work)."""
    fields = tuple(f.strip() for f in (args.by or "").split(",") if f.strip())
    if args.by is not None and not fields:
        raise InputError("expected one or more field names, e.g. --by version or --by model,version", field="--by")
    if args.worst < 0:
        raise InputError(f"expected a count of 0 or more, got {args.worst}", field="--worst")
    if args.bootstrap < 1:
        raise InputError(f"expected a count of 1 or more, got {args.bootstrap}", field="--bootstrap")
    return fields


class GroupOutputs:
    """What ``--by`` and ``--otlp-out`` ask of a stream of rows: its sinks while the rows come, then the
    summary (:meth:`finish`). Used as a context manager: the OTLP file is written atomically, only when
    every row is in."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.fields = group_fields(args)
        self.args = args
        self.tally = Tally(self.fields) if self.fields else None
        self.events: EventWriter | None = None
        self._stack = ExitStack()
        if args.otlp_out:
            check_output_path(args.otlp_out, "--otlp-out")

    def __enter__(self) -> GroupOutputs:
        if self.args.otlp_out:
            out: IO[str] = self._stack.enter_context(atomic_file(self.args.otlp_out))
            self.events = EventWriter(out)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.events is not None and exc[0] is None:
            self.events.close()
        self._stack.__exit__(*exc)  # type: ignore[arg-type]

    def add(self, row: Row) -> None:
        if self.tally is not None:
            tally_row(self.tally, row)
        if self.events is not None:
            self.events.add(row)

    @property
    def active(self) -> bool:
        return self.tally is not None or self.events is not None

    def summary(self) -> ByGroup | None:
        if self.tally is None:
            return None
        quality = find_quality(self.tally.quality) if self.tally.quality else None
        lower = self.args.lower_is_better or (quality is not None and quality.negative)
        return self.tally.summary(worst=self.args.worst, n_boot=self.args.bootstrap, lower_is_better=lower)


def write_summary(result: ByGroup, folder: str | Path, view: str | None) -> list[Path]:
    """The summary's Markdown, HTML and CSV files in ``folder``; ``view`` (a path) is linked relative to it."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    link = Path(os.path.relpath(Path(view).resolve(), out.resolve())).as_posix() if view else None
    for fmt, name in SUMMARY_FILES.items():
        atomic_write_text(out / name, rendered(result, fmt, link))
    return [out / name for name in SUMMARY_FILES.values()]


def rendered(result: ByGroup, fmt: str, view: str | None) -> str:
    """The summary in one format (``view`` linked as given)."""
    if fmt == "html":
        return render.render_html(result, view)
    if fmt == "csv":
        return render.render_csv(result)
    return render.render_markdown(result, view)


def rows_file(path: str) -> tuple[Path, str | None]:
    """The rows file ``path`` names (a file, or the one cell of a results folder) and the folder's view page."""
    p = Path(path)
    if not p.exists():
        raise InputError("no such file or folder", file=path)
    if p.is_file():
        return p, None
    cells = sorted(c for c in (p / "items").rglob("*.jsonl")) if (p / "items").is_dir() else []
    if not cells:
        raise InputError("a folder without rows: expected a results folder (items/.../seedN.jsonl)", file=path)
    if len(cells) > 1:
        listing = ", ".join(str(c.relative_to(p)) for c in cells[:6]) + (", ..." if len(cells) > 6 else "")
        raise InputError(f"{len(cells)} cells ({listing}): name one cell's rows file", file=path)
    return cells[0], str(p / VIEW_FILE)


def check_folder(path: str | None, flag: str) -> None:
    """Refuse an output folder that is a file, before any work is done."""
    if path and Path(path).exists() and not Path(path).is_dir():
        raise InputError("is a file, expected a folder", file=path, field=flag)


def run(args: argparse.Namespace) -> int:
    path, folder_view = rows_file(args.rows)
    check_folder(args.output, "--output")
    view = args.view or (folder_view if folder_view and Path(folder_view).exists() else None)
    with GroupOutputs(args) as outputs:
        for row in iter_rows(path):
            outputs.add(row)
    result = outputs.summary()
    assert result is not None  # --by is required here
    if not result.groups:
        raise InputError("no rows", file=str(path))
    if args.output:
        for written in write_summary(result, args.output, view):
            print(written, file=sys.stderr)
    sys.stdout.write(rendered(result, args.format, view))
    return EXIT_OK
