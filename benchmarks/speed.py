"""``speed`` benchmark: judge's end-to-end throughput against the naive loop and the raw hardware.

FED-Turn, all 9 turn qualities (prompts ``fed-turn-<quality>``), 3-shot manual examples (the
shipped FED set), the default model (SmolLM2-135M via llama.cpp), no cache. In one process and on
one loaded model it measures:

(a) judge: ``LLMJudge.score`` over the 9 qualities (window reordering + KV prefix reuse);
(b) naive: what a user would write: for every prompt, reset the model, evaluate the whole prompt,
    read the logits (same model object, same prompts, same scoring rule). The prompt is evaluated in the
    batches the backend evaluates it in from an empty cache (``prompt_starts``: a batch starts where the
    text no item changes ends), so its answers are bit-identical to judge's, which reuses those batches;
(c) raw: llama.cpp prompt throughput, tokens/s of one long evaluation (``--raw-tokens``, 2048).

Passes run interleaved (judge, naive, naive, judge, ... with ``--repeat``) and raw before and
after, so drift in the machine's load hits both sides alike. Every ratio is within this run.

    python benchmarks/speed.py --limit 20
    python benchmarks/speed.py --limit 20 --repeat 2 --profile   # ABBA + cProfile of one judge pass
    python benchmarks/speed.py --tokens-only 2 3 20 100    # tokens evaluated per item, no model run
"""

from __future__ import annotations

import argparse
import cProfile
import io
import itertools
import os
import platform
import pstats
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.backends.llamacpp import LlamaCppBackend, reused_prefix
from judge.core.config import GenerateConfig
from judge.data.items import Item
from judge.datasets import load_benchmark
from judge.datasets.benchmarks import dataset_info
from judge.engine import MethodSpec, prepare
from judge.engine.session import RunOptions, Session
from judge.prompts.answers import candidates
from judge.scorers.llm import LLMJudge
from judge.scorers.rules import ScoringError, score_distribution


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def make_judges(session: Session, items: list[Item], pool: list[Item], k: int, threads: int) -> list[LLMJudge]:
    """One judge per FED turn quality, built by the engine from the spec of
    ``judge score --prompt fed --selector manual --k 3 --no-cache``."""
    spec = MethodSpec(prompt="fed", selector="manual", k=k, generate=GenerateConfig(threads=threads, cache=False))
    judges = []
    for q in dataset_info("fed-turn").qualities:
        judge = session.build(prepare(spec, items, q, pool=pool))
        assert isinstance(judge, LLMJudge)
        judges.append(judge)
    return judges


def llama_backend(judges: list[LLMJudge]) -> LlamaCppBackend:
    """The judges' llama.cpp backend (built without the cache: this script reads its model directly)."""
    backend = judges[0].backend
    assert isinstance(backend, LlamaCppBackend), type(backend)
    return backend


def judge_pass(judges: list[LLMJudge], items: list[Item]) -> dict:
    t0 = time.perf_counter()
    values, n_eval, n_prompt = [], 0, 0
    for j in judges:
        for s in j.score(items):
            values.append(s.value)
            n_eval += s.n_evaluated_tokens
            n_prompt += s.n_prompt_tokens
    return {"wall": time.perf_counter() - t0, "values": values, "n_eval": n_eval, "n_prompt": n_prompt}


def naive_pass(judges: list[LLMJudge], items: list[Item]) -> dict:
    """The loop a user writes with llama-cpp-python: build the prompt, reset, eval it all, read logits."""
    backend = llama_backend(judges)
    llm = backend.llm
    import llama_cpp

    t0 = time.perf_counter()
    values, n_eval = [], 0
    for j in judges:
        cands = candidates(j.prompt.answer)
        ids = {c: toks[0] for c in cands if len(toks := llm.tokenize(c.encode(), add_bos=False)) == 1}
        for item in items:
            prompt, _ = j.build_prompt(item)
            toks = backend.tokens(prompt)
            llm.reset()
            for begin, end in itertools.pairwise([*backend.prompt_starts(prompt, toks), len(toks)]):
                llm.eval(toks[begin:end])
            n_eval += len(toks)
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1),
                                           shape=(llm.n_vocab(),)).astype(np.float64)
            m = logits.max()
            lp = logits - (m + np.log(np.exp(logits - m).sum()))
            try:
                v, _ = score_distribution({c: float(lp[i]) for c, i in ids.items()}, j.prompt.answer, j.top_k)
            except ScoringError:
                v = None
            values.append(v)
    llm.reset()  # the judge's next pass must not start from the naive loop's cache
    return {"wall": time.perf_counter() - t0, "values": values, "n_eval": n_eval}


def raw_pass(backend: LlamaCppBackend, items: list[Item], judges: list[LLMJudge], n: int) -> dict:
    """Tokens/s of one evaluation of ``n`` tokens of real prompt text (from an empty KV cache)."""
    toks: list[int] = []
    for item in items:
        for j in judges:
            toks += backend.tokens(j.build_prompt(item)[0])
            if len(toks) >= n:
                break
        if len(toks) >= n:
            break
    toks = toks[:n]
    llm = backend.llm
    llm.reset()
    t0 = time.perf_counter()
    llm.eval(toks)
    wall = time.perf_counter() - t0
    llm.reset()
    return {"wall": wall, "tokens": len(toks), "tps": len(toks) / wall}


def token_counts(judges: list[LLMJudge], pool: list[Item], sizes: list[int]) -> None:
    """Prompt and evaluated tokens per item for several ``--limit`` values, without running the model:
    the judge's window order (prompts sorted by text per quality) and the backend's reuse rule
    (``prompt_starts``, ``reused_prefix``)."""
    backend = llama_backend(judges)
    print(f"{'items':>5} {'prompt tok/item':>15} {'evaluated tok/item':>18} {'token ratio (naive / judge)':>27}")
    for n in sizes:
        items, n_eval, n_prompt = pool[:n], 0, 0
        prev: list[int] = []
        marks: list[int] = []
        for j in judges:
            for p in sorted((j.build_prompt(it)[0] for it in items), key=lambda p: (p.chat, p.text)):
                toks = backend.tokens(p)
                starts = backend.prompt_starts(p, toks)
                n_eval += len(toks) - reused_prefix(prev, marks, toks, starts)
                n_prompt += len(toks)
                prev, marks = toks, [*starts, len(toks)]
        print(f"{n:>5} {n_prompt / n:>15.0f} {n_eval / n:>18.0f} {n_prompt / n_eval:>26.2f}x")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=20, help="FED-Turn items (first N; default 20)")
    ap.add_argument("--k", type=int, default=3, help="manual examples per prompt (default 3)")
    ap.add_argument("--repeat", type=int, default=1, help="judge/naive pairs, ABBA order (default 1)")
    ap.add_argument("--raw-tokens", type=int, default=2048)
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: all cores)")
    ap.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--tokens-only", type=int, nargs="+", metavar="N", default=None,
                    help="only count prompt/evaluated tokens per item for these --limit values (no model run)")
    ap.add_argument("--profile", action="store_true", help="cProfile one extra judge pass, print the top entries")
    args = ap.parse_args()

    pool = load_benchmark("fed-turn", args.data_dir)
    items = pool[: args.limit]
    session = Session(RunOptions(progress=False)).open()  # held until the process exits, as the model is
    judges = make_judges(session, items, pool, args.k, args.threads)
    backend = llama_backend(judges)
    if args.tokens_only:
        token_counts(judges, pool, args.tokens_only)
        return 0
    load = os.getloadavg()

    raws = [raw_pass(backend, items, judges, args.raw_tokens)]
    print(f"  raw: {raws[0]['tps']:.0f} tokens/s", file=sys.stderr, flush=True)
    runs: list[tuple[str, dict]] = []
    for rep in range(args.repeat):
        order = ("judge", "naive") if rep % 2 == 0 else ("naive", "judge")
        for kind in order:
            runs.append((kind, judge_pass(judges, items) if kind == "judge" else naive_pass(judges, items)))
            print(f"  {kind} pass: {runs[-1][1]['wall']:.1f} s", file=sys.stderr, flush=True)
    raws.append(raw_pass(backend, items, judges, args.raw_tokens))
    load_end = os.getloadavg()

    js = [r for k, r in runs if k == "judge"]
    ns = [r for k, r in runs if k == "naive"]
    raw_tps = statistics.mean(r["tps"] for r in raws)
    n_scores = len(items) * len(judges)
    diffs = [abs(a - b) for r in js for a, b in zip(r["values"], ns[0]["values"]) if a is not None and b is not None]
    same_none = all((a is None) == (b is None) for r in js for a, b in zip(r["values"], ns[0]["values"]))
    max_diff = max(diffs) if diffs else float("nan")

    threads = args.threads or os.cpu_count()
    print(f"speed: FED-Turn, {len(items)} items x {len(judges)} turn qualities = {n_scores} scores, "
          f"{args.k}-shot manual examples, {backend.model_id} (llama.cpp, {threads} threads), no cache")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"load average at start {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}, at end {load_end[0]:.2f}")
    print(f"raw llama.cpp prompt throughput: {raw_tps:.0f} tokens/s (one {raws[0]['tokens']}-token evaluation; "
          f"{' and '.join(format(r['tps'], '.0f') for r in raws)} before/after)")
    hdr = (f"{'pass':<6} {'wall s':>8} {'items/s':>8} {'scores/s':>9} {'tok eval/item':>13} {'tok prompt/item':>15} "
           f"{'ideal s':>8} {'overhead':>9} {'speed-up':>9}")
    print(hdr)
    naive_wall = statistics.mean(r["wall"] for r in ns)
    for kind, r in runs:
        ideal = r["n_eval"] / raw_tps
        n_prompt = r.get("n_prompt", r["n_eval"])
        print(f"{kind:<6} {r['wall']:>8.2f} {len(items) / r['wall']:>8.3f} {n_scores / r['wall']:>9.2f} "
              f"{r['n_eval'] / len(items):>13.0f} {n_prompt / len(items):>15.0f} {ideal:>8.2f} "
              f"{100 * (r['wall'] / ideal - 1):>8.0f}% {naive_wall / r['wall']:>8.2f}x")
    jw = statistics.mean(r["wall"] for r in js)
    j_ideal = statistics.mean(r["n_eval"] for r in js) / raw_tps
    print(f"summary: speed-up over naive {naive_wall / jw:.2f}x (target >= 3x); judge wall / (tokens evaluated / raw "
          f"tokens/s) = {jw / j_ideal:.2f} (target <= 1.25); scores equal to naive: max |diff| {max_diff:.2e} over "
          f"{len(diffs)} scores, failures identical: {same_none} (target <= 1e-4); peak RSS {peak_rss_mb():.0f} MB")

    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        judge_pass(judges, items)
        prof.disable()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(12)
        print("\ncProfile of one judge pass (by own time):")
        print("\n".join(buf.getvalue().splitlines()[:40]))
    backend.close()
    ok = naive_wall / jw >= 3 and jw / j_ideal <= 1.25 and (max_diff <= 1e-4) and same_none
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
