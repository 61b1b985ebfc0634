"""``judge cache info|export|import``: what the answer cache holds, and packs that carry it to another machine."""

from __future__ import annotations

import argparse
import sys

from . import EXIT_OK


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("cache", help="count the cached answers, or carry them between machines in a pack")
    verbs = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    i = verbs.add_parser("info", help="rows per table and model")
    e = verbs.add_parser("export", help="write the chosen rows to a new pack (xz-compressed JSON Lines)")
    e.add_argument("-o", "--output", required=True, metavar="PACK", help="the pack to write")
    e.add_argument("--model", action="append", default=[], metavar="ID",
                   help="only this model's answers (repeatable; the ids 'judge cache info' lists)")
    e.add_argument("--kind", action="append", default=[], metavar="KIND",
                   help="only answers of this kind: label, sequence, hidden or reason (repeatable)")
    e.add_argument("--exclude", action="append", default=[], metavar="PACK",
                   help="leave out the rows this pack already holds (repeatable), so that a series of packs each "
                        "carries new answers only")
    m = verbs.add_parser("import", help="add the packs' rows the cache lacks (a cached answer is never replaced)")
    m.add_argument("packs", nargs="+", metavar="PACK", help="the packs to read")
    for verb in (i, e, m):
        verb.add_argument("--cache-path", default=None,
                          help="SQLite cache file (default: $JUDGE_CACHE or ~/.cache/judge/cache.sqlite)")
    return p


def run(args: argparse.Namespace) -> int:
    from ..engine.cache import Cache
    from ..engine.cache_pack import export, import_packs, tables_of

    cache = Cache(args.cache_path)
    try:
        if args.action == "info":
            for table in tables_of([]):
                for model, count in cache.count_by_model(table):
                    print(f"{table}\t{model}\t{count}")
        elif args.action == "export":
            n = export(cache, args.output, models=args.model, kinds=args.kind, exclude=args.exclude)
            print(f"judge: cache: {n} answers written to {args.output} (from {cache.path})", file=sys.stderr)
        else:
            done = import_packs(cache, args.packs)
            differ = f", {done.differing} of them with another answer, kept as cached" if done.differing else ""
            print(f"judge: cache: {done.added} answers added, {done.present} already cached{differ} ({cache.path})",
                  file=sys.stderr)
    finally:
        cache.close()
    return EXIT_OK
