"""``prefix_share`` benchmark: many questions in one pass, against one question and the raw hardware.

Every pass is a ``judge run`` (``run_experiment``) of the default model (SmolLM2-135M via llama.cpp)
in its own subprocess, with a fresh SQLite cache and results folder, so that its wall time and its
peak memory are its own. In one run it measures:

* ``criteria-1``: ``yesno-criteria`` on N Topical-USR items (the baseline, run first and last);
* ``criteria-6``: the six prompts of the criteria family built for sharing (``prompts/_criteria.j2``:
  the five yes/no prompts and ``rating-criteria-shared``, the same text up to the question) on the
  same items, as one ``judge run`` (scheduled by prefix: docs/harness.md);
* ``criteria-6-published``: the same with the published ``rating-criteria`` for the sixth (it says how
  to answer in its first line, so it shares no prefix with the others: what sharing saves);
* ``criteria-6-each``: the same six methods one ``judge run`` each (what a run cost before scheduling,
  and the rows the scheduled run must reproduce byte for byte);
* ``fedq-1`` / ``fedq-9`` / ``fedq-9-each``: the shared FED family (``prompt = "fedq"``, zero-shot) on
  FED-Turn's Overall alone, on all nine turn qualities in one run, and one run per quality;
* ``raw``: llama-cpp-python alone (no judge code in the pass) evaluating the token ids of the
  ``criteria-1`` prompts, each from an empty KV cache: the machine's prompt throughput in tokens/s;
* ``--variant flash_attn=true`` etc.: ``criteria-6`` with a llama.cpp option, its scores compared
  with the default's (the option joins the cache key: docs/backends.md).

It prints each pass's wall time (model load excluded), items/s, tokens evaluated (after prefix reuse),
unique-token throughput and peak RSS, the ratios against the baseline of the same run, and whether
the scheduled rows equal the one-by-one rows. Exit status 1 when a target is missed.

    python benchmarks/prefix_share.py --data-dir ../shared/data                 # 48 TU items, 48 FT items
    python benchmarks/prefix_share.py --data-dir ../shared/data --items 12 --fed-items 12 --variant flash_attn=true
    python benchmarks/prefix_share.py --data-dir ../shared/data --family criteria   # the criteria passes only
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

CRITERIA = ["yesno-criteria", "yesno-aspect-relevant", "yesno-aspect-fluent", "yesno-aspect-engaging",
            "yesno-aspect-consistent", "rating-criteria-shared"]
PUBLISHED = [*CRITERIA[:5], "rating-criteria"]
TARGETS = {"criteria": 1.6, "fedq": 2.5, "unique_throughput": 0.85, "memory": 1.2}
FAMILIES = ("criteria", "fedq")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


# -- the passes (each runs in its own process) ----------------------------------------------------------

def _config(path: Path, *, name: str, dataset: str, qualities: str, limit: int, methods: list[dict[str, Any]],
            data_dir: str, output: Path, cache: Path, threads: int) -> Path:
    def method(m: dict[str, Any]) -> str:
        opts = m.get("options", {})
        options = ", ".join(f"{k} = {json.dumps(v)}" for k, v in opts.items())
        lines = ["[[methods]]", f'name = "{m["name"]}"', f'prompt = "{m["prompt"]}"']
        if m.get("rule"):
            lines.append(f'rule = "{m["rule"]}"')
        if opts:
            lines.append(f"options = {{ {options} }}")
        lines.append(f'generate = {{ threads = {threads}, cache_path = "{cache}" }}')
        return "\n".join(lines)

    text = "\n".join([
        f'name = "{name}"', f'data_dir = "{data_dir}"', f'output = "{output}"', f"limit = {limit}",
        f'datasets = [{{ name = "{dataset}", qualities = {qualities} }}]', "",
        *(method(m) + "\n" for m in methods)])
    path.write_text(text, encoding="utf-8")
    return path


def run_pass(spec: dict[str, Any]) -> dict[str, Any]:
    """One ``judge run`` (or several, one per method, for an ``-each`` pass) on a fresh cache."""
    sys.path.insert(0, str(ROOT))
    from judge.harness import load_experiment, run_experiment

    work = Path(spec["work"])
    groups = [[m] for m in spec["methods"]] if spec["each"] else [spec["methods"]]
    wall = load = 0.0
    tokens = rows = 0
    for i, methods in enumerate(groups):
        out = work / f"out{i}"
        cfg = _config(work / f"run{i}.toml", name=spec["name"], dataset=spec["dataset"], qualities=spec["qualities"],
                      limit=spec["limit"], methods=methods, data_dir=spec["data_dir"], output=out,
                      cache=work / "cache.sqlite", threads=spec["threads"])
        t0 = time.perf_counter()
        summary = run_experiment(load_experiment(cfg), progress=False, plots=False, log=lambda _msg: None)
        wall += time.perf_counter() - t0
        for t in summary.timing.values():
            if t:
                load += t["load_s"]
                rows += t["rows"]
        tokens += summary.counters.get("tokens_evaluated", 0)
    cells = {str(path).split("/items/", 1)[1]: path.read_text("utf-8") for path in sorted(work.glob("out*/items/**/*.jsonl"))}
    return {"wall": wall - load, "load": load, "rows": rows, "tokens": tokens, "peak_mb": peak_rss_mb(),
            "cells": cells}


def raw_pass(spec: dict[str, Any]) -> dict[str, Any]:
    """llama-cpp-python alone: each prompt's token ids evaluated from an empty KV cache. Only the model load
    borrows judge's setting for machines that trap AMX, so that both sides run the same kernels."""
    import llama_cpp

    load: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    if not spec["extra_buffers"]:
        sys.path.insert(0, str(ROOT))
        from judge.backends.llamacpp_cpu import without_extra_buffers

        load = without_extra_buffers(llama_cpp)
    with load:  # the same kernels judge's backend uses on this machine (docs/backends.md, AMX)
        llm = llama_cpp.Llama(model_path=spec["model_path"], n_ctx=spec["n_ctx"], n_threads=spec["threads"],
                              n_threads_batch=spec["threads"], n_batch=512, logits_all=False, verbose=False,
                              **spec.get("options", {}))
    prompts = spec["prompts"]
    llm.reset()
    llm.eval(prompts[0][:64])  # warm-up, untimed
    t0 = time.perf_counter()
    for toks in prompts:
        llm.reset()
        llm.eval(toks)
    wall = time.perf_counter() - t0
    return {"wall": wall, "tokens": sum(len(t) for t in prompts), "peak_mb": peak_rss_mb()}


# -- the driver ----------------------------------------------------------------------------------------

def subprocess_pass(spec: dict[str, Any], script: str = __file__) -> dict[str, Any]:
    """One timed pass in a process of its own (``script --pass-json SPEC``, which prints its result as the
    last line of JSON): each pass loads its model and warms its caches alone. Also used by
    instruction_prefix.py for its own passes."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, script, "--pass-json", json.dumps(spec)], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        label = spec.get("name") or spec.get("side")
        raise SystemExit(f"pass {label} failed (exit status {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def raw_prompts(data_dir: str, limit: int, threads: int) -> tuple[list[list[int]], str, int, bool]:
    """Token ids of the ``criteria-1`` prompts, exactly as judge sends them (chat template included),
    made with judge's own prompt building before the raw pass, which then runs without judge."""
    sys.path.insert(0, str(ROOT))
    from judge.core.config import GenerateConfig
    from judge.datasets import load_benchmark
    from judge.datasets.benchmarks import dataset_info
    from judge.engine import MethodSpec, prepare
    from judge.engine.session import RunOptions, Session
    from judge.harness.runner import seeded_subset
    from judge.scorers.llm import LLMJudge

    items = [it for it in seeded_subset(load_benchmark("topical-usr", data_dir), limit, 0)
             if it.human("Overall") is not None]
    spec = MethodSpec(prompt="yesno-criteria", generate=GenerateConfig(threads=threads, cache=False))
    with Session(RunOptions(progress=False)) as session:
        judge = session.build(prepare(spec, items, dataset_info("topical-usr").quality("overall")))
        assert isinstance(judge, LLMJudge)
        backend = judge.backend
        toks = [backend.tokens(judge.build_prompt(it)[0]) for it in items]  # type: ignore[attr-defined]
        path, n_ctx = str(backend.path), backend.capabilities.max_context  # type: ignore[attr-defined]
        extra = bool(backend.extra_buffers)  # type: ignore[attr-defined]
    return toks, path, n_ctx, extra


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--items", type=int, default=48, help="Topical-USR items (seeded subset)")
    ap.add_argument("--fed-items", type=int, default=48, help="FED-Turn items (seeded subset)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--variant", action="append", default=[], metavar="KEY=VALUE",
                    help="a llama.cpp option to try on the criteria-6 pass (repeat), e.g. flash_attn=true")
    ap.add_argument("--skip-each", action="store_true", help="skip the one-by-one passes (no equality check)")
    ap.add_argument("--family", action="append", choices=FAMILIES,
                    help="measure only this family's passes (repeat; default: both)")
    ap.add_argument("--pass-json", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.pass_json:
        one = json.loads(args.pass_json)
        print(json.dumps(raw_pass(one) if one.get("raw") else run_pass(one)))
        return 0

    data_dir = str(Path(args.data_dir).resolve())
    tmp = Path(tempfile.mkdtemp(prefix="prefix_share_"))
    load0 = os.getloadavg()
    families = set(args.family or FAMILIES)

    def methods(prompts: list[str]) -> list[dict[str, Any]]:
        return [{"name": p, "prompt": p, **({"rule": "expected"} if p.startswith("rating") else {})} for p in prompts]

    crit = methods(CRITERIA)

    def spec(name: str, methods: list[dict[str, Any]], *, fed: bool = False, each: bool = False,
             qualities: str = '["overall"]') -> dict[str, Any]:
        work = tmp / name
        work.mkdir()
        return {"name": name, "work": str(work), "methods": methods, "each": each, "threads": args.threads,
                "data_dir": data_dir, "dataset": "fed-turn" if fed else "topical-usr", "qualities": qualities,
                "limit": args.fed_items if fed else args.items}

    fedq = [{"name": "fedq", "prompt": "fedq"}]
    plan: list[tuple[str, dict[str, Any]]] = []
    if "criteria" in families:
        plan += [("criteria-1", spec("criteria-1", crit[:1])), ("criteria-6", spec("criteria-6", crit)),
                 ("criteria-6-published", spec("criteria-6-published", methods(PUBLISHED)))]
        if not args.skip_each:
            plan.append(("criteria-6-each", spec("criteria-6-each", crit, each=True)))
        for v in args.variant:
            key, _, value = v.partition("=")
            opt = {key: json.loads(value)}
            plan.append((f"criteria-6 {v}", spec(f"criteria-6-{key}", [{**m, "options": opt} for m in crit])))
    if "fedq" in families:
        plan += [("fedq-1", spec("fedq-1", fedq, fed=True)),
                 ("fedq-9", spec("fedq-9", fedq, fed=True, qualities='"all"'))]
        if not args.skip_each:
            plan.append(("fedq-9-each", spec("fedq-9-each", fedq, fed=True)))
    if "criteria" in families:
        plan.append(("criteria-1 again", spec("criteria-1b", crit[:1])))

    results: dict[str, dict[str, Any]] = {}
    toks, model_path, n_ctx, extra = raw_prompts(data_dir, args.items, args.threads)
    results["raw"] = subprocess_pass({"raw": True, "name": "raw", "prompts": toks, "model_path": model_path,
                                      "n_ctx": n_ctx, "threads": args.threads, "extra_buffers": extra})
    for label, s in plan:
        print(f"... {label}", file=sys.stderr, flush=True)
        if label == "fedq-9-each":
            per = []
            sys.path.insert(0, str(ROOT))
            from judge.datasets.benchmarks import dataset_info

            for q in dataset_info("fed-turn").qualities:
                sub = {**s, "work": str(Path(s["work"]) / q.key.replace(" ", "-")),
                       "qualities": json.dumps([q.name])}
                Path(sub["work"]).mkdir()
                per.append(subprocess_pass(sub))
            results[label] = {"wall": sum(p["wall"] for p in per), "load": sum(p["load"] for p in per),
                              "rows": sum(p["rows"] for p in per), "tokens": sum(p["tokens"] for p in per),
                              "peak_mb": max(p["peak_mb"] for p in per),
                              "cells": {k: v for p in per for k, v in p["cells"].items()}}
        else:
            results[label] = subprocess_pass(s)
    load1 = os.getloadavg()
    return report(results, args, load0, load1)


def _scores(cells: dict[str, str]) -> dict[tuple[str, str], float | None]:
    out = {}
    for name, text in cells.items():
        for line in text.splitlines():
            row = json.loads(line)
            out[(name, row["id"])] = row["score"]
    return out


def report(results: dict[str, dict[str, Any]], args: argparse.Namespace, load0: tuple, load1: tuple) -> int:
    raw = results["raw"]
    raw_tps = raw["tokens"] / raw["wall"]
    crit = "criteria-1" in results
    fed = "fedq-1" in results
    base = (results["criteria-1"]["wall"] + results["criteria-1 again"]["wall"]) / 2 if crit else 0.0
    fed_base = results["fedq-1"]["wall"] if fed else 0.0
    sizes = [f"{args.items} Topical-USR items"] * crit + [f"{args.fed_items} FED-Turn items"] * fed
    print(f"prefix_share: SmolLM2-135M (llama.cpp, {args.threads} threads), fresh cache per pass; {', '.join(sizes)}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"load average at start {load0[0]:.2f}, at end {load1[0]:.2f}")
    print(f"raw llama.cpp: {raw['tokens']} tokens of the criteria-1 prompts, each from an empty KV cache: "
          f"{raw['wall']:.2f} s, {raw_tps:.0f} tokens/s, peak RSS {raw['peak_mb']:.0f} MB")
    print(f"{'pass':28} {'wall s':>8} {'rows':>5} {'items/s':>8} {'tok eval':>9} {'uniq tok/s':>10} "
          f"{'vs raw':>7} {'ratio':>7} {'peak MB':>8}")
    for label, r in results.items():
        if label == "raw":
            continue
        ref = fed_base if label.startswith("fedq") else base
        tps = r["tokens"] / r["wall"] if r["wall"] else 0.0
        print(f"{label:28} {r['wall']:8.2f} {r['rows']:5d} {r['rows'] / r['wall']:8.2f} {r['tokens']:9d} "
              f"{tps:10.0f} {tps / raw_tps:6.2f}x {r['wall'] / ref:6.2f}x {r['peak_mb']:8.0f}")
    scheduled = [(k, one) for k, one, present in (("criteria-6", "criteria-1", crit), ("fedq-9", "fedq-1", fed))
                 if present]
    lines = []
    if crit:
        lines.append(("criteria family, 6 prompts vs 1 (time)", results["criteria-6"]["wall"] / base, "criteria"))
    if fed:
        lines.append(("fedq family, 9 turn qualities vs 1 (time)", results["fedq-9"]["wall"] / fed_base, "fedq"))
    lines.append(("unique-token throughput vs raw (lower of the scheduled passes)",
                  min(results[k]["tokens"] / results[k]["wall"] for k, _ in scheduled) / raw_tps, "unique_throughput"))
    lines.append(("peak memory vs one method (higher of the scheduled passes)",
                  max(results[k]["peak_mb"] / results[one]["peak_mb"] for k, one in scheduled), "memory"))
    ok = True
    for what, value, key in lines:
        target = TARGETS[key]
        at_least = key == "unique_throughput"
        met = value >= target if at_least else value <= target
        print(f"target: {what}: {value:.2f}x (target {'>=' if at_least else '<='} {target}x): {'met' if met else 'MISSED'}")
        ok &= met
    if crit:
        print(f"criteria family with the published rating-criteria for the sixth (no shared prefix), 6 prompts vs 1: "
              f"{results['criteria-6-published']['wall'] / base:.2f}x")
    for sched, each in (("criteria-6", "criteria-6-each"), ("fedq-9", "fedq-9-each")):
        if each not in results:
            continue
        a, b = results[sched]["cells"], results[each]["cells"]
        same = sorted(a) == sorted(b) and all(a[k] == b[k] for k in a)
        sa, sb = _scores(a), _scores(b)
        diff = max((abs((sa[k] or 0) - (sb.get(k) or 0)) for k in sa), default=0.0)
        print(f"rows: {sched} vs {each}: {len(sa)} rows, cell files byte-identical: {same}, max |score diff| {diff:.1e}")
        ok &= same
    for label in results:
        if label.startswith("criteria-6 ") and "=" in label:
            sa, sb = _scores(results[label]["cells"]), _scores(results["criteria-6"]["cells"])
            keys = [k for k in sb if k in sa]
            diff = max((abs((sa[k] or 0) - (sb[k] or 0)) for k in keys), default=0.0)
            ratio = results["criteria-6"]["wall"] / results[label]["wall"]
            print(f"variant {label.split(' ', 1)[1]}: speed {ratio:.2f}x of the defaults, max |score diff| {diff:.1e} "
                  f"over {len(keys)} scores (equal to the digit: {diff == 0})")
    return 0 if ok else 1

if __name__ == "__main__":
    sys.exit(main())
