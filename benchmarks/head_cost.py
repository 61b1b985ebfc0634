"""``head_cost`` benchmark: what reading the hidden state adds to the criteria prompt's cost.

A head scores from the hidden state at the answer position, read in the decode that gives the prompt's
answer (llama.cpp's eval callback hands over the final norm's output: docs/heads.md). This measures the
price of that in one run, on the same seeded items, each pass in its own process with its own model load
and a fresh SQLite cache:

* ``answer``: the prompt as every LLM method runs it (label distribution only; the baseline);
* ``hidden``: the same prompts, the hidden state read with each answer (what ``judge fit`` and a head
  method run).

Passes run ABBA (answer, hidden, hidden, answer; ``--once``: answer, hidden). It prints per pass the wall
time (model load excluded), items/s, tokens evaluated and peak RSS, the cost per item of ``hidden``
against ``answer`` (target: at most 1.1x), and whether the two sides gave the same answers bit for bit
(they must: the same decode). Exit status 1 when the target is missed or the answers differ.

    python benchmarks/head_cost.py --model qwen2.5-coder-1.5b --items 10 --once       # DZ, minutes
    python benchmarks/head_cost.py --items 4 --once                                   # SmolLM2, seconds
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from prefix_share import peak_rss_mb, subprocess_pass  # the house's timed passes, one process each

ROOT = Path(__file__).resolve().parents[1]
#: Cost per item of reading the hidden state, against the answer alone.
TARGET = 1.1


def one_pass(spec: dict[str, Any]) -> dict[str, Any]:
    """Score the items with the prompt's judge as the engine builds it, the hidden state read or not."""
    os.environ["JUDGE_CACHE"] = str(Path(spec["work"]) / "cache.sqlite")
    sys.path.insert(0, str(ROOT))
    from judge.core.config import GenerateConfig
    from judge.datasets import load_benchmark
    from judge.datasets.benchmarks import dataset_info
    from judge.datasets.split import split_items
    from judge.engine import MethodSpec, prepare
    from judge.engine.session import RunOptions, Session
    from judge.harness.runner import seeded_subset
    from judge.scorers.llm import LLMJudge

    info = dataset_info(spec["dataset"])
    quality = info.quality(info.overall)
    items = [it for it in split_items(load_benchmark(info.name, spec["data_dir"]), "test")
             if it.human(quality.name) is not None]
    items = seeded_subset(items, spec["items"], 0)
    method = MethodSpec(prompt=spec["prompt"], model=spec["model"], generate=GenerateConfig(threads=spec["threads"]))
    with Session(RunOptions(progress=False)) as session:
        t0 = time.perf_counter()
        judge = session.build(prepare(method, items, quality))
        assert isinstance(judge, LLMJudge)
        judge.hidden = spec["hidden"]
        load = time.perf_counter() - t0
        t1 = time.perf_counter()
        scores = list(judge.score(items))
        wall = time.perf_counter() - t1
        tokens = session.counters().get("tokens_evaluated", 0)
    return {"wall": wall, "load": load, "rows": len(scores), "tokens": tokens, "peak_mb": peak_rss_mb(),
            "answers": [s.label_probs for s in scores], "vectors": sum(s.vector is not None for s in scores),
            "failed": sum(not s.ok for s in scores)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None, help="default: the embedded SmolLM2")
    ap.add_argument("--prompt", default="yesno-criteria")
    ap.add_argument("--dataset", default="DZ")
    ap.add_argument("--items", type=int, default=10)
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--once", action="store_true", help="answer, hidden (default ABBA: answer, hidden, hidden, answer)")
    ap.add_argument("--pass-json", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.pass_json:
        print(json.dumps(one_pass(json.loads(args.pass_json))))
        return 0
    order = [False, True] if args.once else [False, True, True, False]
    print(f"head_cost: {args.prompt} on {args.items} {args.dataset} test items, model {args.model or 'default'}; "
          f"{platform.machine()}, {os.cpu_count()} CPUs, {args.threads} threads; "
          f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC")
    results: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
    with tempfile.TemporaryDirectory(prefix="judge-head-cost-") as tmp:
        for i, hidden in enumerate(order):
            work = Path(tmp) / f"pass{i}"
            work.mkdir()
            spec = {"model": args.model, "prompt": args.prompt, "dataset": args.dataset, "items": args.items,
                    "data_dir": args.data_dir, "threads": args.threads, "hidden": hidden, "work": str(work),
                    "name": "hidden" if hidden else "answer"}
            results[hidden].append(subprocess_pass(spec, __file__))
    print(f"{'pass':<8} {'wall s':>8} {'items':>6} {'items/s':>8} {'tokens':>7} {'vectors':>8} {'peak MB':>8}")
    for hidden, name in ((False, "answer"), (True, "hidden")):
        for r in results[hidden]:
            print(f"{name:<8} {r['wall']:>8.2f} {r['rows']:>6} {r['rows'] / r['wall']:>8.3f} {r['tokens']:>7} "
                  f"{r['vectors']:>8} {r['peak_mb']:>8.0f}")
    answer_s = sum(r["wall"] for r in results[False]) / sum(r["rows"] for r in results[False])
    hidden_s = sum(r["wall"] for r in results[True]) / sum(r["rows"] for r in results[True])
    ratio = hidden_s / answer_s
    same = all(r["answers"] == results[False][0]["answers"] for side in results.values() for r in side)
    print(f"cost per item, hidden state read vs answer alone: {ratio:.3f}x (target <= {TARGET}x): "
          f"{'met' if ratio <= TARGET else 'missed'}")
    print(f"answers identical on both sides: {same}")
    return 0 if same and ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
