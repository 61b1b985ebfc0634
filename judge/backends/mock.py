"""A mock backend: deterministic answers to every backend capability without a model, for testing pipelines.

No language model runs. Each candidate answer's logit comes from a hash of (seed, prompt text, chat
flag, candidate), so the same prompt always gets the same distribution, a changed prompt (other
examples, another template) gets another one, and a run takes milliseconds. The per-token
log-probabilities of a given text (``sequence_logprobs``, for likelihood methods) come from the same
kind of hash, over the text cut into mock tokens (``pieces``), and so does the "hidden state" at the
answer position (``hidden_states``: ``HIDDEN_DIM`` numbers) and a rationale before the answer (``reason``:
words drawn by hash, then the answer read after the cue as a label answer is), so the engine, harness
and service tests of every method type run without a model. It keeps the contract of
the real backends, so a pipeline that passes with it meets the same checks with a model: labels must
be single "tokens" (here: one optional leading space and at most ``token_chars`` other characters,
none of them whitespace, the way "Yes", " yes" and "3" are single tokens of real vocabularies),
prompts that overflow the context window fail as ``too_long``, and failures can be injected
(``fail_rate``, ``fail_every``) to test how a pipeline reports them. Scores carry no judgement of
quality: use it for plumbing, never for numbers.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections.abc import Sequence
from typing import Any

from ..core.config import GenerateConfig
from ..core.errors import InputError
from .base import (
    Backend,
    Capabilities,
    Failure,
    HiddenState,
    LabelDist,
    Prompt,
    Reasoned,
    Reasoning,
    TokenLogprobs,
    too_long,
)

#: The options ``--backend-option`` may set, with their defaults.
OPTIONS: dict[str, Any] = {
    "seed": 0,  # changes every distribution (a different "model")
    "latency_ms": 0.0,  # sleep per prompt, to test progress, timeouts and concurrency
    "fail_rate": 0.0,  # share of prompts that fail, chosen by hash of the prompt (the same ones every run)
    "fail_every": 0,  # fail every Nth prompt the backend is handed (0: never)
    "chars_per_token": 4.0,  # n_prompt_tokens = ceil(characters / chars_per_token)
    "token_chars": 8,  # the longest label (besides one leading space) that counts as one token
    "chat_template": True,  # whether the "model" has a chat template (chat prompts fail without one)
    "max_context": 8192,  # tokens a prompt may hold when --n-ctx is not given
}
#: The options that change a distribution (the rest only change timing or failures, never an answer).
_ANSWER_OPTIONS = ("seed", "chars_per_token", "token_chars", "chat_template")
#: Tokens the chat wrapper adds around a chat prompt.
_CHAT_OVERHEAD = 8
#: The width of the mock's hidden states.
HIDDEN_DIM = 16
#: The words of the mock's rationales.
_WORDS = ("the", "reply", "answers", "follows", "from", "what", "user", "said", "it", "is", "fluent", "and",
          "relevant", "but", "generic", "so", "one", "would", "say", "a", "good", "weak", "turn", "overall")


def _unit(*parts: object) -> float:
    """A number in [0, 1) from a hash of ``parts``: stable across runs, processes and platforms."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def pieces(text: str, token_chars: int) -> list[str]:
    """The mock's tokens of a continuation: one optional leading space and up to ``token_chars`` other
    non-whitespace characters, or one whitespace character. A label that ``single_token`` accepts is one
    piece, the pieces join back to the text, and a text cut at a line break (where a prompt's declared
    shared part ends) has the pieces of its two halves."""
    return re.findall(rf" ?\S{{1,{token_chars}}}|\s", text)


class MockBackend(Backend):
    """Hash-based label distributions; see the module docstring and docs/backends.md."""

    name = "mock"
    #: ``--check``: no model: its answers cost nothing worth timing.
    cost = "free"

    def __init__(self, model: str | None, config: GenerateConfig, **options: Any) -> None:
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise InputError(f"the mock backend has no option '{unknown[0]}' (options: {', '.join(OPTIONS)})",
                             field="backend-option")
        opts = {**OPTIONS, **options}
        self.seed = self._number(opts, "seed", int, 0)
        self.latency_ms = self._number(opts, "latency_ms", float, 0)
        self.fail_rate = self._number(opts, "fail_rate", float, 0)
        if self.fail_rate > 1:
            raise InputError(f"fail_rate must be between 0 and 1, got {self.fail_rate}", field="backend-option")
        self.fail_every = self._number(opts, "fail_every", int, 0)
        self.chars_per_token = self._number(opts, "chars_per_token", float, 0, strict=True)
        self.token_chars = self._number(opts, "token_chars", int, 1)
        if not isinstance(opts["chat_template"], bool):
            raise InputError(f"chat_template must be true or false, got {opts['chat_template']!r}",
                             field="backend-option")
        self.chat_template = opts["chat_template"]
        self.model_id = model or "mock"
        self.config = config
        window = config.max_context or self._number(opts, "max_context", int, 1)
        self.capabilities = Capabilities(full_vocab=True, top_n=None, chat_template=self.chat_template,
                                         max_context=window, batching=False, prefix_reuse=False,
                                         sequence_logprobs=True, hidden_states=True, reason=True)
        self.prompts_seen = 0
        self.failures = 0

    @staticmethod
    def _number(opts: dict[str, Any], key: str, kind: type, minimum: float, strict: bool = False) -> Any:
        value = opts[key]
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if kind is int:
            ok = ok and float(value).is_integer()
        if not ok or value < minimum or (strict and value == minimum):
            bound = f"> {minimum}" if strict else f">= {minimum}"
            raise InputError(f"{key} must be a {'whole ' if kind is int else ''}number {bound}, got {value!r}",
                             field="backend-option")
        return kind(value)

    def count_tokens(self, prompt: Prompt) -> int:
        n = max(1, math.ceil(len(prompt.text) / self.chars_per_token))
        return n + (_CHAT_OVERHEAD if prompt.chat else 0)

    def single_token(self, text: str) -> bool | None:
        body = text[1:] if text.startswith(" ") else text
        return 0 < len(body) <= self.token_chars and not any(ch.isspace() for ch in body)

    def _logit(self, prompt: Prompt, candidate: str) -> float:
        # Spread over [-4, 4]: distributions range from near-certain to flat, like a small model's.
        return 8.0 * _unit(self.seed, int(prompt.chat), prompt.text, candidate) - 4.0

    def label_logprobs(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int = 20
    ) -> list[LabelDist | Failure]:
        return [self._one(p, candidates, top_n) for p in prompts]

    def _one(self, prompt: Prompt, candidates: Sequence[str], top_n: int) -> LabelDist | Failure:
        n_tokens = self.count_tokens(prompt)
        failed = self._refusal(prompt, n_tokens, prompt.text)
        if failed is not None:
            return failed
        return self._dist(prompt, candidates, top_n, n_tokens)

    def _dist(self, prompt: Prompt, candidates: Sequence[str], top_n: int, n_tokens: int) -> LabelDist:
        """The answer to ``prompt`` (``n_tokens`` long), nothing refused."""
        readable = sorted({c for c in candidates if self.single_token(c)})
        logits = {c: self._logit(prompt, c) for c in readable}
        # The rest of a vocabulary: one pseudo-token holding the mass no candidate takes.
        rest = self._logit(prompt, "\x00rest")
        top_logit = max([rest, *logits.values()])
        logz = top_logit + math.log(sum(math.exp(v - top_logit) for v in [rest, *logits.values()]))
        logprobs = {c: v - logz for c, v in logits.items()}
        top = sorted(logprobs.items(), key=lambda kv: (-kv[1], kv[0]))[:top_n]
        return LabelDist(logprobs, top, n_prompt_tokens=n_tokens, n_evaluated_tokens=n_tokens)

    def _refusal(self, prompt: Prompt, n_tokens: int, *fail_key: str) -> Failure | None:
        """What a real backend would refuse (a chat prompt without a template, a prompt over the window)
        and the injected failures, in that order; None to answer. Every request counts as one prompt
        handed to the backend (``fail_every``) and sleeps ``latency_ms``."""
        self.prompts_seen += 1
        if self.latency_ms:
            time.sleep(self.latency_ms / 1000)
        if prompt.chat and not self.chat_template:
            return Failure(f"model {self.model_id} has no chat template; use chat=False")
        if n_tokens >= self.capabilities.max_context:
            return too_long(n_tokens, self.capabilities.max_context)
        if (self.fail_every and self.prompts_seen % self.fail_every == 0) or (
                self.fail_rate and _unit("fail", self.seed, *fail_key) < self.fail_rate):
            self.failures += 1
            return Failure("mock backend: injected failure (fail_rate / fail_every)")
        return None

    def hidden_states(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int = 20
    ) -> list[HiddenState | Failure]:
        """Each prompt's label answer (exactly ``label_logprobs``') with a vector of ``HIDDEN_DIM`` numbers in
        [-1, 1) drawn from a hash of (seed, chat flag, prompt text): the same prompt always gets the same
        vector, another prompt or seed another one."""
        out: list[HiddenState | Failure] = []
        for prompt in prompts:
            dist = self._one(prompt, candidates, top_n)
            if isinstance(dist, Failure):
                out.append(dist)
                continue
            vector = [2.0 * _unit("hidden", self.seed, int(prompt.chat), prompt.text, i) - 1.0 for i in range(HIDDEN_DIM)]
            out.append(HiddenState(vector, dist))
        return out

    def reason(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int, how: Reasoning
    ) -> list[Reasoned | Failure]:
        """Each prompt's rationale, words drawn by hash of (seed, chat flag, prompt text; ``how.seed`` when the
        temperature is above 0), between 6 and ``how.tokens`` mock tokens long, then the label answer of the
        prompt with the rationale and the cue appended, as ``label_logprobs`` reads a prompt. The same request
        always gets the same answer; the prompt's window must hold the rationale's budget too."""
        out: list[Reasoned | Failure] = []
        for prompt in prompts:
            n_prompt = self.count_tokens(prompt)
            failed = self._refusal(prompt, n_prompt + how.tokens + len(pieces(how.cue, self.token_chars)), prompt.text)
            if failed is not None:
                out.append(failed)
                continue
            drawn = ("sampled", how.temperature, how.seed) if how.temperature else ("greedy",)
            length = min(how.tokens, 6 + int(_unit("length", self.seed, prompt.text, *drawn) * 40))
            words = [_WORDS[int(_unit("word", self.seed, int(prompt.chat), prompt.text, *drawn, i) * len(_WORDS))]
                     for i in range(length)]
            rationale = " ".join(words).capitalize() + "."
            read = Prompt(f"{prompt.text}{rationale}\n{how.cue}", chat=prompt.chat)
            out.append(Reasoned(self._dist(read, candidates, top_n, n_prompt), rationale, n_generated=length))
        return out

    def sequence_logprobs(self, requests: Sequence[tuple[Prompt, str]]) -> list[TokenLogprobs | Failure]:
        """Each continuation's mock tokens (``pieces``), each with a log-probability in (-8, 0] drawn from a
        hash of (seed, chat flag, prompt text, the continuation's earlier tokens, the token): the same
        request always gets the same answer, whatever ran before and whatever the prompt declares shared
        (the mock keeps no KV cache, so a split changes nothing, as ``split_shared`` = False promises).
        The prompt counts ``count_tokens`` tokens, as for a label answer; every token is evaluated."""
        return [self._sequence(prompt, text) for prompt, text in requests]

    def _sequence(self, prompt: Prompt, text: str) -> TokenLogprobs | Failure:
        n_prompt, toks = self.count_tokens(prompt), pieces(text, self.token_chars)
        failed = self._refusal(prompt, n_prompt + len(toks), prompt.text, text)
        if failed is not None:
            return failed
        if not toks:  # nothing to score, as on llama.cpp: no tokens, log-probability 0
            return TokenLogprobs([], n_prompt_tokens=n_prompt)
        lps = [-8.0 * _unit("token", self.seed, int(prompt.chat), prompt.text, "".join(toks[:i]), tok)
               for i, tok in enumerate(toks)]
        return TokenLogprobs(lps, n_prompt_tokens=n_prompt, n_evaluated_tokens=n_prompt + len(toks) - 1)

    def settings(self) -> dict[str, object]:
        # Latency and failure injection never change an answer (failures are never cached), so they
        # stay out of cache keys: a run with failures injected reuses the answers of one without.
        return {"mock": {k: getattr(self, k) for k in _ANSWER_OPTIONS}, "n_ctx": self.capabilities.max_context}

    def close(self) -> None:
        pass
