"""``api_limits`` benchmark: adaptive pacing against fixed concurrency under a server's rate limit.

The local fault server (tests/fault_server.py) allows 600 requests a minute, refilled continuously as
OpenAI's budgets are, answers after an injected latency and sends OpenAI's ``x-ratelimit-*`` headers; a
request over the budget gets a 429 (without Retry-After, as OpenAI's headers give the reset instead). The
same 2,000 items are scored once with adaptive pacing (the default: ``--concurrency`` is the most in
flight) and once per fixed concurrency (``pace=False``: that many in flight whatever the server says; a 429
is retried with exponential backoff), each against a fresh server whose budget starts full. No cache.

The server's clock runs ``--time-scale`` times faster (default 5: its minute lasts 12 s, so the 600
requests a minute refill at 50 a second, reset times given in real seconds), which keeps the run to a few
minutes; the limit seen by the client is the same shape at any scale. At 50 a second the limit, not the
client's own overhead on a small machine, sets the pace (at 10x, 100 a second, two shared cores were
themselves the bottleneck for every mode). The floor is the server's own rate:
the first 600 requests at once, the rest at 50 a second (printed as "server limit"). Every ratio is
against the best fixed concurrency of the same run (the fastest with no failed item).

    python benchmarks/api_limits.py                          # 2,000 items, 600/min at 5x, c = 4, 8, 16, 32
    python benchmarks/api_limits.py --items 500 --time-scale 20
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.backends.layer import innermost
from judge.backends.openai_api import OpenAIBackend
from judge.core.config import GenerateConfig
from judge.data.items import USER, Item, Turn
from judge.engine import MethodSpec, prepare
from judge.engine.session import RunOptions, Session
from tests.fault_server import FaultServer, RateLimit


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def synthetic_items(n: int) -> list[Item]:
    return [Item(id=f"b{i}", level="turn", context=(Turn(USER, f"Question {i}: any tips for learning chess?"),),
                 response=f"Answer {i}: play a few short games every day and review them.") for i in range(n)]


def run(args: argparse.Namespace, concurrency: int, pace: bool) -> dict:
    limit = RateLimit(requests_per_minute=args.rpm, time_scale=args.time_scale)
    with FaultServer(latency=args.latency, limit=limit) as srv, Session(RunOptions(progress=False)) as session:
        cfg = GenerateConfig(concurrency=concurrency, max_retries=args.max_retries, timeout=60, batch_size=args.items,
                             cache=False)
        options = {"base_url": srv.base_url} if pace else {"base_url": srv.base_url, "pace": False}
        spec = MethodSpec(prompt="yesno", backend="openai", model="fault-model", options=options, generate=cfg)
        items = synthetic_items(args.items)
        judge = session.build(prepare(spec, items))
        t0 = time.perf_counter()
        scores = list(judge.score(items))
        wall = time.perf_counter() - t0
        backend = judge.backend  # type: ignore[attr-defined]
        counters = backend.counters()
        inner = innermost(backend)  # the OpenAI client, behind its cost layer
        assert isinstance(inner, OpenAIBackend), type(inner)
        pacer = inner.pacer
        return {"mode": f"adaptive (1..{concurrency})" if pace else f"fixed {concurrency}", "pace": pace,
                "items": len(items), "failed": sum(not s.ok for s in scores), "wall_s": wall,
                "items_per_s": len(items) / wall, "limited": srv.limited, "retries": counters["retries"],
                "range": f"{pacer.stats.lowest}..{pacer.stats.highest}" if pace and pacer else str(concurrency),
                "peak_rss_mb": peak_rss_mb()}


def main() -> None:
    ap = argparse.ArgumentParser(description="adaptive pacing vs fixed concurrency under a simulated rate limit")
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--rpm", type=float, default=600, help="requests a minute the server allows (default 600)")
    ap.add_argument("--time-scale", type=float, default=5.0, help="speed of the server's clock (default 5)")
    ap.add_argument("--latency", type=float, default=0.05, help="seconds the server takes per request (default 0.05)")
    ap.add_argument("--fixed", type=int, nargs="+", default=[4, 8, 16, 32], help="fixed concurrencies to compare")
    ap.add_argument("--concurrency", type=int, default=32, help="most requests in flight for adaptive pacing")
    ap.add_argument("--max-retries", type=int, default=6, help="retries of a failing request (the CLI's default)")
    args = ap.parse_args()
    rate = args.rpm / 60 * args.time_scale
    floor = max(0.0, args.items - args.rpm) / rate
    print(f"# api_limits benchmark, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"# {args.items} items; server: {args.rpm:g} requests/minute at {args.time_scale:g}x ({rate:g}/s after a "
          f"burst of {args.rpm:g}), {args.latency * 1000:.0f} ms per request; server limit {floor:.1f} s\n")
    rows = [run(args, c, pace=False) for c in args.fixed]
    rows.append(run(args, args.concurrency, pace=True))
    ok = [r for r in rows if not r["pace"] and r["failed"] == 0]
    best = min(ok, key=lambda r: r["wall_s"]) if ok else None
    print(f"{'mode':>18} {'items':>6} {'failed':>6} {'429s':>6} {'retries':>7} {'in flight':>9} {'wall s':>7} "
          f"{'items/s':>8} {'vs best fixed':>13} {'vs limit':>8} {'peak RSS MB':>11}")
    for r in rows:
        vs = f"{best['wall_s'] / r['wall_s']:.2f}x" if best else "n/a"
        print(f"{r['mode']:>18} {r['items']:>6} {r['failed']:>6} {r['limited']:>6} {r['retries']:>7} {r['range']:>9} "
              f"{r['wall_s']:>7.2f} {r['items_per_s']:>8.1f} {vs:>13} {floor / r['wall_s'] if floor else 0:>7.2f}x "
              f"{r['peak_rss_mb']:>11.0f}")
    adaptive = rows[-1]
    if best is None:
        print("\nno fixed concurrency finished without failed items")
    else:
        verdict = "met" if adaptive["failed"] == 0 and adaptive["wall_s"] <= best["wall_s"] else "NOT met"
        print(f"\ntarget (adaptive: 0 failed, at least as fast as the best fixed concurrency, {best['mode']}): {verdict}"
              f" ({adaptive['wall_s']:.2f} s vs {best['wall_s']:.2f} s, {adaptive['failed']} failed)")


if __name__ == "__main__":
    main()
