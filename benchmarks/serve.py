"""``serve`` benchmark: ``judge serve`` under 1, 4 and 16 concurrent clients vs the engine in-process.

The same items are scored (1) in this process through the engine, exactly as ``judge score`` does
(``prepare`` -> ``build`` -> ``score_rows``, model already loaded, timing excludes the load), then
(2) by ``python -m judge serve`` in a subprocess, one ``POST /v1/score`` per item from 1, 4 and 16
client threads, and (3) in one ``POST /v1/score/batch``. Both sides use the packaged SmolLM2 via
llama.cpp with the same threads and no judge cache, so every item is a model evaluation. llama.cpp
evaluates one prompt at a time whatever the clients do: more clients cannot raise items/s, and
latency grows with the queue; the point is what HTTP and the worker queue cost.

    python benchmarks/serve.py                 # 24 items, 2 threads
    python benchmarks/serve.py --items 48 --threads 4
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.config import GenerateConfig
from judge.datasets.jsonl import items_from_records
from judge.engine import BackendPool, MethodSpec, build, prepare, score_rows

EXAMPLES = ROOT / "examples" / "dialogues.jsonl"


def records(n: int) -> list[dict]:
    """``n`` distinct turn-level records: the example dialogues, cycled, each round's response varied."""
    base = [json.loads(line) for line in EXAMPLES.read_text().splitlines() if line.strip()]
    base = [r for r in base if "context" in r]
    out = []
    for i in range(n):
        rec = dict(base[i % len(base)])
        round_ = i // len(base)
        rec["id"] = f"bench-{i:03d}"
        rec.pop("group", None)
        if round_:
            rec["response"] = f"{rec['response']} (take {round_ + 1})"
        out.append(rec)
    return out


def in_process(recs: list[dict], threads: int) -> tuple[float, list[dict]]:
    """Wall seconds of scoring ``recs`` through the engine in this process (model load excluded)."""
    items = items_from_records([(str(i), r) for i, r in enumerate(recs)], "bench", "bench")
    spec = MethodSpec(generate=GenerateConfig(threads=threads, cache=False))
    pool = BackendPool()
    try:
        scorer = build(prepare(spec, items), pool)
        start = time.perf_counter()
        rows = list(score_rows(scorer, items, spec.name, None, 0))
        return time.perf_counter() - start, rows
    finally:
        pool.close()


def start_service(threads: int, log: Path) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "judge", "serve", "--port", "0", "--no-cache", "--threads", str(threads)]
    fh = open(log, "wb")  # noqa: SIM115 - kept open for the subprocess's lifetime
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"judge serve exited: {log.read_text()[-2000:]}")
        for line in log.read_text().splitlines():
            if line.startswith("judge serve: listening on "):
                base = line.split(" on ", 1)[1]
                try:
                    urllib.request.urlopen(base + "/healthz", timeout=2).read()
                    return proc, base
                except OSError:
                    pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("judge serve did not start in 300 s")


def post(url: str, payload: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(payload).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as resp:
        return json.loads(resp.read())


def clients(base: str, recs: list[dict], n_clients: int) -> tuple[float, list[float], list[dict]]:
    """``n_clients`` threads posting one item each until the items run out: wall s, latencies, rows."""
    todo: queue.Queue[dict] = queue.Queue()
    for rec in recs:
        todo.put(rec)
    latencies: list[float] = []
    rows: list[dict] = []
    lock = threading.Lock()

    def work() -> None:
        while True:
            try:
                rec = todo.get_nowait()
            except queue.Empty:
                return
            t0 = time.perf_counter()
            row = post(base + "/v1/score", rec)
            dt = time.perf_counter() - t0
            with lock:
                latencies.append(dt)
                rows.append(row)

    threads = [threading.Thread(target=work) for _ in range(n_clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start, latencies, rows


def pct(values: list[float], q: float) -> float:
    """The q-quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=24)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    args = ap.parse_args()
    recs = records(args.items)
    print(f"# {platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, "
          f"Python {platform.python_version()}, {args.items} items, {args.threads} threads, no judge cache")
    wall, ref_rows = in_process(recs, args.threads)
    ref = {row["id"]: row["score"] for row in ref_rows}
    base_ips = len(recs) / wall
    table = [("in-process", "-", len(recs), sum(r["error"] is not None for r in ref_rows), wall, base_ips,
              None, None, 0.0)]
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = start_service(args.threads, Path(tmp) / "serve.log")
        try:
            for n in args.clients:
                wall, lat, rows = clients(base, recs, n)
                diff = max(abs(r["score"] - ref[r["id"]]) for r in rows)
                table.append(("serve /v1/score", str(n), len(rows), sum(r["error"] is not None for r in rows), wall,
                              len(rows) / wall, pct(lat, 0.5), pct(lat, 0.99), diff))
            t0 = time.perf_counter()
            rows = post(base + "/v1/score/batch", {"items": recs})["rows"]
            wall = time.perf_counter() - t0
            diff = max(abs(r["score"] - ref[r["id"]]) for r in rows)
            table.append(("serve /v1/score/batch", "1", len(rows), sum(r["error"] is not None for r in rows), wall,
                          len(rows) / wall, wall, wall, diff))
        finally:
            proc.terminate()
            proc.wait(timeout=120)
    print(f"{'mode':<22} {'clients':>7} {'items':>5} {'failed':>6} {'wall s':>7} {'items/s':>8} "
          f"{'vs in-proc':>10} {'p50 ms':>8} {'p99 ms':>8} {'max |diff|':>10}")
    for mode, n, items, failed, wall, ips, p50, p99, diff in table:
        p50s = f"{p50 * 1000:8.0f}" if p50 is not None else f"{'-':>8}"
        p99s = f"{p99 * 1000:8.0f}" if p99 is not None else f"{'-':>8}"
        print(f"{mode:<22} {n:>7} {items:>5} {failed:>6} {wall:7.2f} {ips:8.2f} {ips / base_ips:9.2f}x "
              f"{p50s} {p99s} {diff:10.1e}")


if __name__ == "__main__":
    main()
