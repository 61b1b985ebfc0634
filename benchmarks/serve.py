"""``serve`` benchmark: ``judge serve`` under 1, 4 and 16 concurrent clients vs the engine in-process.

The same items are scored (1) in this process through the engine, exactly as ``judge score`` does
(``prepare``, then a ``Session`` builds the scorer and hands its rows; model already loaded, timing excludes
the load), then
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
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.core.config import GenerateConfig
from judge.datasets.jsonl import items_from_records
from judge.engine import MethodSpec, prepare
from judge.engine.session import RunOptions, Session

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
    prep = prepare(spec, items)
    with Session(RunOptions(progress=False)) as session:
        scorer = session.build(prep)
        start = time.perf_counter()
        rows: list[dict] = []
        session.rows(prep, items, lambda row: rows.append(row.to_dict()), quality=None, seed=0, judge=scorer)
        return time.perf_counter() - start, rows


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


def run_mode(mode: str, n: int, base: str, recs: list[dict],
             threads: int) -> tuple[float, list[float], list[dict]]:
    """One measurement: wall seconds, per-request latencies (empty in-process) and the rows."""
    if mode == "in-process":
        wall, rows = in_process(recs, threads)
        return wall, [], rows
    if mode == "batch":
        t0 = time.perf_counter()
        rows = post(base + "/v1/score/batch", {"items": recs})["rows"]
        wall = time.perf_counter() - t0
        return wall, [wall], rows
    return clients(base, recs, n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=24)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--repeat", type=int, default=2, help="passes over the modes, alternately forward and "
                    "backward (ABBA), so load drift on a shared machine falls on every mode alike (default 2)")
    args = ap.parse_args()
    recs = records(args.items)
    print(f"# {platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start, "
          f"Python {platform.python_version()}, {args.items} items, {args.threads} threads, no judge cache, "
          f"{args.repeat} passes (ABBA)", flush=True)
    modes = [("in-process", 0)] + [("clients", n) for n in args.clients] + [("batch", 1)]
    walls: dict[tuple[str, int], list[float]] = {m: [] for m in modes}
    lats: dict[tuple[str, int], list[float]] = {m: [] for m in modes}
    failed: dict[tuple[str, int], int] = dict.fromkeys(modes, 0)
    diff: dict[tuple[str, int], float] = dict.fromkeys(modes, 0.0)
    ref: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = start_service(args.threads, Path(tmp) / "serve.log")
        try:
            for p in range(args.repeat):
                for mode in (modes if p % 2 == 0 else modes[::-1]):
                    wall, lat, rows = run_mode(mode[0], mode[1], base, recs, args.threads)
                    if not ref and mode[0] == "in-process":
                        ref = {row["id"]: row["score"] for row in rows}
                    walls[mode].append(wall)
                    lats[mode].extend(lat)
                    failed[mode] += sum(r["error"] is not None for r in rows)
                    if ref:
                        diff[mode] = max(diff[mode], max(abs(r["score"] - ref[r["id"]]) for r in rows))
                    print(f"# pass {p + 1}: {mode[0]} {mode[1] or ''} {wall:.2f} s", flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=120)
    base_ips = len(recs) / min(walls[modes[0]])
    print(f"# load average {os.getloadavg()[0]:.2f} at end; items/s from the best pass (least disturbed by other load), mean wall s beside it; "
          "latency percentiles over every request of every pass (nearest rank)")
    print(f"{'mode':<22} {'clients':>7} {'items':>5} {'failed':>6} {'best s':>7} {'mean s':>7} {'items/s':>8} "
          f"{'vs in-proc':>10} {'p50 ms':>8} {'p99 ms':>8} {'max |diff|':>10}")
    names = {"in-process": "in-process (engine)", "clients": "serve /v1/score", "batch": "serve /v1/score/batch"}
    for mode in modes:
        wall = min(walls[mode])
        ips = len(recs) / wall
        lat = lats[mode]
        p50s = f"{pct(lat, 0.5) * 1000:8.0f}" if lat else f"{'-':>8}"
        p99s = f"{pct(lat, 0.99) * 1000:8.0f}" if lat else f"{'-':>8}"
        clients_col = str(mode[1]) if mode[0] != "in-process" else "-"
        print(f"{names[mode[0]]:<22} {clients_col:>7} {len(recs):>5} {failed[mode]:>6} {wall:7.2f} {statistics.mean(walls[mode]):7.2f} {ips:8.2f} "
              f"{ips / base_ips:9.2f}x {p50s} {p99s} {diff[mode]:10.1e}")


if __name__ == "__main__":
    main()
