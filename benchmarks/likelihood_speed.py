"""``likelihood_speed`` benchmark: a likelihood method's reply in batches against one decode per token.

A likelihood method reads the log-probability of every token of a reply, with and without the
conversation (docs/likelihood.md). The engine evaluates the reply's tokens in batches, every position
an output; before, it appended them one decode at a time, each at the speed of generation. In one
process and on one loaded model (no cache) this measures, on the same requests:

* ``batched``: ``LlamaCppBackend.sequence_logprobs`` (the engine);
* ``token-by-token``: ``LlamaCppBackend.token_by_token``, the former evaluation, kept as the reference.

The passes run interleaved (batched, token-by-token, token-by-token, batched, ... with ``--repeat``), so
drift in the machine's load hits both sides alike. It prints each side's wall time, items/s and reply
tokens/s, the ratio of the two, peak RSS, and how far the two sides' answers are apart: per token, and in
the PMI of each item (the ``pmi`` signal, mean over its system turns), the number a method reports.

    python benchmarks/likelihood_speed.py --data-dir ../shared/data                      # 12 FED-Dial items
    python benchmarks/likelihood_speed.py --data-dir ../shared/data --dataset DZ --limit 40 --model qwen2.5-coder-1.5b
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from llama_subset import add_subset_options, subset
from prefix_share import peak_rss_mb

from judge.backends import Prompt, TokenLogprobs
from judge.backends.llamacpp import LlamaCppBackend
from judge.core.config import GenerateConfig
from judge.data.items import Item
from judge.scorers.likelihood import conditional_prompt, statistic, unconditional_prompt, utterances
from judge.stats.correlation import correlate

Request = tuple[Prompt, str]


def requests_of(item: Item) -> list[Request]:
    """The PMI's requests for one item, as ``LikelihoodScorer`` sends them: with and without the context."""
    out: list[Request] = []
    for context, reply in utterances(item):
        out += [(conditional_prompt(context), " " + reply), (unconditional_prompt(), " " + reply)]
    return out


def batched(backend: LlamaCppBackend, per_item: list[list[Request]]) -> list[list[list[float]]]:
    out = []
    for requests in per_item:
        results = backend.sequence_logprobs(requests)
        assert all(isinstance(r, TokenLogprobs) for r in results), results
        out.append([r.logprobs for r in results if isinstance(r, TokenLogprobs)])
    return out


def one_by_one(backend: LlamaCppBackend, per_item: list[list[Request]]) -> list[list[list[float]]]:
    return [[backend.token_by_token(prompt, text) for prompt, text in requests] for requests in per_item]


def pmi(lps: list[list[float]]) -> float | None:
    """The ``pmi`` signal of one item from its (context, no context) pairs of per-token answers."""
    values = [statistic("pmi", c, u) for c, u in zip(lps[::2], lps[1::2], strict=True) if c]
    return sum(values) / len(values) if values else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_subset_options(ap, "FD")
    args = ap.parse_args()

    info, items = subset(args)
    per_item = [requests_of(it) for it in items]
    backend = LlamaCppBackend(args.model, GenerateConfig(threads=args.threads))
    n_reply = sum(len(backend._tok(text)) for requests in per_item for _, text in requests)
    backend.sequence_logprobs(per_item[0][:1])  # warm-up, untimed
    walls: dict[str, list[float]] = {"batched": [], "token-by-token": []}
    answers = {}
    for _ in range(args.repeat):
        for name in ("batched", "token-by-token", "token-by-token", "batched"):
            backend.reset()
            t0 = time.perf_counter()
            answers[name] = (batched if name == "batched" else one_by_one)(backend, per_item)
            walls[name].append(time.perf_counter() - t0)
    backend.close()

    new, old = answers["batched"], answers["token-by-token"]
    token_diffs = [abs(a - b) for ni, oi in zip(new, old, strict=True) for nr, orr in zip(ni, oi, strict=True)
                   for a, b in zip(nr, orr, strict=True)]
    new_pmi, old_pmi = [pmi(n) for n in new], [pmi(o) for o in old]
    pmi_diffs = [abs(a - b) for a, b in zip(new_pmi, old_pmi, strict=True) if a is not None and b is not None]
    best = {k: min(v) for k, v in walls.items()}
    print(f"likelihood_speed: {info.name}, {len(items)} items, {sum(map(len, per_item))} requests, "
          f"{n_reply} reply tokens; model {backend.model_id}; {args.threads} threads; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} cpus")
    for name, wall in best.items():
        print(f"  {name:15s} {wall:8.1f} s  {len(items) / wall:6.2f} items/s  {n_reply / wall:7.1f} reply tokens/s"
              f"  (runs: {', '.join(f'{w:.1f}' for w in walls[name])})")
    print(f"  speed-up (token-by-token / batched, best of each): {best['token-by-token'] / best['batched']:.2f}x")
    print(f"  peak RSS {peak_rss_mb():.0f} MB (one process, both sides)")
    print(f"  per-token |difference|: max {max(token_diffs):.4f}, mean {sum(token_diffs) / len(token_diffs):.4f}")
    print(f"  per-item PMI |difference|: max {max(pmi_diffs):.4f}, mean {sum(pmi_diffs) / len(pmi_diffs):.4f}")
    # What a reported figure reads: how the items rank, against each other and against people.
    human = [it.human(info.overall) for it in items]
    agree = correlate(new_pmi, old_pmi)
    with_new, with_old = correlate(new_pmi, human), correlate(old_pmi, human)
    print(f"  per-item PMI ranks: Spearman between the sides {agree.value:.4f}; with human {info.overall}: "
          f"batched {with_new.value:.3f}, token-by-token {with_old.value:.3f} (n={with_new.n})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
