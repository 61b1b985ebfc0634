"""``judge data [list|verify|download]``: the benchmark files, their sources and checksums."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..core.errors import JudgeError
from . import EXIT_OK, EXIT_USAGE


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("data", help="list, verify or download the benchmark files")
    p.add_argument("action", nargs="?", default="list", choices=("list", "verify", "download"))
    p.add_argument("--data-dir", default="data", help="local data folder (default: ./data)")
    p.add_argument("--base-url", default=None,
                   help="download from a mirror laid out like the data folder instead of the public sources")
    p.add_argument("--force", action="store_true", help="download even files that are already present and valid")
    return p


def run(args: argparse.Namespace) -> int:
    from ..datasets.download import DATA_FILES, download, source_url, verify
    from ..models.packaged import sha256_file

    if args.action == "list":
        for f in DATA_FILES:
            size = f"{f.source.size} bytes" if f.source.size is not None else "size not recorded"
            print(f"{f.path}\t{f.sets}\t{size}\tsha256 {f.source.sha256}\n    {f.source.url}")
        return EXIT_OK
    if args.action == "verify":
        bad = 0
        for f, status in verify(args.data_dir):
            print(f"{status:>8}  {f.path}" if status in ("ok", "missing") else f"BAD  {f.path}: {status}")
            bad += status != "ok"
        if bad:
            print(f"judge: {bad} of {len(DATA_FILES)} files missing or wrong; run 'judge data download "
                  f"--data-dir {args.data_dir}'", file=sys.stderr)
            return EXIT_USAGE
        return EXIT_OK
    failed = 0
    for f in DATA_FILES:
        dest = Path(args.data_dir) / f.path
        if not args.force and dest.is_file() and sha256_file(dest) == f.source.sha256:
            print(f"present  {f.path}")
            continue
        try:
            download(f, args.data_dir, args.base_url)
            print(f"fetched  {f.path}  <- {source_url(f, args.base_url)}")
        except JudgeError as exc:
            print(f"judge: error: {exc}", file=sys.stderr)
            failed += 1
    return EXIT_USAGE if failed else EXIT_OK
