"""``judge estimate ROWS --labels LABELS``: each system's human-scale mean and the differences between systems,
from a judge's scores on every row and people's labels on a random few (:mod:`judge.stats.estimate`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import InputError
from ..core.io import check_output_path
from ..records.labels import Label, read_labels
from ..records.pair_rows import PairRow
from ..records.rows import Row, read_records, read_rows
from ..report.estimate_join import join_labels, join_pair_labels, scored_pairs, scored_rows, verdicts_from_rows
from ..stats.estimate import Joined, estimate
from . import EXIT_OK


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("estimate", help="human-scale means and differences per system from a judge's scores and a "
                       "few human labels (prediction-powered intervals over conversations)")
    p.add_argument("rows", help="a scored rows file (judge score/bench -o), or a judge run results folder (each of "
                   "its cells) or one cell's seed<N>.jsonl")
    p.add_argument("--labels", default=None, metavar="FILE",
                   help="human labels (JSONL, as judge label writes): joined to the rows by id")
    p.add_argument("--labels-from-rows", action="store_true",
                   help="take the rows' own human values as the labels, every row labelled (otherwise they are "
                   "never used)")
    p.add_argument("--by", default="system", metavar="FIELD",
                   help="group rows by this field: 'system' (meta.system, else the row's system) or any meta field "
                   "(default: system)")
    p.add_argument("--quality", default=None, help="the labels' quality (default: the rows' quality)")
    p.add_argument("--target", choices=("rows", "traffic"), default="rows",
                   help="rows: the human mean over exactly these rows (default); traffic: the mean of the "
                   "conversations they were drawn from (wider)")
    p.add_argument("--bootstrap", type=int, default=1000, help="conversation resamples (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--json", default=None, metavar="FILE",
                   help="also write the estimates as JSON (a list: one per rows file or cell)")
    p.add_argument("--view", default=None, metavar="FILE",
                   help="also write them as a judge view page: one HTML file that draws that JSON (docs/trust.md)")
    return p


def row_files(target: str) -> list[Path]:
    """The rows files of ``target``: itself, or every cell of a results folder."""
    path = Path(target)
    if path.is_dir():
        cells = sorted((path / "items").glob("**/seed*.jsonl")) + sorted((path / "compare").glob("**/pairs.jsonl"))
        if not cells:
            raise InputError("no cell rows (items/<method>/<set>/<quality>/seed<N>.jsonl or compare/.../pairs.jsonl) "
                             "in this folder", file=target)
        return cells
    if not path.exists():
        raise InputError("no such file", file=target)
    return [path]


def _joined(rows: list[Row] | list[PairRow], labels: list[Label] | None, quality: str | None,
            args: argparse.Namespace, ids: set[str]) -> Joined:
    """Each row's (pair's) label: from the labels file, a label of an item of ``ids`` (every cell's) and in none of
    these rows skipped and counted, or (--labels-from-rows) the rows' own human values."""
    if isinstance(rows[0], PairRow):
        return (verdicts_from_rows(rows) if args.labels_from_rows
                else join_pair_labels(rows, labels or [], quality, args.labels, ids))
    if args.labels_from_rows:
        human = np.array([np.nan if r.human is None else r.human for r in rows])
        return Joined(human, np.isfinite(human).astype(float), 0, False)
    assert labels is not None
    return join_labels([r.id for r in rows], labels, quality, args.labels, ids)


def is_pair_file(path: Path) -> bool:
    """Whether ``path`` holds pair rows (``judge compare``): its first line has ``system_a``."""
    with open(path, encoding="utf-8") as f:
        first = f.readline()
    try:
        return "system_a" in json.loads(first)
    except (json.JSONDecodeError, TypeError):
        return False


def run(args: argparse.Namespace) -> int:
    from ..report.estimate import render_text, to_dict

    if (args.labels is None) == (not args.labels_from_rows):
        raise InputError("give --labels FILE, or --labels-from-rows to use the rows' own human values", field="labels")
    for path, flag in ((args.json, "--json"), (args.view, "--view")):
        if path:
            check_output_path(path, flag)
    labels = read_labels(args.labels) if args.labels else None
    out = []
    cells = [(p, read_records(p, PairRow) if is_pair_file(p) else read_rows(p)) for p in row_files(args.rows)]
    ids = {i for _, rows in cells for r in rows for i in ((r.item_a, r.item_b) if isinstance(r, PairRow) else (r.id,))}
    for path, rows in cells:
        if not rows:
            raise InputError("no rows", file=str(path))
        quality = args.quality or rows[0].quality
        if labels is not None and len(cells) > 1 and not any(quality in lab.scores for lab in labels):
            continue  # a results folder's cells of other qualities
        pairs = isinstance(rows[0], PairRow)  # win rates per pair of systems; --by does not apply to pairs
        est = estimate(scored_pairs(rows) if pairs else scored_rows(rows, args.by),  # type: ignore[arg-type]
                       _joined(rows, labels, quality, args, ids), by="pair: first system's win rate" if pairs else args.by,
                       target=args.target, n_boot=args.bootstrap, seed=args.seed, source=str(path),
                       file=args.labels or str(path), differences=not pairs)
        print(render_text(est) + "\n")
        out.append(to_dict(est))
    if not out:
        raise InputError("no cell of this folder has a quality the labels rate", file=args.rows)
    if not any(e["groups"] for e in out):
        raise InputError("no cell of this folder holds a labelled item of its quality", file=args.labels, field="id")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    if args.view:
        write_page(args.view, args.rows, args.labels or "the rows' own human values", out)
    return EXIT_OK


def write_page(output: str, rows: str, labels: str, estimates: list[dict[str, Any]]) -> None:
    """The estimates as a ``judge view`` page: its estimate section draws the JSON list ``--json`` writes."""
    from ..view import write_view
    from ..view.data import View, ViewRun

    name = Path(rows).name
    write_view(View(f"judge estimate {name}", [ViewRun(name, rows, f"labels: {labels}")],
                    sections={"estimate": estimates}), output)
