"""``judge fit DATA... -o HEAD``: learn a head from rated items (the hidden state of one prompt of one model).

Only translation lives here: the sets named on the command line become :class:`judge.heads.train.RatedSet`
values, the judge flags a method spec, and :mod:`judge.heads.train` does the rest.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

from ..accounting.counters import report_counters
from ..core.errors import InputError
from ..core.io import check_output_path
from ..datasets.identity import families
from ..datasets.source import resolve_source
from ..datasets.split import conversation_of, split_items
from ..engine import prepare
from ..engine.cost import Entry
from ..engine.session import Session
from ..heads.fit import ALPHAS, require_sklearn
from ..heads.head import read_head
from ..heads.train import RatedSet, collect, fit_head, fit_without_each, stamp
from . import EXIT_OK
from .options import add_check_option, add_judge_options, add_run_options, parse_scales, run_options, spec_from_args


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("fit", help="learn a head (the model's hidden state -> a score) from rated items")
    p.add_argument("data", nargs="+", help="rated sets: registered names or abbreviations (TU, DZ, ...: under "
                   "--data-dir) or files (users' JSONL, benchmark files; --quality/--scale say what to learn)")
    p.add_argument("-o", "--output", default=None, help="the head file to write (JSON): learned from every set given")
    p.add_argument("--without-each", default=None, metavar="DIR",
                   help="also write DIR/<set>.json for each set: a head learned from the other sets only (none that "
                   "shares its conversations), to score that set with a head that never saw it (head = "
                   "\"DIR/{dataset}.json\" in a config)")
    p.add_argument("--data-dir", default=None, help="folder holding the registered benchmark files")
    p.add_argument("--labels", default=None, metavar="FILE",
                   help="learn from the ratings of this labels file (judge label) instead of the data's: only the "
                   "items it names, each rated by its raters' latest labels; one DATA only (docs/label.md)")
    p.add_argument("--split", choices=("dev", "test"), default=None,
                   help="learn from this half of each set's conversations only (default: all items)")
    p.add_argument("--with-answer", action="store_true",
                   help="also give the head the prompt's own answer (its score) as a feature")
    p.add_argument("--stamp", action="append", default=None, metavar="HEAD",
                   help="instead of fitting: record again in HEAD (repeatable) what it learned from, computed from "
                   "the sets given, which must be the ones it was fitted on (its weights stay as they are): a head "
                   "written by an older judge gets the fingerprints of its training conversations, which it refuses "
                   "to score")
    p.add_argument("--alphas", default=None, metavar="A,B,...",
                   help=f"ridge strengths to choose from by grouped cross-validation (default: {','.join(map(str, ALPHAS))})")
    add_run_options(p)
    add_judge_options(p)
    add_check_option(p, "sets", "reading the hidden states")
    return p


def rated_sets(args: argparse.Namespace) -> list[RatedSet]:
    """Each DATA argument as the rated items to learn from (its half with --split), with the conversations of
    the whole set; sets that share conversations (by content) are one family, left out together by the
    cross-validation."""
    chosen = []
    if args.labels is not None and len(args.data) > 1:
        raise InputError("labels name items by id, which only one set's ids say: give one DATA with --labels",
                         field="--labels")
    for target in args.data:
        src = resolve_source(target, args.data_dir, quality=args.quality, scales=parse_scales(args))
        if args.labels is not None:
            from ..label.ratings import labelled_source

            src = labelled_source(src, args.labels)
        items = [it for it in split_items(list(src.items), args.split) if it.human(src.quality.name) is not None]
        if not items:
            raise InputError(f"no rated item for quality {src.quality.name!r}"
                             + (f" in the {args.split} half" if args.split else ""), file=target, field="data")
        chosen.append((src, items))
    family = families({src.info.name: items for src, items in chosen})
    labels = None if args.labels is None else (str(Path(args.labels).resolve()),
                                               hashlib.sha256(Path(args.labels).read_bytes()).hexdigest())
    return [RatedSet(src.info.name, src.quality, tuple(items), family[src.info.name], args.split,
                     str(Path(src.path).resolve()) if src.path is not None and not src.registered else None,
                     frozenset(map(conversation_of, src.items)), labels)
            for src, items in chosen]


def _alphas(text: str | None) -> tuple[float, ...]:
    if text is None:
        return ALPHAS
    try:
        values = tuple(float(a) for a in text.split(","))
    except ValueError:
        raise InputError(f"expected comma-separated numbers, got {text!r}", field="--alphas") from None
    if not values or any(a <= 0 for a in values):
        raise InputError("ridge strengths must be positive", field="--alphas")
    return values


def _stamp(heads: list[str], sets: list[RatedSet]) -> int:
    """``--stamp``: each head file rewritten with its training sets' records computed from ``sets``."""
    for path in heads:
        head = stamp(read_head(path), sets)
        head.write(path)
        print(f"head: {path}: {', '.join(f'{t.name} ({t.items} items, {t.conversations} conversations)' for t in head.trained_on)}")
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    if args.stamp:
        if args.output is not None or args.without_each is not None:
            raise InputError("--stamp records what existing heads learned from; it fits nothing (no -o, no "
                             "--without-each)", field="--stamp")
        return _stamp(args.stamp, rated_sets(args))
    if args.output is None and args.without_each is None and not args.check:
        raise InputError("say where the head goes: -o HEAD.json, or --without-each DIR", field="--output")
    if args.output is not None:
        check_output_path(args.output)
    require_sklearn()
    alphas = _alphas(args.alphas)
    spec = spec_from_args(args)
    sets = rated_sets(args)
    # --check: each set's items and what their prompts cost (the hidden state comes with the answer).
    groups = [[Entry(s.name, prepare(spec, list(s.items), s.quality), s.items)] for s in sets]
    session = Session(run_options(args))
    if args.check:
        for line in session.check(groups):
            print(line)
        return EXIT_OK
    with session.plan(groups):
        bar = session.bar(sum(len(s.items) for s in sets), "hidden states", "item")
        collected = collect(spec, sets, session, bar.update)
        bar.close()
        report_counters(session.counters())
    if args.without_each is not None:
        folder = Path(args.without_each)
        folder.mkdir(parents=True, exist_ok=True)
        for name, each in fit_without_each(sets, collected, with_answer=args.with_answer, alphas=alphas).items():
            each.write(folder / f"{name}.json")
            print(f"head: {folder / f'{name}.json'} (without {name}: learned from "
                  f"{', '.join(t.name for t in each.trained_on)}; ridge alpha {each.alpha:g})")
    if args.output is None:
        return EXIT_OK
    head = fit_head(sets, collected, with_answer=args.with_answer, alphas=alphas)
    head.write(args.output)
    cv = head.cv
    print(f"head: {args.output} ({head.dim} values{' + the answer' if head.with_answer else ''}, ridge alpha "
          f"{head.alpha:g}), {head.model}, prompt {head.prompt}")
    for t in head.trained_on:
        fig = cv["per_set"].get(t.name, {})
        rho = fig.get("spearman")
        print(f"  {t.name:<20} {t.quality:<18} {t.split or 'all':<4} {t.items:>5} items {t.conversations:>5} conv."
              f"  cv Spearman {'n/a' if rho is None else f'{rho:.3f}'}  failed {collected.failed[t.name]}")
    overall = cv.get("spearman")
    print(f"cross-validated ({cv['how']}): mean Spearman {'n/a' if overall is None else f'{overall:.3f}'}; "
          f"{collected.tokens} prompt tokens evaluated in {collected.seconds:.0f} s")
    return EXIT_OK
