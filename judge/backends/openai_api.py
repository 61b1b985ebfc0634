"""OpenAI-compatible hosted APIs (OpenAI, vLLM server, llama.cpp server, ...): top-N log-probabilities.

One request per prompt, ``max_tokens=1``: the completions endpoint with ``logprobs=N`` for plain
prompts, chat completions with ``logprobs=True, top_logprobs=N`` for chat prompts (the server applies
the model's chat template). Requests run ``concurrency`` at a time in threads; transient faults (429,
5xx, timeouts, connection errors, malformed responses) are retried with exponential backoff and
jitter (``tenacity``), honouring ``Retry-After``. What still fails becomes a per-item ``Failure``.

Requests are paced (:mod:`judge.backends.pacing`) from the server's rate-limit headers, the ``rpm`` /
``tpm`` caps and 429s, with the number in flight adapting between 1 and ``concurrency``. What the server
reports using is counted in tokens; the cost layer (:mod:`judge.backends.priced`) prices it and gives the
backend its purse (:class:`judge.accounting.spend.Purse`), which each request asks before it goes: under
``max_cost`` a request that could take the spend past the cap is not sent (its item fails saying so). The same request bodies go into
Batch API files (:mod:`judge.backends.openai_batch`), whose answers :meth:`OpenAIBackend.answer_from_batch`
reads exactly as a synchronous answer is read.

The API key is read from the environment (or handed in by the caller), kept only inside the HTTP
client, and scrubbed from every message this module produces; it is never part of ``settings()``.

A judge that reasons first (``reason``) asks for one completion, its rationale then its answer line: with
log-probabilities, the label distribution is read from the top log-probabilities at the answer's token;
without them (reasoning models, many gateways), ``sampling_fallback`` completions are sampled and their
final answers counted (``estimated``). Reasoning models (OpenAI's o-series and GPT-5, known by name, or
any model whose server refuses ``max_tokens``) get ``max_completion_tokens`` and ``reasoning_effort``; a
400 ``unsupported_parameter``/``unsupported_value`` for ``max_tokens``, ``logprobs``, ``top_logprobs``,
``temperature``, ``seed``, ``n`` or ``reasoning_effort`` makes the backend replace or drop that parameter,
remember it for the run, and send the request again (:class:`Refusals`).
"""

from __future__ import annotations

import email.utils
import json
import math
import os
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..accounting.spend import OverBudget, Purse
from ..core.config import GenerateConfig
from ..core.errors import BackendError, MissingExtraError
from .base import Backend, Capabilities, Failure, LabelDist, Prompt, Reasoned, Reasoning, gather
from .hosted import SENDING, HostedOptions
from .pacing import Pacer
from .reasoning import ANSWER_LINE_TOKENS, THINK_CLOSE, THINK_OPEN, answer_line, final_answer

#: Placeholder sent when no key is configured (local servers such as llama.cpp or vLLM ignore it).
NO_KEY = "no-key"
ENDPOINTS = ("auto", "completions", "chat")
#: Characters per token of the documented estimate used when the server cannot tokenize.
CHARS_PER_TOKEN = 4
#: Tokens added for the chat template's markup when counting a chat prompt (server tokenizers see text only).
CHAT_OVERHEAD = 32
#: Longest wait a ``Retry-After`` header may impose on one retry (seconds).
MAX_RETRY_AFTER = 120.0
#: Models that think before they answer, by name: OpenAI's o-series and GPT-5 family (``o3-mini``,
#: ``openai/o4-mini``, ``gpt-5.1``). They refuse ``max_tokens``, log-probabilities and a temperature other
#: than 1; ``reasoning`` (a backend option) overrides the name.
REASONING_MODELS = re.compile(r"(?:^|/)(?:o\d+|gpt-5)(?:$|[-.:])", re.IGNORECASE)
#: What is done with each parameter a server refuses (400 ``unsupported_parameter``/``unsupported_value``):
#: another name for it, or None to drop it (the server's default then applies).
REPLACEMENTS: dict[str, str | None] = {"max_tokens": "max_completion_tokens", "logprobs": None, "top_logprobs": None,
                                       "temperature": None, "seed": None, "n": None, "reasoning_effort": None}
#: Most top log-probabilities a request may ask per position, by endpoint (OpenAI's API reference: chat
#: completions' ``top_logprobs`` is 0..20, legacy completions' ``logprobs`` 0..5). Requests are capped here
#: unless the backend is told its server allows more (``max_top_logprobs``): OpenAI refuses a larger value,
#: alone or as a line of a batch.
MAX_TOP_LOGPROBS = {"chat": 20, "completions": 5}
#: Refusal codes of OpenAI's API that name a parameter the model does not take.
REFUSAL_CODES = ("unsupported_parameter", "unsupported_value")
#: Why a one-token read cannot score a model that thinks first.
THINKS_FIRST = ("model {model} thinks before it answers{why}, so a one-token read cannot score it: let it reason "
                "first with --reason N (TOML: reason = N), e.g. --reason 1024")


class _Retryable(Exception):
    """A transient fault worth retrying (HTTP status, timeout, connection, malformed body)."""

    def __init__(self, reason: str, retry_after: float | None = None, status: int | None = None,
                 headers: Any = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after
        self.status = status
        self.headers = headers


class _Permanent(Exception):
    """A fault that retrying will not fix (HTTP 400/401/404, prompt too long, ...)."""


class _NoLogprobs(Exception):
    """The server answered but gave no log-probabilities (some chat and reasoning models)."""


class _Refused(Exception):
    """HTTP 400: the model does not take parameter ``param`` (``unsupported_parameter``) or its value
    (``unsupported_value``)."""

    def __init__(self, param: str, reason: str) -> None:
        super().__init__(reason)
        self.param = param


class Refusals:
    """The parameters this run's model refuses, learned from the server's 400 answers (or known from a
    reasoning model's name) and kept for the run: each is replaced (``max_tokens`` by
    ``max_completion_tokens``) or dropped (:data:`REPLACEMENTS`) in every later request. Thread-safe."""

    def __init__(self, reasoning: bool) -> None:
        self._lock = threading.Lock()
        #: Parameters the server refused in this run (reported in the usage line), in order.
        self.refused: list[str] = []
        self._adjusted: set[str] = set()
        #: Known to think before it answers: by name, or because the server refused ``max_tokens``.
        self.reasoning = reasoning
        if reasoning:  # what every reasoning model of the family refuses, adjusted before the first request
            self._adjusted |= {"max_tokens", "logprobs", "top_logprobs", "temperature"}

    @property
    def logprobs(self) -> bool:
        """Whether log-probabilities may still be asked for."""
        return "logprobs" not in self._adjusted

    def apply(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` with every adjusted parameter replaced or dropped."""
        with self._lock:
            adjusted = set(self._adjusted)
        out: dict[str, Any] = {}
        for key, value in params.items():
            if key in adjusted:
                renamed = REPLACEMENTS[key]
                if renamed is not None:
                    out[renamed] = value
                continue
            out[key] = value
        return out

    def learn(self, param: str) -> bool:
        """Adjust ``param`` for the rest of the run; False when it was adjusted already."""
        with self._lock:
            if param in self._adjusted:
                return False
            pair = {"logprobs", "top_logprobs"} if param in ("logprobs", "top_logprobs") else {param}
            self._adjusted |= pair
            self.refused.append(param)
            if param == "max_tokens":
                self.reasoning = True
            return True

    def no_logprobs(self) -> None:
        """The server answers without log-probabilities: stop asking for them."""
        with self._lock:
            self._adjusted |= {"logprobs", "top_logprobs"}


@dataclass
class Usage:
    """Token usage reported by the server, summed over all requests (thread-safe)."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: The part of ``prompt_tokens`` the provider served from its prompt cache (billed at the cached price).
    cached_tokens: int = 0
    retries: int = 0
    #: The same counts of answers that came through the Batch API (billed at the batch discount).
    batch_requests: int = 0
    batch_prompt_tokens: int = 0
    batch_completion_tokens: int = 0
    batch_cached_tokens: int = 0
    #: Completion tokens a reasoning model spent thinking (``usage.completion_tokens_details``), within
    #: ``completion_tokens``.
    reasoning_tokens: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def add(self, usage: dict[str, Any] | None, *, batch: bool = False) -> None:
        prompt, completion, cached = _usage_counts(usage)
        with self._lock:
            if batch:
                self.batch_requests += 1
                self.batch_prompt_tokens += prompt
                self.batch_completion_tokens += completion
                self.batch_cached_tokens += cached
            else:
                self.requests += 1
                self.prompt_tokens += prompt
                self.completion_tokens += completion
                self.cached_tokens += cached
                self.reasoning_tokens += reasoning_tokens(usage)

    def add_retry(self) -> None:
        with self._lock:
            self.retries += 1

    def as_dict(self) -> dict[str, int]:
        out = {"requests": self.requests, "prompt_tokens": self.prompt_tokens,
               "completion_tokens": self.completion_tokens, "cached_tokens": self.cached_tokens,
               "retries": self.retries}
        if self.reasoning_tokens:  # only from a model that reports them: other runs' counters stay as they were
            out["reasoning_tokens"] = self.reasoning_tokens
        if self.batch_requests:
            out.update(batch_requests=self.batch_requests, batch_prompt_tokens=self.batch_prompt_tokens,
                       batch_completion_tokens=self.batch_completion_tokens,
                       batch_cached_tokens=self.batch_cached_tokens)
        return out


def _usage_counts(usage: dict[str, Any] | None) -> tuple[int, int, int]:
    """(prompt, completion, cached prompt) tokens of a response's ``usage`` block."""
    if not usage:
        return 0, 0, 0
    details = usage.get("prompt_tokens_details") or {}
    return (int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
            int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0)


def reasoning_tokens(usage: dict[str, Any] | None) -> int:
    """The completion tokens spent thinking, as OpenAI reports them (0 when not reported)."""
    details = (usage or {}).get("completion_tokens_details") or {}
    return int(details.get("reasoning_tokens") or 0) if isinstance(details, dict) else 0


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date), else None."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def estimate_tokens(text: str) -> int:
    """The documented estimate of a text's tokens when the server cannot count them: characters / 4, rounded up."""
    return -(-len(text) // CHARS_PER_TOKEN)


def body_bound(body: dict[str, Any]) -> tuple[int, int]:
    """The most prompt and completion tokens a request body can use: a token per UTF-8 byte of its prompt (a
    byte-level tokenizer never makes more; characters / 4 runs low on CJK text, code and emoji), plus the chat
    markup per message, and its whole completion budget (``max_tokens`` or ``max_completion_tokens``, times
    ``n``; 0 when it sets none)."""
    messages = body.get("messages")
    if isinstance(messages, list):
        prompt = sum(len(str(m.get("content") or "").encode("utf-8")) + CHAT_OVERHEAD for m in messages)
    else:
        texts = body.get("prompt")
        prompt = sum(len(str(x).encode("utf-8")) for x in (texts if isinstance(texts, list) else [texts or ""]))
    budget = body.get("max_completion_tokens") or body.get("max_tokens")
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        return prompt, 0
    return prompt, budget * int(body.get("n") or 1)


def _server_root(base_url: str) -> str:
    """``http://host:port/v1`` -> ``http://host:port`` (where llama.cpp serves /tokenize)."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


class OpenAIBackend(Backend):
    """An OpenAI-compatible server reached over HTTP; top-N log-probabilities only."""

    name = "openai"
    #: ``--check``: a remote API: its speed is not this machine's; what it would send is counted by a twin
    #: (:mod:`judge.backends.openai_replay`) and priced from the price table.
    cost = "hosted"
    #: How requests are sent, never what they ask: a results folder resumes with other values of them.
    sending_options = SENDING

    def __init__(self, model: str | None, config: GenerateConfig, *, api_key: str | None = None,
                 **options: Any) -> None:
        """``options``: the fields of :class:`judge.backends.hosted.HostedOptions` (checked there); ``api_key``: a
        key given in code (else read from the environment variable ``api_key_env`` names)."""
        try:
            import openai
            import tenacity  # noqa: F401  (checked here so a missing extra fails before any request)
        except ImportError as exc:
            raise MissingExtraError("the OpenAI-compatible API backend", "openai", "openai, tenacity") from exc
        self.options = o = HostedOptions.of(options)
        base_url = o.base_url or os.environ.get("OPENAI_BASE_URL")
        model = model or os.environ.get("OPENAI_MODEL")
        if not model:
            raise BackendError("the openai backend needs a model name: --model NAME (or OPENAI_MODEL)")
        if api_key is None:
            api_key = os.environ.get(o.api_key_env)
            if api_key is None and o.api_key_env != "OPENAI_API_KEY":
                raise BackendError(f"environment variable {o.api_key_env} (named by --api-key-env) is not set")
        self._secret = api_key or ""
        self._openai = openai
        self.model_id = model
        self.base_url = base_url or "https://api.openai.com/v1"
        self.config = config
        #: What the model refuses: known from its name (or the ``reasoning`` option), then learned.
        self.refusals = Refusals(bool(REASONING_MODELS.search(model)) if o.reasoning is None else o.reasoning)
        self.max_retries = config.max_retries  # GenerateConfig refuses values below 0
        self.concurrency = config.concurrency  # GenerateConfig refuses values below 1
        # The SDK's own retries are off: tenacity does them, so they are counted and bounded here.
        self._client = openai.OpenAI(base_url=self.base_url, api_key=api_key or NO_KEY, max_retries=0,
                                     timeout=config.timeout)
        self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="judge-api")
        self.usage = Usage()
        #: Paces the synchronous requests (None: ``pace`` off and no cap: ``concurrency`` in flight).
        self.pacer = Pacer(self.concurrency, o.rpm, o.tpm) if (o.pace or o.rpm or o.tpm) else None
        if self.pacer is not None and not o.pace:
            self.pacer.adaptive = False
        #: What each request asks before it goes: every request goes until the cost layer gives it a purse.
        self.purse = Purse()
        self._tokenize_mode = o.tokenize
        self._tokenizer: str | None = None  # "llama.cpp" | "llama-cpp-python" | "estimate", found lazily
        self._tok_lock = threading.Lock()
        self._tok_cache: dict[tuple[str, bool], int] = {}
        self.capabilities = Capabilities(
            full_vocab=False,
            top_n=min(config.top_n, self._top_logprobs_cap(self._chat_by_default(config))),
            chat_template=o.endpoint != "completions",
            max_context=o.max_context or config.max_context or 4096,
            batching=True,
            reason=True,
            answers_at_once=not self.refusals.reasoning,
        )

    # -- secrets ----------------------------------------------------------------------------------
    def _scrub(self, text: str) -> str:
        """Remove the key from any text that leaves this module (error bodies may echo headers)."""
        if self._secret and len(self._secret) >= 4:
            text = text.replace(self._secret, "***")
        return text

    # -- one request ------------------------------------------------------------------------------
    def _use_chat(self, prompt: Prompt) -> bool:
        if self.options.endpoint == "chat":
            return True
        if self.options.endpoint == "completions":
            if prompt.chat:
                raise _Permanent("chat prompt but endpoint=completions (use --no-chat or --endpoint chat)")
            return False
        return prompt.chat

    def _chat_by_default(self, config: GenerateConfig) -> bool:
        """Whether this run's prompts go to chat completions: the endpoint, else the run's ``chat`` setting (None:
        the chat template this backend offers)."""
        if self.options.endpoint != "auto":
            return self.options.endpoint == "chat"
        return config.chat is not False

    def _top_logprobs_cap(self, chat: bool) -> int:
        """The most top log-probabilities one request to the chat (or completions) endpoint may ask for."""
        if self.options.max_top_logprobs is not None:
            return self.options.max_top_logprobs
        return MAX_TOP_LOGPROBS["chat" if chat else "completions"]

    def request(self, prompt: Prompt, top_n: int) -> tuple[str, dict[str, Any]]:
        """The endpoint (``/v1/chat/completions`` or ``/v1/completions``) and JSON body of the request that
        asks ``prompt``'s top-``top_n`` answer tokens: what a synchronous request sends and what a Batch API
        input line holds (:mod:`judge.backends.openai_batch`). Raises ``_Permanent`` for a chat prompt on the
        completions endpoint."""
        chat = self._use_chat(prompt)
        url = "/v1/chat/completions" if chat else "/v1/completions"
        return url, self._body(prompt, chat, self._logprob_params(chat, min(top_n, self.capabilities.top_n or top_n)))

    def _body(self, prompt: Prompt, chat: bool, params: dict[str, Any],
              then: Sequence[dict[str, str]] = ()) -> dict[str, Any]:
        """The JSON body asking ``prompt`` (``then``: chat messages after the prompt's)."""
        if chat:
            messages = [{"role": "user", "content": prompt.text}, *then]
            return {"model": self.model_id, "messages": messages, **params}
        return {"model": self.model_id, "prompt": prompt.text, **params}

    def _api(self, fn: Any) -> Any:
        """``fn(client)``, one HTTP exchange through the SDK's client; its faults become _Retryable or
        _Permanent (the reason scrubbed of the key)."""
        openai = self._openai
        try:
            return fn(self._client)
        except openai.APITimeoutError:
            raise _Retryable(f"timeout after {self.config.timeout:g} s") from None
        except openai.APIConnectionError as exc:
            raise _Retryable(f"connection error ({type(exc.__cause__ or exc).__name__})") from None
        except openai.APIStatusError as exc:
            code = exc.status_code
            reason = f"HTTP {code}"
            detail = _body_detail(exc.body)
            if detail:
                reason += f": {self._scrub(detail)[:160]}"
            if code in (408, 409, 429) or code >= 500:
                raise _Retryable(reason, parse_retry_after(exc.response.headers), code, exc.response.headers) from None
            param = _refused_param(exc) if code in (400, 403) else None
            if param is not None:
                raise _Refused(param, reason) from None
            raise _Permanent(reason) from None

    def api(self, fn: Any, what: str) -> Any:
        """``fn(client)`` with this backend's retries (the Batch API client's files and batches requests);
        a fault that outlasts them is a BackendError naming ``what``."""
        try:
            return self._call(self._api, fn)
        except (_Retryable, _Permanent) as exc:
            raise BackendError(self._scrub(f"{what} failed: {exc}")) from None

    def _post(self, prompt: Prompt, chat: bool, *, then: Sequence[dict[str, str]] = (), **params: Any) -> dict[str, Any]:
        """One HTTP request (``then``: chat messages after the prompt's); returns the parsed JSON body or raises
        _Retryable / _Permanent / _Refused / OverBudget. Paced (``self.pacer``), and sent only when the purse sets
        aside the most it can cost (a token per byte of its prompt, the chat markup, its answer tokens)."""
        body = self._body(prompt, chat, params, then)
        most, answers = body_bound(body)
        held = self.purse.hold(most, answers)
        estimate = estimate_tokens(prompt.text) + (CHAT_OVERHEAD if chat else 0)
        ticket = self.pacer.acquire(estimate + answers) if self.pacer is not None else None
        headers: Any = None
        limited, wait = False, None
        try:
            endpoint = self._client.chat.completions if chat else self._client.completions
            raw = self._api(lambda _c: endpoint.with_raw_response.create(**body))
            headers = raw.headers
            try:
                data = json.loads(raw.http_response.content)
                if not isinstance(data, dict) or not data.get("choices"):
                    raise ValueError("no choices")
            except (ValueError, UnicodeDecodeError):
                raise _Retryable("malformed JSON response") from None
            self.usage.add(data.get("usage"))  # counted before what the purse held goes: never out of both
            return data
        except _Retryable as exc:
            if exc.status is not None:
                headers, limited, wait = exc.headers, exc.status == 429, exc.retry_after
            raise
        finally:
            if self.pacer is not None and ticket is not None:
                self.pacer.settle(ticket, headers, limited=limited, retry_after=wait)
            self.purse.release(held)

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Run ``fn`` with tenacity: exponential backoff + jitter, or the server's Retry-After."""
        import tenacity

        def wait(state: tenacity.RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            if isinstance(exc, _Retryable) and exc.status == 429 and self._paced_by_headers(exc):
                return 0.0  # the pacer holds the next attempt until the server's budget has room
            if isinstance(exc, _Retryable) and exc.retry_after is not None:
                return min(exc.retry_after, MAX_RETRY_AFTER)
            # exponential backoff with jitter on top: base * 2^(n-1), capped, + U(0, base)
            exp = min(self.options.max_backoff, self.options.backoff * 2 ** (state.attempt_number - 1))
            return exp + random.uniform(0, self.options.backoff)

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(_Retryable),
            stop=tenacity.stop_after_attempt(self.max_retries + 1),
            wait=wait,
            before_sleep=lambda _s: self.usage.add_retry(),
            reraise=True,
        )
        return retrying(fn, *args, **kwargs)

    def _paced_by_headers(self, exc: _Retryable) -> bool:
        """Whether the pacer knows when the server will take the next request (a 429 with a budget in its
        headers), so a retry needs no wait of its own."""
        return (self.pacer is not None and self.pacer.adaptive and exc.headers is not None
                and exc.headers.get("x-ratelimit-remaining-requests") is not None)

    def _send(self, prompt: Prompt, chat: bool, *, one_token: bool = False, then: Sequence[dict[str, str]] = (),
              **params: Any) -> dict[str, Any]:
        """One request with the parameters the model takes: those it refused earlier in the run are replaced
        or dropped (:class:`Refusals`), and a new refusal is learned and the request sent again at once. A
        one-token read (``one_token``) of a model found to think first fails, naming ``--reason``."""
        if self.options.reasoning_effort is not None and self.refusals.reasoning:
            params = {**params, "reasoning_effort": self.options.reasoning_effort}
        for _ in range(len(REPLACEMENTS) + 1):  # each round adjusts one more parameter
            if one_token and self.refusals.reasoning:
                refused = "max_tokens" in self.refusals.refused
                why = " (the server refused max_tokens, as reasoning models do)" if refused else ""
                raise _Permanent(THINKS_FIRST.format(model=self.model_id, why=why))
            sent = self.refusals.apply(params)
            try:
                return self._post(prompt, chat, then=then, **sent)
            except _Refused as exc:
                if exc.param not in sent:  # a parameter it was not sent, or the replacement refused too
                    raise _Permanent(str(exc)) from None
                self.refusals.learn(exc.param)  # (or another request in flight learned it first)
        raise _Permanent("the server kept refusing parameters after every one this backend can drop was dropped")

    def _logprob_params(self, chat: bool, top_n: int, max_tokens: int = 1, temperature: float = 0.0) -> dict[str, Any]:
        """The parameters asking the top ``top_n`` tokens per position, at most the endpoint's maximum
        (:data:`MAX_TOP_LOGPROBS`, or ``max_top_logprobs``): a plain prompt sent to completions when the backend
        declared chat's 20 is read from its top 5, which its distribution's ``top`` shows."""
        top_n = min(top_n, self._top_logprobs_cap(chat))
        if chat:
            return {"max_tokens": max_tokens, "temperature": temperature, "logprobs": True, "top_logprobs": top_n}
        return {"max_tokens": max_tokens, "temperature": temperature, "logprobs": top_n}

    def _guarded(self, work: Any) -> Any:
        """``work()``, every exception a short Failure reason (never the key)."""
        attempts = self.max_retries + 1
        try:
            return work()
        except _Retryable as exc:
            return Failure(self._scrub(f"API request failed after {attempts} attempts: {exc}"))
        except _Permanent as exc:
            return Failure(self._scrub(f"API request failed: {exc}"))
        except OverBudget as exc:
            return Failure(str(exc))
        except Exception as exc:  # an unexpected bug must fail the item, not the run; no detail may leak
            return Failure(self._scrub(f"API request failed: {type(exc).__name__}: {str(exc)[:160]}"))

    def _read_label(self, prompt: Prompt, candidates: Sequence[str], top_n: int) -> LabelDist | Failure:
        chat = self._use_chat(prompt)
        try:
            params = self._logprob_params(chat, top_n)
            # reading the logprobs is inside the retried call: a malformed logprobs block is retried
            return self._call(lambda: _read_logprobs(self._send(prompt, chat, one_token=True, **params), candidates,
                                                     top_n))
        except _NoLogprobs:
            if not self.options.sampling_fallback:
                return Failure("the server returned no logprobs (enable the sampling fallback: "
                               "--sampling-fallback N)")
            return self._estimate(prompt, chat, candidates)

    def _estimate(self, prompt: Prompt, chat: bool, candidates: Sequence[str]) -> LabelDist | Failure:
        """Sampling fallback: the first token of ``sampling_fallback`` answers at temperature 1."""
        want = self.options.sampling_fallback
        choices, prompt_tokens, _ = self._samples(prompt, chat, want, 1, self.config.seed, one_token=True)
        return _frequencies(Counter(_choice_text(c, chat) for c in choices), want, candidates, prompt_tokens)

    def _samples(self, prompt: Prompt, chat: bool, want: int, max_tokens: int, seed: int,
                 one_token: bool = False) -> tuple[list[dict[str, Any]], int, int]:
        """``want`` completions of at most ``max_tokens`` at temperature 1 (seeded from ``seed`` where the server
        takes a seed), asked again for those a response lacks: their choices, the prompt's tokens and the tokens
        generated."""
        choices: list[dict[str, Any]] = []
        prompt_tokens = generated = 0
        while len(choices) < want:
            n = want - len(choices)
            params = {"max_tokens": max_tokens, "temperature": 1.0, "n": n, "seed": seed + len(choices)}
            data = self._call(self._send, prompt, chat, one_token=one_token, **params)
            choices += data["choices"][:n]
            read, completion, _ = _usage_counts(data.get("usage"))
            generated, prompt_tokens = generated + completion, read or prompt_tokens
        return choices, prompt_tokens, generated

    # -- a rationale before the answer --------------------------------------------------------------
    def _reason_one(self, prompt: Prompt, candidates: Sequence[str], top_n: int, how: Reasoning) -> Reasoned | Failure:
        """One prompt's rationale and answer: read from the top log-probabilities at the answer's token when
        the server gives them, else estimated from ``sampling_fallback`` sampled completions."""
        chat = self._use_chat(prompt)
        if self.refusals.logprobs:
            params = self._logprob_params(chat, top_n, how.tokens + ANSWER_LINE_TOKENS, how.temperature)
            params["seed"] = how.seed
            try:
                return self._call(lambda: self._read_after(self._send(prompt, chat, **params), prompt, chat,
                                                           candidates, top_n, how))
            except _NoLogprobs:
                self.refusals.no_logprobs()
        if not self.options.sampling_fallback:
            return Failure(f"the server returns no log-probabilities for model {self.model_id}: estimate the answer "
                           "from sampled completions with --sampling-fallback N (e.g. 5)")
        return self._sample_answers(prompt, chat, candidates, how)

    def _read_after(self, data: dict[str, Any], prompt: Prompt, chat: bool, candidates: Sequence[str], top_n: int,
                    how: Reasoning) -> Reasoned | Failure:
        """The completion's answer line found in its tokens (outside thinking), and the label distribution
        read from the top log-probabilities at the answer's token (the first after the cue that is not
        markup)."""
        rows, text = _said(data)
        thinking = _thinking(data["choices"][0], chat)
        n_prompt, generated, _ = _usage_counts(data.get("usage"))
        where = answer_line(text, how.cue)
        if where is None:  # no answer line: asked for it after the rationale
            after = self._answer_after(prompt, chat, text, candidates, top_n, how)
            if isinstance(after, Failure):
                return after
            return Reasoned(after[0], (thinking + text).strip(), generated + after[1])
        table = _answer_table(rows, where[1])
        if table is None:
            return Failure(f"the answer after '{how.cue}' shares a token with the cue: its probability cannot be read")
        return Reasoned(_table_dist(table, candidates, top_n, n_prompt), (thinking + text[: where[0]]).strip(), generated)

    def _answer_after(self, prompt: Prompt, chat: bool, said: str, candidates: Sequence[str], top_n: int,
                      how: Reasoning) -> tuple[LabelDist, int] | Failure:
        """The answer of a completion that wrote no answer line, read after its rationale with one more request,
        and the tokens that request generated: on the completions endpoint, the next token after the prompt,
        the rationale and the cue (exactly where a local backend reads it); in a chat, the model's next turn
        after its rationale and a request for the answer line, read after the cue it writes (or at its first
        word when it gives the label alone)."""
        if not chat:
            follow = Prompt(f"{prompt.text}{said}{'' if said.endswith(chr(10)) else chr(10)}{how.cue}", chat=False)
            data = self._send(follow, False, **self._logprob_params(False, top_n))
            return _read_logprobs(data, candidates, top_n), _usage_counts(data.get("usage"))[1]
        then = [{"role": "assistant", "content": said}, {"role": "user", "content": answer_request(how.cue, candidates)}]
        data = self._send(prompt, True, then=then, **self._logprob_params(True, top_n, ANSWER_LINE_TOKENS))
        rows, text = _said(data)
        where = answer_line(text, how.cue)
        table = _answer_table(rows, where[1] if where else 0)
        if table is None:
            return Failure(f"the model wrote no answer line ('{how.cue} ...') after its rationale, nor when asked for it")
        n_prompt, generated, _ = _usage_counts(data.get("usage"))
        return _table_dist(table, candidates, top_n, n_prompt), generated

    def _sample_answers(self, prompt: Prompt, chat: bool, candidates: Sequence[str], how: Reasoning) -> Reasoned | Failure:
        """``sampling_fallback`` completions at temperature 1 (seeded where the server takes a seed), each read
        for its final answer line; the distribution is their answers' frequencies (``estimated``). Completions
        without a readable answer are counted; an item with none fails, saying so."""
        want = self.options.sampling_fallback
        choices, prompt_tokens, generated = self._samples(prompt, chat, want, how.tokens + ANSWER_LINE_TOKENS, how.seed)
        # (rationale, label) per completion
        said = [final_answer(_thinking(c, chat) + _choice_text(c, chat), how.cue, candidates) for c in choices]
        finish = str(choices[0].get("finish_reason"))
        counts = Counter(label for _, label in said if label is not None)
        unparsed = sum(label is None for _, label in said)
        if not counts:
            return Failure(f"none of the {want} sampled completions ended with an answer line ('{how.cue} ...') "
                           f"that could be read (finish_reason {finish}); a larger --reason leaves them more room")
        rationale = next(r for r, label in said if label is not None)
        return Reasoned(_frequencies(counts, want, candidates, prompt_tokens), rationale, generated, unparsed)

    def reason(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int, how: Reasoning
    ) -> list[Reasoned | Failure]:
        """Each prompt's rationale and answer, ``concurrency`` requests in flight, in prompt order."""
        top_n = min(top_n, self.capabilities.top_n or top_n)
        return gather(self._each(prompts, lambda p: self._reason_one(p, tuple(candidates), top_n, how)), len(prompts))

    def _each(self, prompts: Sequence[Prompt], work: Any) -> Iterator[tuple[int, Any]]:
        """(index, ``work(prompt)``) in completion order, ``concurrency`` in flight, each fault a Failure."""
        futures = {self._pool.submit(self._guarded, lambda p=p: work(p)): i for i, p in enumerate(prompts)}
        for fut in as_completed(futures):
            yield futures[fut], fut.result()

    def reason_settings(self) -> dict[str, object]:
        """How a rationale is asked for: room for the answer line after it."""
        return {"answer_line_tokens": ANSWER_LINE_TOKENS}

    # -- the contract -----------------------------------------------------------------------------
    def iter_label_logprobs(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int = 20
    ) -> Iterator[tuple[int, LabelDist | Failure]]:
        """(index, result) pairs in completion order, ``concurrency`` requests in flight."""
        top_n = min(top_n, self.capabilities.top_n or top_n)
        return self._each(prompts, lambda p: self._read_label(p, tuple(candidates), top_n))

    def label_logprobs(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int = 20
    ) -> list[LabelDist | Failure]:
        return gather(self.iter_label_logprobs(prompts, candidates, top_n), len(prompts))

    def count_tokens(self, prompt: Prompt) -> int:
        """Server tokenizer when it has one (llama.cpp /tokenize, llama-cpp-python /extras/tokenize),
        else the estimate len(text) / 4; chat prompts add CHAT_OVERHEAD for the template's markup."""
        key = (prompt.text, prompt.chat)
        if key not in self._tok_cache:
            n = self._server_count(prompt.text)
            if n is None:
                n = estimate_tokens(prompt.text)
            self._tok_cache[key] = n + (CHAT_OVERHEAD if prompt.chat else 0)
        return self._tok_cache[key]

    def _server_count(self, text: str) -> int | None:
        kind = self.tokenizer
        if kind == "estimate":
            if self._tokenize_mode == "server":
                raise BackendError(f"the server at {_without_userinfo(self.base_url)} has no tokenize endpoint")
            return None
        try:
            return self._tokenize(kind, text)
        except Exception:
            return None  # a flaky tokenize call must not fail scoring: fall back to the estimate

    def _tokenize(self, kind: str, text: str) -> int:
        root = _server_root(self.base_url)
        if kind == "llama.cpp":
            resp = self._client.post(f"{root}/tokenize", cast_to=object, body={"content": text})
        else:
            resp = self._client.post(f"{root}/extras/tokenize", cast_to=object,
                                     body={"input": text, "model": self.model_id})
        return len(resp["tokens"])  # type: ignore[index]

    def _probe_tokenizer(self) -> str:
        for kind in ("llama.cpp", "llama-cpp-python"):
            try:
                self._tokenize(kind, "hello")
                return kind
            except Exception:
                continue
        return "estimate"

    @property
    def tokenizer(self) -> str:
        """How count_tokens counts: 'llama.cpp' / 'llama-cpp-python' (server endpoint) or 'estimate'."""
        if self._tokenize_mode == "estimate":
            return "estimate"
        with self._tok_lock:
            if self._tokenizer is None:
                self._tokenizer = self._probe_tokenizer()
        return self._tokenizer

    def settings(self) -> dict[str, object]:
        # No key here: settings feed cache keys and provenance. reasoning_effort only when given, so that the
        # keys of every other run stay as they were.
        out: dict[str, object] = {"base_url": _without_userinfo(self.base_url), "endpoint": self.options.endpoint,
                                  "sampling_fallback": self.options.sampling_fallback, "top_n": self.capabilities.top_n}
        if self.options.reasoning_effort is not None:
            out["reasoning_effort"] = self.options.reasoning_effort
        if self.options.max_top_logprobs is not None:  # only when given, for the same reason
            out["max_top_logprobs"] = self.options.max_top_logprobs
        return out

    def counters(self) -> dict[str, int]:
        """API usage in requests and tokens (what the cost layer prices); how often pacing held a request back
        and how many 429s came; each parameter the server refused (``refused:<param>``)."""
        out = {**self.usage.as_dict(), **{f"refused:{p}": 1 for p in self.refusals.refused}}
        if self.pacer is not None:
            out.update(paced_waits=self.pacer.stats.waits, rate_limited=self.pacer.stats.limited)
        return out

    def answer_from_batch(self, line: dict[str, Any], candidates: Sequence[str], top_n: int) -> LabelDist | Failure:
        """The answer a Batch API output line (or ``vllm run-batch``'s) holds, read as :meth:`_one` reads a
        synchronous response: the same distribution, or a Failure with the same kind of reason; its usage is
        counted at the batch price."""
        try:
            error = line.get("error")
            response = line.get("response") or {}
            if error:
                code = error.get("code") if isinstance(error, dict) else None
                message = error.get("message") if isinstance(error, dict) else error
                return Failure(self._scrub(f"batch request failed: {code or 'error'}: {' '.join(str(message).split())[:160]}"))
            status = int(response.get("status_code") or 0)
            body = response.get("body")
            if status != 200 or not isinstance(body, dict):
                detail = _body_detail(body)
                return Failure(self._scrub(f"API request failed: HTTP {status}" + (f": {detail[:160]}" if detail else "")))
            self.usage.add(body.get("usage"), batch=True)
            if not body.get("choices"):
                return Failure("API request failed: malformed JSON response")
            return _read_logprobs(body, candidates, min(top_n, self.capabilities.top_n or top_n))
        except _NoLogprobs:
            return Failure("the server returned no logprobs (enable the sampling fallback: --sampling-fallback N)")
        except _Retryable as exc:
            return Failure(self._scrub(f"API request failed: {exc}"))
        except (AttributeError, TypeError, ValueError) as exc:
            return Failure(self._scrub(f"API request failed: unreadable batch output line ({type(exc).__name__})"))

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._client.close()


def _without_userinfo(url: str) -> str:
    """A base URL with any ``user:password@`` removed (it must not reach caches or outputs)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[1], parts.path, parts.query, parts.fragment))


def _body_detail(body: Any) -> str:
    """The error message of an error body, a failed response's or a batch output line's (OpenAI:
    ``{"error": {"message": ...}}``); empty when it has none."""
    if isinstance(body, dict):
        inner = body.get("error")
        msg = inner.get("message") if isinstance(inner, dict) else body.get("message")
        if msg:
            return " ".join(str(msg).split())
    return ""


def _refused_param(exc: Any) -> str | None:
    """The parameter a 400 or 403 answer refuses, when it is one this backend can replace or drop; else None.
    OpenAI answers a reasoning model's ``max_tokens`` and ``temperature`` with 400, ``code``
    ``unsupported_parameter`` or ``unsupported_value`` and ``param``, and its log-probabilities with 403 "You
    are not allowed to request logprobs from this model" (``param`` and ``code`` null); a gateway that keeps
    only the message ("Unsupported parameter: 'max_tokens' ...") is read from the message."""
    detail = _body_detail(exc.body)
    param = exc.param if exc.code in REFUSAL_CODES else None
    if param is None:
        found = re.search(r"Unsupported (?:parameter|value): '(\w+)'", detail)
        param = found.group(1) if found else None
    if param is None and re.search(r"not allowed to request logprobs", detail, re.IGNORECASE):
        param = "logprobs"
    return param if param in REPLACEMENTS else None


def _choice_text(choice: dict[str, Any], chat: bool) -> str:
    if chat:
        return str(((choice.get("message") or {}).get("content")) or "")
    return str(choice.get("text") or "")


def _thinking(choice: dict[str, Any], chat: bool) -> str:
    """The thinking a completion shows apart from its text (a ``reasoning_content`` field, as DeepSeek and
    vLLM's reasoning parsers return it), marked as a block of thinking: kept with the rationale, never read
    as the answer."""
    message = choice.get("message") or {} if chat else choice
    thought = message.get("reasoning_content") or message.get("reasoning")
    return f"{THINK_OPEN}{thought}{THINK_CLOSE}\n" if isinstance(thought, str) and thought.strip() else ""


def _token_rows(choice: dict[str, Any]) -> list[tuple[str, dict[str, float]]]:
    """Each generated token's text with the top log-probabilities at its position (the token itself
    included), from either response format: chat (``logprobs.content``, which llama.cpp's server also uses
    for completions) or legacy completions (``tokens`` and ``top_logprobs`` maps)."""
    lp = choice.get("logprobs") or {}
    rows: list[tuple[str, dict[str, float]]] = []
    try:
        if lp.get("content"):
            for entry in lp["content"]:
                table: dict[str, float] = {}
                for alt in entry.get("top_logprobs") or []:
                    _keep(table, alt["token"], alt["logprob"])
                _keep(table, entry.get("token"), entry.get("logprob"))
                rows.append((str(entry.get("token") or ""), table))
        else:
            toks, vals, tops = lp.get("tokens") or [], lp.get("token_logprobs") or [], lp.get("top_logprobs") or []
            for i in range(max(len(toks), len(tops))):
                table = {}
                for alt, val in (tops[i] or {}).items() if i < len(tops) else ():
                    _keep(table, alt, val)
                tok = toks[i] if i < len(toks) else None
                _keep(table, tok, vals[i] if i < len(vals) else None)
                rows.append((str(tok or ""), table))
    except (KeyError, TypeError, AttributeError, IndexError, ValueError):
        raise _Retryable("malformed logprobs in the response") from None
    return rows


def _said(data: dict[str, Any]) -> tuple[list[tuple[str, dict[str, float]]], str]:
    """The first completion's token rows (:func:`_token_rows`) and its text; _NoLogprobs when it has none."""
    rows = _token_rows(data["choices"][0])
    if not rows:
        raise _NoLogprobs()
    return rows, "".join(tok for tok, _ in rows)


def _table_dist(table: dict[str, float], candidates: Sequence[str], top_n: int, n_prompt: int) -> LabelDist:
    """The label answer from the top log-probabilities at the answer's token (top-N only: ``complete`` False)."""
    top = sorted(table.items(), key=lambda t: -t[1])[:top_n]
    return LabelDist({c: table[c] for c in candidates if c in table}, top, n_prompt_tokens=n_prompt,
                     n_evaluated_tokens=n_prompt, complete=False)


def _frequencies(counts: Counter[str], want: int, candidates: Sequence[str], n_prompt: int) -> LabelDist:
    """The answer estimated from ``want`` sampled completions (``estimated``): the log of each answer's share of
    them, ``counts`` holding how many gave it."""
    top = sorted(((t, math.log(k / want)) for t, k in counts.items()), key=lambda t: -t[1])
    return LabelDist({c: math.log(counts[c] / want) for c in candidates if counts.get(c)}, top,
                     n_prompt_tokens=n_prompt, n_evaluated_tokens=n_prompt, estimated=True, complete=False)


def answer_request(cue: str, candidates: Sequence[str]) -> str:
    """The next user turn of a chat whose rationale ended without its answer line: it asks for that line."""
    return f"Now write only your answer line: \"{cue} <answer>\", where <answer> is one of {', '.join(_labels(candidates))}."


def _labels(candidates: Sequence[str]) -> list[str]:
    """The distinct labels of ``candidates`` as a person writes them (``Yes``, ``No``; ``1`` ... ``5``)."""
    out: dict[str, str] = {}
    for c in candidates:
        word, key = c.strip(), c.strip().lower()
        if key not in out or (word == word.capitalize() != out[key]):
            out[key] = word
    return list(out.values())


def _answer_table(rows: list[tuple[str, dict[str, float]]], cue_end: int) -> dict[str, float] | None:
    """The top log-probabilities at the answer's token: the first token after the cue (which ends at character
    ``cue_end`` of the tokens' text) that is more than whitespace or markup. None when the token that ends the
    cue runs on into the answer (its probability cannot be read apart), or no token follows."""
    at = 0
    for token, table in rows:
        start, at = at, at + len(token)
        if at <= cue_end:
            continue
        rest = token[max(0, cue_end - start):]
        if not rest.strip(" \t\n*_`'\"[(>"):
            continue
        return table if start >= cue_end else None
    return None


def _read_logprobs(data: dict[str, Any], candidates: Sequence[str], top_n: int) -> LabelDist:
    """Top-N tokens of the first answer position, from either response format (:func:`_token_rows`); the tokens
    the provider's prompt cache served are not counted as evaluated."""
    rows = _token_rows(data["choices"][0])
    if not rows or not rows[0][1]:
        raise _NoLogprobs()
    usage = data.get("usage") or {}
    prompt, _, cached = _usage_counts(usage)
    dist = _table_dist(rows[0][1], candidates, top_n, prompt)
    dist.n_evaluated_tokens = max(0, prompt - cached)
    return dist


def _keep(table: dict[str, float], token: Any, logprob: Any) -> None:
    """Different token ids can decode to the same text: keep the most probable one."""
    if token is None or logprob is None:
        return
    val = float(logprob)
    if math.isfinite(val) and (token not in table or val > table[token]):
        table[str(token)] = val
