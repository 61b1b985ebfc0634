"""The options of a hosted (OpenAI-compatible) API backend, typed: :class:`HostedOptions`.

One frozen dataclass holds them; each field's metadata gives its command-line flag (``--rpm``; some are config
keys only), its key under a method's ``options`` (``rpm``) and its help, so that the flags of ``judge score``,
``bench``, ``run`` and ``compare``, the keys a config may hold and the table in docs/backends-api.md come from
one place (:mod:`judge.core.settings`). The backend, the cost cap and the provider batch all read this record,
never the untyped options. Options marked ``sending`` change how requests are sent, never an answer: a results
folder resumed with other values of them is the same run (``Backend.sending_options``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

from ..core.errors import InputError
from ..core.settings import Settings, setting


@dataclass(frozen=True)
class HostedOptions:
    """How a hosted API is asked (docs/backends-api.md). The key is never one of them: it is read from the
    environment variable ``api_key_env`` names."""

    base_url: str | None = setting(
        "OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1 (default: $OPENAI_BASE_URL, "
        "else api.openai.com)", metavar="URL")
    api_key_env: str = setting(
        "environment variable holding the API key (default OPENAI_API_KEY); keys are "
        "never taken as flags or from files", "OPENAI_API_KEY", metavar="NAME")
    endpoint: Literal["auto", "completions", "chat"] = setting(
        "auto: chat completions for chat prompts, completions otherwise", "auto")
    sampling_fallback: int = setting(
        "when the server returns no logprobs, estimate them from N sampled "
        "answers (scores marked estimated); default off", 0)
    rpm: float | None = setting(
        "send at most N requests a minute (default: as the server's rate-limit headers allow)",
        sending=True)
    tpm: float | None = setting(
        "send at most N tokens a minute (prompt estimate + answer; default: as the server allows)",
        sending=True)
    pace: bool = setting(
        "pace requests from the server's x-ratelimit headers and 429s, the number in flight adapting "
        "between 1 and --concurrency (default on; --no-pace: always --concurrency in flight)", True, sending=True)
    prices: str | None = setting(
        "TOML price table whose rows replace or add to the shipped one "
        "(judge/accounting/prices.toml)", metavar="FILE", sending=True)
    max_cost: float | None = setting(
        "refuse a run whose estimated cost is above USD, and stop sending before the spend "
        "could pass it (the items left are reported as not scored; a rerun with a higher cap goes on from the cache)",
        metavar="USD", sending=True)
    batch: bool = setting(
        "send the requests the cache lacks through the provider's Batch API (half price, answered "
        "within 24 h) before scoring, then score from the cache; a run killed while it waits, run again, attaches to "
        "its batches (docs/backends-api.md)", False, sending=True)
    batch_fallback: Literal["resubmit", "sync"] = setting(
        "requests the batches did not answer (expired, cancelled, failed): "
        "resubmit them once, then fail their items with the reason (default), or sync: send them one by one",
        "resubmit", sending=True)
    batch_file: str | None = setting(
        "write the requests the cache lacks as a Batch API input file (for vllm "
        "run-batch or any runner of the format) and stop", metavar="FILE", sending=True)
    batch_results: str | None = setting(
        "read a runner's Batch API output file (of --batch-file's requests) into "
        "the cache, then score", metavar="FILE", sending=True)
    reasoning_effort: str | None = setting(
        "reasoning_effort sent to a reasoning model (low, medium, high, "
        "...); default: the server's", metavar="EFFORT")
    batch_poll: float = setting(
        "seconds between looks at the batches in flight", 30.0, sending=True, flag=None)
    batch_queue_tokens: int | None = setting(
        "the model's batch queue limit in prompt tokens, over the shipped table's "
        "(judge/accounting/batch_limits.toml)", sending=True, flag=None)
    tokenize: Literal["auto", "server", "estimate"] = setting(
        "how prompts are counted to fit the context window: auto (the server's /tokenize when it "
        "has one, else an estimate), server or estimate", "auto", flag=None)
    backoff: float = setting("seconds before the first retry of a failing request", 0.5, sending=True, flag=None)
    max_backoff: float = setting("the longest wait between retries, in seconds", 30.0, sending=True, flag=None)
    max_context: int | None = setting(
        "the model's context window in tokens (default: --n-ctx, else 4096)", flag=None)
    reasoning: bool | None = setting(
        "the model thinks before it answers (default: known from its name, else learned from the "
        "server's refusals)", flag=None)
    max_top_logprobs: int | None = setting(
        "the most top log-probabilities the server gives per position, on either endpoint "
        "(default: OpenAI's maxima, 20 on chat completions and 5 on completions; llama.cpp and vLLM servers give 20 "
        "on both)", flag=None)

    def __post_init__(self) -> None:
        if self.sampling_fallback < 0:
            raise InputError(f"must be >= 0, got {self.sampling_fallback}", field="--sampling-fallback")
        for name in ("rpm", "tpm", "max_cost", "batch_poll", "max_top_logprobs", "batch_queue_tokens"):
            value = getattr(self, name)  # a field of this record, typed by HOSTED.read: whole where it must be
            if value is not None and value <= 0:
                raise InputError(f"must be a number > 0, got {value!r}", field=HOSTED.flag(name))
        for name in ("batch_file", "batch_results"):
            if getattr(self, name) == "":
                raise InputError("must be a file path, got ''", field=HOSTED.flag(name))
        if self.batch_file is not None and self.batch_results is not None:
            raise InputError("--batch-file writes the requests for another runner and stops; --batch-results reads "
                             "its answers on the next run: give one of them", field="--batch-file")
        if self.batched and self.sampling_fallback:
            raise InputError("the Batch API reads log-probabilities only; the sampling fallback sends sampled answers "
                             "one by one: drop --sampling-fallback or the batch options", field="--sampling-fallback")

    @property
    def batched(self) -> bool:
        """Whether a run's requests go through the provider's Batch API first (or to and from its files)."""
        return bool(self.batch or self.batch_file or self.batch_results)

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> HostedOptions:
        """The options a method's ``options`` table (or ``--backend-option`` pairs) gives, each checked against its
        type; an unknown key or a value of the wrong type is an InputError naming it."""
        return cls(**HOSTED.read(options))


#: The flags and ``options`` keys of :class:`HostedOptions`.
HOSTED = Settings(HostedOptions, "hosted API (--backend openai)")
#: The options that change how requests are sent, never an answer.
SENDING = frozenset(f.name for f in fields(HostedOptions) if f.metadata.get("sending"))

__all__ = ["HOSTED", "SENDING", "HostedOptions"]
