"""``memory`` benchmark: peak resident memory and items/s of ``judge score`` as the file grows.

Generates files of users' JSONL items (turn level: a two- or three-turn context, a reply, a human rating
on a 1-5 scale; every text distinct, as in a month of chatbot logs, so no two items share a
conversation), then runs ``judge score FILE --backend mock -o OUT`` on each in a subprocess of its own and
reads that process's peak resident set (``ru_maxrss`` of the child) and its wall time. The mock backend
answers in microseconds, so what is measured is judge itself: reading, checking and grouping the items,
building the prompts, writing the rows. The last size's ratio to the first says how memory grows with
the file (flat: items stream from the file to the scorer and rows to the output).

    python benchmarks/memory.py --items 10000 50000 1000000
    python benchmarks/memory.py --items 10000 1000000 --no-cache --ray   # on a two-node Ray cluster

With ``--ray`` each file is scored with ``--ray`` on a two-node Ray cluster of one CPU per node, started for
the benchmark on 127.0.0.1 in a network namespace of its own (tools/ray_cluster.py): the peak is the
driver's (the ``judge`` process that reads the file and writes the rows); the mock backend answers on the
actors.
    python benchmarks/memory.py --items 10000 --keep DIR   # keep the generated files and outputs
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.peak import measured_run
from tools.ray_cluster import ADDRESS, Cluster, why_not

_WORDS = ["the", "weather", "was", "fine", "and", "we", "walked", "to", "the", "station", "before", "the", "rain", "came", "back", "again", "later", "that", "evening", "my", "sister", "said", "she", "would", "call", "tomorrow", "about", "the", "trip", "to", "the", "coast", "next", "summer", "if", "the", "tickets", "are", "not", "too", "expensive", "by", "then"]


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n)).capitalize() + "."


def generate(path: Path, n: int, seed: int = 0) -> None:
    """``n`` turn-level items, each with its own conversation (an id in every text keeps them distinct)."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            turns = rng.choice((2, 3))
            context = [{"speaker": "user" if (turns - k) % 2 else "system",
                        "text": f"{_sentence(rng, rng.randint(5, 12))} ({i}.{k})"} for k in range(turns)]
            record = {"id": f"log-{i:07d}", "context": context, "response": f"{_sentence(rng, rng.randint(4, 14))} ({i})",
                      "system": f"bot-{i % 7}", "scores": {"overall": [rng.randint(1, 5)]}}
            if i == 0:  # a declaration on one line holds for the whole file
                record["scales"] = {"overall": [1, 5]}
            out.write(json.dumps(record) + "\n")


def run_score(data: Path, out: Path, extra: list[str], cluster: Cluster | None = None) -> tuple[float, float, int]:
    """(peak RSS in MB, wall seconds, exit code) of ``judge score`` on ``data`` in a subprocess of its own
    (its own peak, from ``wait4``); with ``cluster``, run on its machine with ``--ray`` (``wait4`` on
    ``nsenter`` gives the peak of the judge process it waits for)."""
    cmd = [sys.executable, "-m", "judge", "score", str(data), "--backend", "mock", "--quality", "overall",
           "-o", str(out), "--no-progress", *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    if cluster is not None:
        cmd = cluster.command([*cmd, "--ray", ADDRESS])
        env = {**cluster.env, "JUDGE_CACHE": env.get("JUDGE_CACHE", "")}
    log = out.with_suffix(".stderr.txt")
    peak, wall, code = measured_run(cmd, env, log)
    if code not in (0, 3):
        raise SystemExit(f"judge score failed (exit {code}):\n{log.read_text()}")
    return peak, wall, code


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, nargs="+", default=[10_000, 50_000], help="file sizes (items)")
    ap.add_argument("--keep", type=Path, default=None, help="folder to keep the generated files and outputs in")
    ap.add_argument("--no-cache", action="store_true", help="run without the SQLite cache (--no-cache)")
    ap.add_argument("--ray", action="store_true", help="score with --ray on a two-node Ray cluster started here")
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    where = args.keep or Path(tmp.name)
    where.mkdir(parents=True, exist_ok=True)
    extra = ["--no-cache"] if args.no_cache else []
    env_cache = where / "cache.sqlite"
    os.environ.setdefault("JUDGE_CACHE", str(env_cache))
    print(f"memory: judge score --backend mock on generated turn-level JSONL; {os.cpu_count()} CPUs, "
          f"Python {sys.version.split()[0]}; cache {'off' if args.no_cache else os.environ['JUDGE_CACHE']}")
    print(f"{'items':>9} {'file MB':>8} {'peak RSS MB':>12} {'KB/item':>8} {'wall s':>8} {'items/s':>9} {'vs first':>9}")
    cluster = None
    if args.ray:
        if why_not() is not None:
            sys.exit(f"cannot start a Ray cluster here: {why_not()}")
        cluster = Cluster(nodes=2, cpus=1, env={"JUDGE_CACHE": os.environ["JUDGE_CACHE"]})
        print("on a two-node Ray cluster (1 CPU per node): judge score ... --ray " + ADDRESS)
    try:
        measure(args.items, where, extra, cluster)
    finally:
        if cluster is not None:
            cluster.stop()
    tmp.cleanup()
    return 0


def measure(sizes: list[int], where: Path, extra: list[str], cluster: Cluster | None) -> None:
    """One line per file size: its peak, wall time and items/s."""
    first: float | None = None
    for n in sizes:
        data = where / f"items-{n}.jsonl"
        if not data.exists():
            generate(data, n)
        peak, wall, _ = run_score(data, where / f"scores-{n}.jsonl", extra, cluster)
        first = first or peak
        print(f"{n:>9,} {data.stat().st_size / 1e6:>8.1f} {peak:>12.0f} {peak * 1024 / n:>8.2f} {wall:>8.1f} "
              f"{n / wall:>9,.0f} {peak / first:>8.2f}x", flush=True)


if __name__ == "__main__":
    sys.exit(main())
