"""Log-probabilities of every token of a given text after a prompt, from llama.cpp in one model load.

The label methods read one position (the next token after the prompt); likelihood methods need a
position per token of the reply. The prompt is evaluated as a label prompt is (``_eval``: its batches
fixed by the prompt alone, so its KV prefix reuse follows the same rule), then each reply token but the
last is appended as a one-token batch (``_extend``), so a reply of n tokens costs n - 1 decodes after
its prompt and its answer depends on the prompt and the reply only, never on what ran before.
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import Failure, Prompt, TokenLogprobs, too_long
from .llamacpp import LlamaCppBackend, log_softmax


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
        try:
            lps, n_eval = _evaluate(backend, prefix, cont)
        except (RuntimeError, ValueError) as exc:  # llama_decode failures: this request only
            out.append(backend._decode_failure(n, exc))
            continue
        backend.tokens_evaluated += n_eval
        out.append(TokenLogprobs(lps, n_prompt_tokens=len(prefix), n_evaluated_tokens=n_eval))
    return out


def _evaluate(backend: LlamaCppBackend, prefix: list[int], cont: list[int]) -> tuple[list[float], int]:
    """The prompt through ``LlamaCppBackend._eval`` (as label prompts), then one one-token decode per
    reply token but the last, each reading only its last position. One decode flagging every reply
    position as an output would be cheaper; it would put the reply in other batches than this does, so
    it is left for when it can be checked against this one."""
    logits, evaluated = backend._eval(prefix)
    lps: list[float] = []
    for j, target in enumerate(cont):
        if j:
            logits = backend._extend(cont[j - 1])
            evaluated += 1
        lps.append(float(log_softmax(logits)[target]))
    return lps, evaluated
