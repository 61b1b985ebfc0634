"""The OpenAI backend with its sending taken out: what ``--check`` and ``--max-cost`` count a hosted run with.

:class:`OpenAIReplay` has the backend's identity and settings (so the same cache keys) and counts the
requests it would send instead of sending them: each is one answer token (``max_tokens=1``; a judge that
reasons first: its whole budget and the answer line, for each of ``sampling_fallback`` completions when the
model gives no log-probabilities) and an estimated number of prompt tokens, since there is no tokenizer of a hosted model here (tiktoken downloads
its encodings at run time, which cannot happen offline): characters / 4, rounded up (the backend's
:data:`CHARS_PER_TOKEN`), plus :data:`CHAT_FRAMING` for the framing of a chat request's one user message.
Measured once against o200k_base (the encoding of the gpt-4o, gpt-4.1 and gpt-5 families), the estimate is
1.02x (rating prompts) to 1.16x (yes/no prompts) the real count on the example dialogues and 200
DailyDialog-Gupta items: it leans high. Every answer is a uniform distribution. It is the backend's
declared replay (``OpenAIBackend.cost = "hosted"``, :data:`judge.backends.registry.REPLAYS`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ..core.config import GenerateConfig
from .base import Failure, LabelDist, Prompt, Reasoned, Reasoning, uniform
from .openai_api import OpenAIBackend, estimate_tokens
from .reasoning import ANSWER_LINE_TOKENS

#: Tokens a chat request adds around its one user message: 3 for the message, 1 for its role, 3 priming the
#: reply (OpenAI's cookbook, "How to count tokens with tiktoken"). The backend's own CHAT_OVERHEAD (32) is
#: a safe margin for fitting a context window, too much for a bill.
CHAT_FRAMING = 7


class OpenAIReplay(OpenAIBackend):
    """The OpenAI backend with its requests counted instead of sent: the same identity and settings (so the
    same cache keys), prompt tokens by the estimate above (the server is never asked), one answer token per
    request (a rationale: the most it may generate). Its counters: ``counted_requests``,
    ``counted_prompt_tokens`` and ``counted_completion_tokens``."""

    def __init__(self, model: str | None, config: GenerateConfig, **options: object) -> None:
        super().__init__(model, config, **{**options, "tokenize": "estimate"})  # type: ignore[arg-type]
        self.sent = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def _count(self, prompt: Prompt, completion: int, candidates: Sequence[str]) -> LabelDist:
        """Count one request of ``prompt`` that may generate ``completion`` tokens; its uniform answer."""
        tokens = estimate_tokens(prompt.text) + (CHAT_FRAMING if self._use_chat(prompt) else 0)
        self.sent += 1
        self.prompt_tokens += tokens
        self.completion_tokens += completion
        return uniform(candidates, tokens)

    def iter_label_logprobs(self, prompts: Sequence[Prompt], candidates: Sequence[str],
                            top_n: int = 20) -> Iterator[tuple[int, LabelDist | Failure]]:
        for i, p in enumerate(prompts):
            yield i, self._count(p, 1, candidates)

    def reason(self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int,
               how: Reasoning) -> list[Reasoned | Failure]:
        """One request per prompt, generating the whole budget and the answer line: once with log-probabilities,
        ``sampling_fallback`` times (``n``) from a model known to give none (a reasoning model)."""
        samples = self.options.sampling_fallback if (self.options.sampling_fallback and not self.refusals.logprobs) else 1
        completion = samples * (how.tokens + ANSWER_LINE_TOKENS)
        return [Reasoned(self._count(p, completion, candidates), "", completion) for p in prompts]

    def counters(self) -> dict[str, int]:
        return {"counted_requests": self.sent, "counted_prompt_tokens": self.prompt_tokens,
                "counted_completion_tokens": self.completion_tokens}


__all__ = ["CHAT_FRAMING", "OpenAIReplay"]
