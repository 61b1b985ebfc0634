"""``instruction_prefix`` benchmark: the criteria prompt with its instructions evaluated once per run.

A criteria-family template declares ``split_instructions``: its item-independent text (the chat
template's system part and the preamble) ends at a llama.cpp batch boundary of its own, so the next
item's prompt reuses it from the KV cache (docs/harness.md, "Scheduling by prefix"). This measures
what that saves, in one run, on the same seeded items of each set:

* ``off``: the template opted out (a copy saying ``split_instructions = false``: the baseline);
* ``on``: the built-in template, split where its instructions end.

Passes run in ABBA order (off, on, on, off; ``--once``: off, on), each in its own process with its own
model load and a fresh SQLite cache, so that its wall time (model load excluded) and peak memory are its
own. It prints per pass and set the items/s, prompt tokens and tokens evaluated (after prefix reuse),
the ratios against the baseline of this run, then per set how the scores of the two sides compare:
the split moves a batch boundary, so llama.cpp's kernels may move an answer in its last bits (max
|score difference| and the Spearman of the two). Passes of one side must agree bit for bit. Exit status
1 when a target is missed or a side is not deterministic.

    python benchmarks/instruction_prefix.py --model qwen2.5-coder-0.5b --items 20     # DZ and TU
    python benchmarks/instruction_prefix.py --items 2 --once                          # SmolLM2, seconds
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

#: items/s of ``on`` over ``off`` on DailyDialog-Zhao, the set whose short prompts the instructions weigh most.
TARGET = 1.3


def unsplit_copy(prompt: str, folder: Path) -> Path:
    """The built-in template opted out of the split (``split_instructions = false`` in its header), under
    the same name, so that it renders the same text (its partials come from the built-in folder) and only
    the split differs. Every template splits by default; the criteria ones still say so."""
    sys.path.insert(0, str(ROOT))
    from judge.prompts.templates import builtin_prompts

    source = builtin_prompts()[prompt].read_text(encoding="utf-8")
    if "split_instructions = true\n" in source:
        source = source.replace("split_instructions = true\n", "split_instructions = false\n")
    elif source.startswith("{#- judge\n"):
        source = source.replace("{#- judge\n", "{#- judge\nsplit_instructions = false\n", 1)
    else:
        raise SystemExit(f"{prompt} has no metadata block to opt out in")
    path = folder / f"{prompt}.j2"
    path.write_text(source, encoding="utf-8")
    return path


def run_pass(spec: dict[str, Any]) -> dict[str, Any]:
    """One side on every set: one model load, the sets one after another through the same backend."""
    sys.path.insert(0, str(ROOT))
    from judge.core.config import GenerateConfig
    from judge.datasets import load_benchmark
    from judge.datasets.benchmarks import dataset_info
    from judge.engine import MethodSpec, prepare
    from judge.engine.session import RunOptions, Session
    from judge.harness.runner import seeded_subset

    generate = GenerateConfig(threads=spec["threads"], cache_path=spec["cache"])
    rule = {"rule": "expected"} if Path(spec["prompt"]).stem.startswith("rating") else {}
    method = MethodSpec(prompt=spec["prompt"], model=spec["model"], generate=generate, **rule)
    out: dict[str, Any] = {"sets": {}}
    with Session(RunOptions(progress=False)) as session:
        for name in spec["sets"]:
            info = dataset_info(name)
            quality = info.quality(info.overall)
            items = seeded_subset([it for it in load_benchmark(info.name, spec["data_dir"])
                                   if it.human(quality.name) is not None], spec["items"][name], 0)
            scorer = session.build(prepare(method, items, quality))
            start = time.perf_counter()
            scores = list(scorer.score(items))
            wall = time.perf_counter() - start
            out["sets"][name] = {
                "wall": wall, "items": len(scores), "failed": sum(not s.ok for s in scores),
                "prompt_tokens": sum(s.n_prompt_tokens for s in scores),
                "evaluated": sum(s.n_evaluated_tokens for s in scores),
                "scores": {s.item_id: s.value for s in scores},
                "probs": {s.item_id: s.label_probs for s in scores}}
    out["peak_mb"] = peak_rss_mb()
    return out


def spearman(a: list[float], b: list[float]) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic) if len(a) > 2 else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--model", default=None, help="packaged name or GGUF path (default: the embedded SmolLM2)")
    ap.add_argument("--prompt", default="yesno-criteria", help="a built-in template (every one splits by default)")
    ap.add_argument("--sets", nargs="+", default=["DZ", "TU"], help="benchmark sets (short names or names)")
    ap.add_argument("--items", type=int, default=20, help="items per set (a seeded draw)")
    ap.add_argument("--set-items", action="append", default=[], metavar="SET=N",
                    help="items of one set, instead of --items (repeatable), e.g. TU=5: its prompts are long")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--once", action="store_true", help="one pass per side (off, on) instead of ABBA")
    ap.add_argument("--pass-json", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.pass_json:
        print(json.dumps(run_pass(json.loads(args.pass_json))))
        return 0

    tmp = Path(tempfile.mkdtemp(prefix="instruction_prefix_"))
    prompts = {"off": str(unsplit_copy(args.prompt, tmp)), "on": args.prompt}
    order = ["off", "on"] if args.once else ["off", "on", "on", "off"]
    items = dict.fromkeys(args.sets, args.items) | {k: int(v) for k, _, v in (t.partition("=") for t in args.set_items)}
    args.sizes = ", ".join(f"{items[name]} {name}" for name in args.sets)
    load0 = os.getloadavg()
    runs: dict[str, list[dict[str, Any]]] = {"off": [], "on": []}
    for n, side in enumerate(order):
        print(f"... pass {n + 1}: split {side}", file=sys.stderr, flush=True)
        runs[side].append(subprocess_pass(script=__file__, spec={
            "side": side, "prompt": prompts[side], "model": args.model, "sets": args.sets, "items": items,
            "threads": args.threads, "data_dir": str(Path(args.data_dir).resolve()),
            "cache": str(tmp / f"cache{n}.sqlite")}))
    return report(runs, args, load0, os.getloadavg())


def report(runs: dict[str, list[dict[str, Any]]], args: argparse.Namespace, load0: tuple, load1: tuple) -> int:
    print(f"instruction_prefix: {args.prompt}, model {args.model or 'smollm2'} (llama.cpp, {args.threads} threads), "
          f"items {args.sizes}, {len(runs['on'])} pass(es) per side, fresh cache per pass")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"load average at start {load0[0]:.2f}, at end {load1[0]:.2f}")
    print(f"{'set':6} {'split':5} {'wall s':>8} {'items':>5} {'items/s':>8} {'prompt tok':>10} {'tok eval':>9} "
          f"{'eval %':>7} {'ratio':>7} {'peak MB':>8}")
    ok = True

    def mean(side: str, name: str, key: str) -> float:
        return sum(r["sets"][name][key] for r in runs[side]) / len(runs[side])

    for name in args.sets:
        base = mean("off", name, "items") / mean("off", name, "wall")
        for side in ("off", "on"):
            items, wall = mean(side, name, "items"), mean(side, name, "wall")
            prompt, evaluated = mean(side, name, "prompt_tokens"), mean(side, name, "evaluated")
            peak = max(r["peak_mb"] for r in runs[side])
            print(f"{name:6} {side:5} {wall:8.2f} {items:5.0f} {items / wall:8.2f} {prompt:10.0f} {evaluated:9.0f} "
                  f"{100 * evaluated / prompt:6.1f}% {items / wall / base:6.2f}x {peak:8.0f}")
    for name in args.sets:
        off, on = (runs[side][0]["sets"][name] for side in ("off", "on"))
        same = all(r["sets"][name]["probs"] == runs[side][0]["sets"][name]["probs"]
                   for side in ("off", "on") for r in runs[side])
        ids = [i for i in off["scores"] if off["scores"][i] is not None and on["scores"].get(i) is not None]
        a, b = [off["scores"][i] for i in ids], [on["scores"][i] for i in ids]
        diff = max((abs(x - y) for x, y in zip(a, b, strict=True)), default=float("nan"))
        speed = (on["items"] / mean("on", name, "wall")) / (off["items"] / mean("off", name, "wall"))
        tokens = mean("on", name, "evaluated") / mean("off", name, "evaluated")
        print(f"{name}: on vs off: items/s {speed:.2f}x, tokens evaluated {tokens:.2f}x; scores over {len(ids)} items: "
              f"identical {a == b}, max |diff| {diff:.1e}, Spearman {spearman(a, b):.4f}; "
              f"failed {off['failed']} off, {on['failed']} on; passes of one side bit-identical: "
              f"{same if len(runs['on']) > 1 else 'not checked (one pass per side)'}")
        ok &= same and not off["failed"] and not on["failed"]
        if name in ("DZ", "dailydialog-zhao"):
            met = speed >= TARGET
            print(f"target: {name} items/s with the split vs without: {speed:.2f}x (target >= {TARGET}x): "
                  f"{'met' if met else 'MISSED'}")
            ok &= met
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
