"""``long_prompts`` benchmark: llama.cpp settings for the long prompts of k-shot judging.

A 4-shot BM25-context prompt on Topical-USR holds about 3000 tokens (six times a 0-shot one), and
prompt evaluation is nearly all of its cost, so the k-shot rows of a CPU leaderboard take hours. This
measures what llama.cpp's own settings change there: the same judge (``--prompt yesno --selector
bm25-context --k 4``, no cache) over the same items, once per setting, in ABBA order (baseline,
each variant, each variant again, baseline again), every ratio against the mean of the baseline
passes of this run. Scores must not move by more than float noise: the table prints the largest
difference from the baseline's.

    python benchmarks/long_prompts.py --model qwen2.5-coder-0.5b --items 4
    python benchmarks/long_prompts.py --dataset DZ --items 8 --variant flash_attn=true --variant n_ubatch=1024
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.cli.options import key_value
from judge.core.config import GenerateConfig
from judge.datasets import load_benchmark
from judge.datasets.benchmarks import dataset_info
from judge.engine import MethodSpec, prepare
from judge.engine.session import RunOptions, Session
from judge.harness.runner import seeded_subset


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def one_pass(options: dict[str, object], args: argparse.Namespace, items: list, pool: list, quality: object
             ) -> tuple[float, int, list[float | None]]:
    """A freshly loaded model scores ``items[0]`` untimed (load, buffers), then the rest: the seconds,
    tokens evaluated and scores of the rest."""
    spec = MethodSpec(prompt="yesno", selector="bm25-context", k=args.k, model=args.model, options=options,
                      generate=GenerateConfig(threads=args.threads, cache=False))
    with Session(RunOptions(progress=False)) as session:
        scorer = session.build(prepare(spec, items, quality, pool=pool))  # type: ignore[arg-type]
        list(scorer.score(items[:1]))
        start = time.perf_counter()
        scores = list(scorer.score(items[1:]))
        seconds = time.perf_counter() - start
    return seconds, sum(s.n_evaluated_tokens for s in scores), [s.value for s in scores]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--dataset", default="TU", help="benchmark set (default Topical-USR, the longest prompts)")
    ap.add_argument("--items", type=int, default=4, help="timed items per pass (a seeded draw from the set)")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--model", default=None, help="packaged name or GGUF path (default: the embedded SmolLM2)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--variant", action="append", type=lambda t: key_value(t, "--variant", _value), metavar="KEY=VALUE",
                    help="a llama.cpp setting to compare with the defaults (repeatable; default flash_attn=true)")
    args = ap.parse_args()
    variants = args.variant or [("flash_attn", True)]
    info = dataset_info(args.dataset)
    everything = load_benchmark(info.name, args.data_dir)
    quality = info.quality("overall") if any(q.name == "overall" for q in info.qualities) else info.qualities[0]
    pool = [it for it in everything if it.human(quality.name) is not None]
    items = seeded_subset(pool, args.items + 1, 0)  # one more: the untimed warm-up item
    settings: list[tuple[str, dict[str, object]]] = [("defaults", {})]
    settings += [(f"{k}={json.dumps(v)}", {k: v}) for k, v in variants]
    order = settings + settings[1:] + settings[:1]  # A B.. B.. A
    print(f"{info.name}, {args.items} items, yes/no {args.k}-shot BM25-context, model {args.model or 'smollm2'}, "
          f"{args.threads} threads, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    results: dict[str, list[tuple[float, int, list[float | None]]]] = {}
    for name, options in order:
        results.setdefault(name, []).append(one_pass(options, args, items, pool, quality))
        s, toks, _ = results[name][-1]
        print(f"  pass {name:<22} {s:8.1f} s  {toks / s:7.1f} tok/s", flush=True)
    base_s = sum(r[0] for r in results["defaults"]) / len(results["defaults"])
    base_scores = results["defaults"][0][2]
    n = len(items) - 1
    print(f"\n{'setting':<24}{'s/item':>8}{'tok/s':>9}{'ratio':>8}{'max |score diff|':>18}")
    for name, runs in results.items():
        s = sum(r[0] for r in runs) / len(runs)
        tokens = sum(r[1] for r in runs) / len(runs)
        diff = max((abs(a - b) for r in runs for a, b in zip(r[2], base_scores, strict=True)
                    if a is not None and b is not None), default=float("nan"))
        print(f"{name:<24}{s / n:8.2f}{tokens / s:9.1f}{base_s / s:7.2f}x{diff:18.2e}")
    print(f"peak RSS {peak_rss_mb():.0f} MB; load average at end {os.getloadavg()[0]:.1f}")


def _value(text: str) -> object:
    """A JSON value (true, 1024) as llama.cpp wants it; else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


if __name__ == "__main__":
    main()
