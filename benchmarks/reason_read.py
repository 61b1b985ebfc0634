"""``reason_read`` benchmark: reading the answer after a rationale against generating the rationale alone.

A judge that reasons first (``reason = N``) has the model write a rationale after the prompt, then reads
the label distribution after the answer cue, from the KV state the generation left (docs/backends.md,
"Judges that reason first"). The read should cost next to nothing beside the generation: one decode of
the cue (and the rationale's last token), no second evaluation of the prompt. In one process, on one
loaded model, from an empty KV cache for every prompt (no cache), this measures on the same prompts:

* ``rationale``: the prompt evaluated and the rationale generated (``LlamaCppBackend.rationale``);
* ``rationale+read``: ``LlamaCppBackend.reason``, the whole request: the same, then the cue and the read.

Both sides generate the same tokens (greedy, the same steps). The passes run interleaved (ABBA, with
``--repeat``), so drift in the machine's load hits both sides alike. It prints each side's best wall time,
items/s and generated tokens/s, the ratio (the acceptance bound is 1.1x), and peak RSS.

    python benchmarks/reason_read.py --data-dir ../shared/data                        # 12 DZ items, SmolLM2
    python benchmarks/reason_read.py --data-dir ../shared/data --tokens 32 64 128 --repeat 2
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

from judge.backends import Prompt
from judge.backends.base import Reasoned, Reasoning
from judge.backends.llamacpp import LlamaCppBackend
from judge.core.config import GenerateConfig
from judge.prompts.answers import candidates
from judge.prompts.templates import get_prompt

#: The acceptance bound of the read's cost (issue "Judges that think before they answer").
BOUND = 1.1


def rationale_only(backend: LlamaCppBackend, prompts: list[Prompt], how: Reasoning) -> int:
    """The generation alone, each prompt from an empty KV cache; the tokens generated."""
    generated = 0
    for prompt in prompts:
        backend.reset()
        _, _, thought = backend.rationale(prompt, backend.tokens(prompt), how)
        generated += len(thought.chosen)
    return generated


def with_read(backend: LlamaCppBackend, prompts: list[Prompt], how: Reasoning, labels: list[str]) -> int:
    """The whole request, each prompt from an empty KV cache; the tokens generated."""
    generated = 0
    for prompt in prompts:
        backend.reset()
        (answer,) = backend.reason([prompt], labels, 20, how)
        assert isinstance(answer, Reasoned), answer
        generated += answer.n_generated
    return generated


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_subset_options(ap, "DZ")
    ap.add_argument("--prompt", default="yesno-criteria")
    ap.add_argument("--tokens", type=int, nargs="+", default=[64], help="rationale budgets to measure")
    args = ap.parse_args()

    info, items = subset(args)
    template = get_prompt(args.prompt)
    labels = candidates(template.answer)
    backend = LlamaCppBackend(args.model, GenerateConfig(threads=args.threads))
    chat = backend.capabilities.chat_template
    print(f"reason_read: {info.name}, {len(items)} items, prompt {args.prompt}; model {backend.model_id}; "
          f"{args.threads} threads; {platform.processor() or platform.machine()}, {os.cpu_count()} cpus")
    worst = 0.0
    for tokens in args.tokens:
        rendered = [template.render_reasoned(it, tokens=tokens) for it in items]
        prompts = [Prompt(text, chat=chat) for text, _ in rendered]
        how = Reasoning(tokens, rendered[0][1])
        with_read(backend, prompts[:1], how, labels)  # warm-up, untimed
        walls: dict[str, list[float]] = {"rationale": [], "rationale+read": []}
        generated: dict[str, int] = {}
        for _ in range(args.repeat):
            for name in ("rationale", "rationale+read", "rationale+read", "rationale"):
                t0 = time.perf_counter()
                generated[name] = (rationale_only(backend, prompts, how) if name == "rationale"
                                   else with_read(backend, prompts, how, labels))
                walls[name].append(time.perf_counter() - t0)
        assert generated["rationale"] == generated["rationale+read"], generated  # the same tokens on both sides
        best = {k: min(v) for k, v in walls.items()}
        ratio = best["rationale+read"] / best["rationale"]
        worst = max(worst, ratio)
        print(f"  reason = {tokens}: {generated['rationale']} tokens generated "
              f"({generated['rationale'] / len(prompts):.1f} per item)")
        for name, wall in best.items():
            print(f"    {name:15s} {wall:8.1f} s  {len(prompts) / wall:6.2f} items/s  "
                  f"{generated[name] / wall:6.1f} generated tokens/s  (runs: {', '.join(f'{w:.1f}' for w in walls[name])})")
        print(f"    the read's cost: rationale+read / rationale = {ratio:.3f}x (bound {BOUND}x)")
    backend.close()
    print(f"  peak RSS {peak_rss_mb():.0f} MB (one process, both sides); worst ratio {worst:.3f}x: "
          f"{'within' if worst <= BOUND else 'ABOVE'} the {BOUND}x bound")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
