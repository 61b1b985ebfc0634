"""Run every shipped config on the mock backend and compare the results of two checkouts, file by file.

A refactoring of the engine must leave every row, summary and cache key as it was. This script runs
``judge run`` on each ``benchmarks/configs/*.toml`` with the mock backend (no model loads; classic
scorers that load a model of their own are left out, with the ensembles that hold them), each run with
a cache file of its own, and writes everything under ``OUT/<config>/``. Run it once per checkout (the
``judge`` package on ``PYTHONPATH`` is the one measured), then ``--compare A B``: every cell file, every
summary row and every cache key must match; times and paths are left out of the comparison.

    PYTHONPATH=<old checkout> python benchmarks/rows_identity.py run OLD --data-dir DATA
    PYTHONPATH=<new checkout> python benchmarks/rows_identity.py run NEW --data-dir DATA
    python benchmarks/rows_identity.py compare OLD NEW
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "benchmarks" / "configs"
#: Sets each config runs on (two, with a reference and a next user turn between them, where it holds them).
DATASETS = {"table3_fed_turn.toml": None, "table4_fed_dial.toml": None, "dstc10_zeroshot.toml": None,
            "table6_models.toml": "DZ,FT", "table5_selection.toml": "DGU,FD", "classic.toml": None}
#: Classic scorers that load no model of their own (the others are left out: they would cost minutes).
LIGHT_SCORERS = {"length", "bleu4", "rouge-l", "meteor"}
#: Keys whose values change from one run to the next (times, hosts, paths), left out of the comparison.
VOLATILE = {"seconds", "elapsed", "started", "finished", "time", "timing", "wall_seconds", "created", "host",
            "path", "output", "data_dir", "config", "python", "platform", "version", "git", "duration",
            "rate", "rates", "eval_seconds", "items_per_second", "per_item", "cpu", "machine", "when", "wall_s",
            "peak_rss_mib", "s_per_item", "load_s"}
#: The leaderboard's section of times and memory, left out of the comparison like the ``.time.json`` files.
TIMES_SECTION = "## Compute time and memory"


def _light(method: Any) -> bool:
    if method.type == "classic":
        return method.settings.scorer in LIGHT_SCORERS
    return all(_light(m) for m in method.kind.members(method))


def run(out: Path, data_dir: str, limit: int) -> None:
    from judge.harness import load_experiment

    for config in sorted(CONFIGS.glob("*.toml")):
        exp = load_experiment(config)
        methods = [m.name for m in exp.methods if _light(m)]
        sets = DATASETS.get(config.name, "DGU,FD")
        where = out / config.stem
        where.mkdir(parents=True, exist_ok=True)
        args = [sys.executable, "-m", "judge", "run", str(config), "--data-dir", data_dir, "-o", str(where / "results"),
                "--backend", "mock", "--limit", str(limit), "--no-progress", "--methods", ",".join(methods)]
        if sets:
            try:
                exp.with_overrides(datasets=sets.split(","))
                args += ["--datasets", sets]
            except Exception:  # the config lacks one of them: every set it has
                pass
        env = {**os.environ, "JUDGE_CACHE": str(where / "cache.sqlite")}
        proc = subprocess.run(args, env=env, capture_output=True, text=True)
        (where / "stderr.txt").write_text(proc.stderr)
        print(f"{config.name}: exit {proc.returncode}, {len(methods)} of {len(exp.methods)} methods", flush=True)


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _text(path: Path) -> list[str]:
    """A text file's lines without its times: the leaderboard's time section and wall-time line."""
    out, skipping = [], False
    for line in path.read_text().splitlines():
        if line.startswith("## "):
            skipping = line.startswith(TIMES_SECTION)
        if not skipping and not line.startswith("Wall time"):
            out.append(line)
    return out


def _cache_keys(path: Path) -> dict[str, list[tuple[str, str]]]:
    if not path.exists():
        return {}
    with sqlite3.connect(path) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: sorted(db.execute(f"SELECT key, backend FROM {t}").fetchall()) for t in tables}


def compare(a: Path, b: Path) -> int:
    bad = 0
    files = rows = keys = 0
    for left in sorted(a.rglob("*")):
        rel = left.relative_to(a)
        right = b / rel
        if left.is_dir() or left.name == "stderr.txt" or left.name.endswith(".time.json"):
            continue
        if not right.exists():
            print(f"missing in {b}: {rel}")
            bad += 1
            continue
        files += 1
        if left.suffix == ".sqlite":
            ka, kb = _cache_keys(left), _cache_keys(right)
            keys += sum(len(v) for v in ka.values())
            if ka != kb:
                print(f"cache keys differ: {rel}")
                bad += 1
            continue
        if left.suffix == ".jsonl":
            la = [_clean(json.loads(x)) for x in left.read_text().splitlines() if x.strip()]
            lb = [_clean(json.loads(x)) for x in right.read_text().splitlines() if x.strip()]
            rows += len(la)
            same = la == lb
        elif left.suffix == ".json":
            same = _clean(json.loads(left.read_text())) == _clean(json.loads(right.read_text()))
        elif left.suffix in (".md", ".csv", ".tsv", ".txt"):
            same = _text(left) == _text(right)
        else:
            continue
        if not same:
            print(f"differs: {rel}")
            bad += 1
    extra = [p for p in b.rglob("*") if p.is_file() and not (a / p.relative_to(b)).exists()
             and p.name != "stderr.txt"]
    for p in extra:
        print(f"missing in {a}: {p.relative_to(b)}")
        bad += 1
    print(f"{files} files, {rows} rows, {keys} cache keys compared; {bad} differences")
    return 1 if bad else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    r.add_argument("--limit", type=int, default=4)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = p.parse_args()
    if args.command == "run":
        run(args.out, args.data_dir, args.limit)
        return 0
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
