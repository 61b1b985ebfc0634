"""Log-probabilities of every token of a given text after a prompt, from llama.cpp in one model load.

The label methods read one position (the next token after the prompt); likelihood methods need a
position per token of the reply. The prompt is evaluated as a label prompt is (``_eval``: its batches
fixed by the prompt alone, so its KV prefix reuse follows the same rule), then the reply's tokens but
the last are appended in batches of their own, every position an output (``_extend_all``). The answer
depends on the prompt and the reply only, never on what ran before.

Until this engine appended them one token per decode: a reply of n tokens cost n - 1 decodes at the
speed of generation, most of a likelihood method's time. A one-token batch goes through other CPU
kernels than a longer one, so the two ways give slightly different log-probabilities, and the cache
keys say which one an answer came from (``REPLY_BATCHES``).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence

from .base import Failure, Prompt, TokenLogprobs, too_long
from .llamacpp import LlamaCppBackend, log_softmax

#: How the reply is evaluated, for cache keys (``LlamaCppBackend.sequence_settings``).
REPLY_BATCHES = "batches of n_batch, every position an output"


def sequence_logprobs(backend: LlamaCppBackend, requests: Sequence[tuple[Prompt, str]]) -> list[TokenLogprobs | Failure]:
    """One result per (prompt, continuation), in order; a too-long or failed request fails alone."""
    out: list[TokenLogprobs | Failure] = []
    window = backend.capabilities.max_context
    for prompt, text in requests:
        prefix = backend.tokens(prompt)
        cont = backend._tok(text)
        if not cont:  # nothing to score: an empty continuation has log-probability 0 and no tokens
            out.append(TokenLogprobs([], n_prompt_tokens=len(prefix)))
            continue
        n = len(prefix) + len(cont)
        if n >= window:
            out.append(too_long(n, window))
            continue
        t0 = time.perf_counter()
        try:
            lps, n_eval = _evaluate(backend, prefix, cont, backend.prompt_starts(prompt, prefix))
        except (RuntimeError, ValueError) as exc:  # llama_decode failures: this request only
            out.append(backend._decode_failure(n, exc))
            continue
        backend.eval_seconds += time.perf_counter() - t0
        backend.tokens_evaluated += n_eval
        out.append(TokenLogprobs(lps, n_prompt_tokens=len(prefix), n_evaluated_tokens=n_eval))
    return out


def _evaluate(backend: LlamaCppBackend, prefix: list[int], cont: list[int], starts: list[int]
              ) -> tuple[list[float], int]:
    """The prompt's last position gives the first reply token's log-probability; one pass over the reply
    but its last token gives the others. The prompt is evaluated in the batches a label prompt would be
    (``starts``: a declared shared part as batches of its own), so the continuations asked after one
    prompt (the follow-ups of a reply) reuse it."""
    logits, evaluated = backend._eval(prefix, starts)
    lps = [float(log_softmax(logits)[cont[0]])]
    if len(cont) > 1:
        rows = backend._extend_all(cont[:-1])
        evaluated += len(cont) - 1
        lps.extend(float(log_softmax(row)[target]) for row, target in zip(rows, cont[1:], strict=True))
    return lps, evaluated


def token_by_token(backend: LlamaCppBackend, prompt: Prompt, text: str) -> list[float]:
    """The continuation's log-probabilities as the engine computed them before it evaluated a reply in
    batches: each token but the last appended as a decode of its own. Kept as the reference the batched
    evaluation is checked and timed against (``tests/test_likelihood.py``, ``benchmarks/likelihood_speed.py``);
    it leaves the KV cache empty, so it never feeds prefix reuse."""
    cont = backend._tok(text)
    backend.reset()
    logits, _ = backend._eval(backend.tokens(prompt))
    out = [float(log_softmax(logits)[cont[0]])] if cont else []
    for prev, target in itertools.pairwise(cont):
        backend.llm.eval([prev])
        out.append(float(log_softmax(backend._last_logits())[target]))
    backend.reset()
    return out
