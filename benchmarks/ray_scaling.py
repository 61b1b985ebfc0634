"""``ray_scaling`` benchmark: the items of one run spread over Ray actors, against one process.

One run (``judge run benchmarks/configs/dstc10_zeroshot.toml --datasets DZ``, the yes/no prompt zero-shot,
``--model``, default Qwen2.5-Coder-0.5B, the first ``--limit`` items) three ways, in this order, each with a
cache of its own (every answer computed) on a two-node Ray cluster of one CPU per node started for the
benchmark on 127.0.0.1 in a network namespace of its own (tools/ray_cluster.py):

1. one process, ``--threads 2`` (the baseline: this machine's two cores in one llama.cpp);
2. ``--ray`` with one actor of one thread (``--ray-actors 1 --ray-cpus 1``);
3. ``--ray`` with two actors of one thread each, one per node (``--ray-actors 2 --ray-cpus 1``).

Each is timed from the command's start to its end (wall: Ray's connection and the actors' model loads
included). It prints items/s, the ratios of run 3 to runs 2 and 1 (targets: at least 1.7x and at least
0.9x), the driver's peak resident memory (the process on the driver's machine, from ``wait4``; the
actors' memory is on the nodes), and whether the rows of the three runs are byte-identical.

    flock /tmp/judge-cpu.lock python benchmarks/ray_scaling.py --limit 60
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.ray_cluster import ADDRESS, Cluster, why_not

CONFIG = ROOT / "benchmarks" / "configs" / "dstc10_zeroshot.toml"
#: The three runs: a name and the arguments that make it.
RUNS: list[tuple[str, list[str]]] = [
    ("one process, 2 threads", ["--threads", "2"]),
    ("one actor, 1 thread", ["--ray", ADDRESS, "--ray-actors", "1", "--ray-cpus", "1"]),
    ("two actors, 1 thread each", ["--ray", ADDRESS, "--ray-actors", "2", "--ray-cpus", "1"]),
]


def rows(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted((out / "items").rglob("*.jsonl"))}


def timed(cluster: Cluster, args: list[str], cache: Path) -> tuple[float, float, str]:
    """(wall seconds, the process's peak RSS in MB, its stderr) of ``python -m judge ARGS`` run on the cluster's
    machine (inside its namespace), with ``cache`` as its cache."""
    cluster.env["JUDGE_CACHE"] = str(cache)
    log = cache.with_suffix(".stderr.txt")
    start = time.perf_counter()
    with log.open("w") as err:
        proc = subprocess.Popen(cluster.command([sys.executable, "-m", "judge", *args]), env=cluster.env,
                                stdout=subprocess.DEVNULL, stderr=err)
        # wait4 on nsenter: its peak and its waited-for child's (the judge process) together.
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    text = log.read_text()
    if os.waitstatus_to_exitcode(status):
        sys.exit(f"judge {' '.join(args)} failed ({os.waitstatus_to_exitcode(status)}):\n{text[-3000:]}")
    return wall, usage.ru_maxrss / 1024, text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=60, help="items of DZ (default 60)")
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    args = ap.parse_args()
    why = why_not()
    if why is not None:
        sys.exit(f"cannot start a Ray cluster here: {why}")
    tmp = Path(tempfile.mkdtemp(prefix="ray-scaling-"))
    cluster = Cluster(nodes=2, cpus=1, env={"JUDGE_CACHE": str(tmp / "nodes.sqlite")})
    walls: list[float] = []
    outs: list[Path] = []
    try:
        print(f"ray_scaling: {args.model}, DZ, {args.limit} items, yes/no zero-shot; a two-node cluster of 1 CPU "
              f"per node; {os.cpu_count()} cores")
        for k, (name, extra) in enumerate(RUNS):
            out = tmp / f"run{k}"
            run = ["run", str(CONFIG), "--data-dir", args.data_dir, "--datasets", "DZ", "--limit", str(args.limit),
                   "--model", args.model, "--no-progress", "-o", str(out), *extra]
            wall, peak, err = timed(cluster, run, tmp / f"cache{k}.sqlite")
            walls.append(wall)
            outs.append(out)
            nodes = [line for line in err.splitlines() if line.startswith("ray: done per node")]
            print(f"{name:28s} {wall:7.1f} s  {args.limit / wall:6.2f} items/s  driver peak RSS {peak:6.0f} MB"
                  + (f"  ({nodes[-1][len('ray: '):]})" if nodes else ""))
    finally:
        cluster.stop()
    same = all(rows(o) == rows(outs[0]) and rows(o) for o in outs)
    two, one, process = walls[2], walls[1], walls[0]
    print(f"two actors vs one actor:        {one / two:.2f}x (target >= 1.7x): {'met' if one / two >= 1.7 else 'NOT met'}")
    print(f"two actors vs one 2-thread run: {process / two:.2f}x (target >= 0.9x): "
          f"{'met' if process / two >= 0.9 else 'NOT met'}")
    print(f"rows byte-identical across the three runs: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
