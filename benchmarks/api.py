"""``api`` benchmark: items/s of the OpenAI-compatible backend as concurrency grows.

Part 1 (always): a local OpenAI-compatible server (tests/fault_server.py) that answers every request
after a fixed injected latency (default 200 ms) with fixed log-probabilities, so the client's
concurrency is the only thing that changes; ideal scaling is linear until the server saturates.
Part 2 (``--llama-server``): the real ``python -m llama_cpp.server`` serving the packaged SmolLM2,
concurrency 1 vs 8 (llama-cpp-python's server evaluates one request at a time, so expect ~1x).

Every ratio is against concurrency 1 measured in the same run. No cache: every item is a request.

    python benchmarks/api.py                       # fault server, 200 ms, concurrency 1, 4, 16
    python benchmarks/api.py --llama-server        # + the real llama.cpp server, concurrency 1 vs 8
"""

from __future__ import annotations

import argparse
import platform
import resource
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.core.config import GenerateConfig
from judge.data.items import USER, Item, Turn
from judge.datasets import load_items
from judge.engine import MethodSpec, prepare
from judge.engine.session import RunOptions, Session
from tests.fault_server import FaultServer


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def run(base_url: str, model: str, items: list[Item], concurrency: int, chat: bool | None = None) -> dict:
    # One batch holds every item, so `concurrency` requests stay in flight (batches would add barriers).
    cfg = GenerateConfig(concurrency=concurrency, max_retries=2, timeout=300, chat=chat, batch_size=len(items),
                         cache=False)
    spec = MethodSpec(prompt="yesno", backend="openai", model=model, options={"base_url": base_url}, generate=cfg)
    with Session(RunOptions(progress=False)) as session:
        judge = session.build(prepare(spec, items))
        t0 = time.perf_counter()
        scores = list(judge.score(items))
        wall = time.perf_counter() - t0
    failed = sum(not s.ok for s in scores)
    return {"concurrency": concurrency, "items": len(items), "failed": failed, "wall_s": wall,
            "items_per_s": len(items) / wall, "peak_rss_mb": peak_rss_mb(),
            "values": [s.value for s in scores]}


def table(title: str, rows: list[dict]) -> str:
    """Ratios against the mean items/s of the concurrency-1 rows of the same run."""
    ones = [r["items_per_s"] for r in rows if r["concurrency"] == 1]
    base = sum(ones) / len(ones)
    out = [title, f"{'concurrency':>11} {'items':>6} {'failed':>6} {'wall s':>8} {'items/s':>8} "
                  f"{'ratio vs c=1':>12} {'ideal':>6} {'peak RSS MB':>11}"]
    for r in rows:
        out.append(f"{r['concurrency']:>11} {r['items']:>6} {r['failed']:>6} {r['wall_s']:>8.2f} "
                   f"{r['items_per_s']:>8.2f} {r['items_per_s'] / base:>11.2f}x {r['concurrency']:>5}x "
                   f"{r['peak_rss_mb']:>11.0f}")
    return "\n".join(out)


def synthetic_items(n: int) -> list[Item]:
    return [Item(id=f"b{i}", level="turn", context=(Turn(USER, f"Question {i}: any tips for learning chess?"),),
                 response=f"Answer {i}: play a few short games every day and review them.") for i in range(n)]


def fault_server_part(args: argparse.Namespace) -> None:
    with FaultServer(latency=args.latency) as srv:
        items = synthetic_items(args.items)
        rows = [run(srv.base_url, "fault-model", items, c) for c in args.concurrency]
    assert all(r["failed"] == 0 for r in rows), "items failed against the latency server"
    print(table(f"fault server, injected latency {args.latency * 1000:.0f} ms per request, fixed logprobs", rows))
    print()


def llama_server_part(args: argparse.Namespace) -> None:
    from judge.backends.llamacpp_cpu import llama_server_command
    from judge.models.packaged import resolve_model_path

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = llama_server_command(["--model", str(resolve_model_path(None)), "--host", "127.0.0.1", "--port", str(port),
                                "--n_ctx", "2048", "--n_threads", str(args.threads)])
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(f"{url}/v1/models", timeout=2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("llama_cpp.server did not start") from None
                time.sleep(0.3)
        items = load_items(ROOT / "examples" / "dialogues.jsonl")[: args.llama_items]
        run(f"{url}/v1", "smollm2", items[:1], 1)  # warm-up (first request pays for setup)
        rows = []
        # ABBA order over repeats: the machine's load drifts, and a fixed order would favour one side
        for rep in range(args.repeat):
            for c in ((1, 8) if rep % 2 == 0 else (8, 1)):
                # distinct prompts per run: the server's prefix cache must not make a later run cheaper
                tagged = [Item(id=it.id, level=it.level, context=it.context,
                               response=f"{it.response} (run {rep}, c={c})") for it in items]
                rows.append(run(f"{url}/v1", "smollm2", tagged, c))
        print(table(f"llama_cpp.server (SmolLM2-135M Q4_1, --n_threads {args.threads}), {len(items)} "
                    "FED-style yes/no items", rows))
        by_c: dict[int, list[float]] = {}
        for r in rows:
            by_c.setdefault(r["concurrency"], []).append(r["items_per_s"])
        mean = {c: statistics.mean(v) for c, v in by_c.items()}
        med = {c: statistics.median(v) for c, v in by_c.items()}
        print(f"summary: items/s mean c=1 {mean[1]:.2f}, c=8 {mean[8]:.2f} (ratio {mean[8] / mean[1]:.2f}x); "
              f"median c=1 {med[1]:.2f}, c=8 {med[8]:.2f} (ratio {med[8] / med[1]:.2f}x); n={len(by_c[1])} runs each")
        print()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description="items/s of the OpenAI-compatible backend vs concurrency")
    ap.add_argument("--items", type=int, default=64, help="items per concurrency level (fault server)")
    ap.add_argument("--latency", type=float, default=0.2, help="injected seconds per request (fault server)")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--llama-server", action="store_true", help="also measure the real llama.cpp server, c=1 vs 8")
    ap.add_argument("--llama-items", type=int, default=12)
    ap.add_argument("--threads", type=int, default=2, help="llama_cpp.server threads")
    ap.add_argument("--repeat", type=int, default=2, help="llama server runs per concurrency (ABBA order)")
    args = ap.parse_args()
    print(f"# api benchmark, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
          f"{__import__('os').cpu_count()} CPUs, Python {platform.python_version()}\n")
    fault_server_part(args)
    if args.llama_server:
        llama_server_part(args)


if __name__ == "__main__":
    main()
