"""A small OpenAI-compatible HTTP server on 127.0.0.1 that fails on purpose (for tests and benchmarks).

It answers as OpenAI does, following OpenAI's API reference (read as documentation, no code taken):
"Create chat completion" (https://platform.openai.com/docs/api-reference/chat/create), "Create completion"
(legacy, https://platform.openai.com/docs/api-reference/completions/create), "Files"
(https://platform.openai.com/docs/api-reference/files), "Batch" (https://platform.openai.com/docs/api-reference/batch),
"Error codes" (https://platform.openai.com/docs/guides/error-codes), the Batch API guide
(https://platform.openai.com/docs/guides/batch), "Rate limits" (https://platform.openai.com/docs/guides/rate-limits),
and openai-python's request and error types. **Request bodies** are checked first, on both endpoints and inside
batches alike (:mod:`openai_rules`, which quotes the rule and message of each): unknown arguments, missing
``model``/``messages``/``prompt``, types, ``logprobs`` (completions: an integer 0..5; chat: a boolean),
``top_logprobs`` (0..20, only with ``logprobs`` true), ``max_tokens`` with ``max_completion_tokens``, ``n``
(1..128), ``temperature`` (0..2), ``top_p`` (0..1); a refused body gets HTTP 400 and
``{"error": {"message", "type", "param", "code"}}`` with OpenAI's code (``integer_above_max_value``,
``invalid_type``, ``invalid_parameter_combination``, ...), never counted against a rate limit; every other
error body (404, 401, 429, 5xx) has the same four fields.

It answers ``POST /v1/completions`` and ``POST /v1/chat/completions`` with ``max_tokens=1``-style
responses carrying top log-probabilities that depend only on the prompt (``expected_goodness``), so
a test can check the scores that come out. Faults are scripted per prompt: every prompt containing
a marker string takes the next action from that marker's list (then answers normally), which keeps
scripts deterministic under concurrent clients. Actions:

``ok`` · ``429`` · ``429:SECONDS`` (with ``Retry-After``) · ``500`` / ``502`` / ``503`` (any status) ·
``timeout`` (sleep ``sleep_s`` before answering) · ``reset`` (TCP reset, no response) ·
``malformed`` (200 with invalid JSON) · ``badlogprobs`` (valid JSON, broken logprobs block) ·
``truncated`` (body shorter than its Content-Length) · ``nologprobs`` (a valid answer without
logprobs) · ``echo401`` (401 whose message repeats the key) · ``die`` (stop serving: refuse every
later request).

``latency`` adds a fixed delay to every request (the ``api`` benchmark); ``logprobs=False`` makes
every answer come without logprobs, sampled answers cycling Yes, Yes, Yes, No per prompt (the
sampling fallback estimates p(yes) = 0.75); ``labels`` replaces Yes and No (A and B for a pairwise
judge). Every request is recorded with its Authorization header.

A request for more than one token (a judge that reasons first) gets a rationale, then the answer line
``Answer: Yes`` (or ``No``): with logprobs, one entry per token and the top log-probabilities of
``top_logprobs`` at the answer's token (`` Yes``/`` No`` share 0.8 of the mass as p : 1 - p, so the exact
read is ``expected_goodness``); sampled (temperature above 0, ``n`` choices), each choice's label drawn by
``sampled_label`` from its seed, and about one in ten choices ending without an answer line. With
``answer_line=False`` a rationale asked for with logprobs ends without its answer line; a chat that goes
on after it (the rationale as the assistant's turn, a request for the answer line as the user's) gets the
answer line alone. A chat's prompt, everywhere here, is its messages' texts joined by line breaks.

``reasoning=True`` makes it answer as OpenAI's reasoning models do (o-series, GPT-5), with their error
bodies: HTTP 400 for ``max_tokens`` (``unsupported_parameter``: use ``max_completion_tokens``) and a
``temperature`` other than 1 (``unsupported_value``), HTTP 403 for ``logprobs`` and ``top_logprobs`` ("You
are not allowed to request logprobs from this model", ``param`` and ``code`` null); hidden reasoning tokens (``REASONING_TOKENS`` per ``reasoning_effort``) count in
``max_completion_tokens`` and are reported in ``usage.completion_tokens_details.reasoning_tokens``; a
budget they exhaust gives empty content and ``finish_reason`` ``length``. ``think="block"`` shows thinking
in the content (a ``<think>`` block holding a wrong answer line first), ``think="field"`` in a
``reasoning_content`` field.

**Rate limits** (``limit=RateLimit(...)``): budgets of requests and tokens per minute that refill
continuously, as OpenAI's do; every answer carries ``x-ratelimit-limit/remaining/reset-requests`` and
``-tokens`` (resets as Go durations: ``6m0s``, ``1s``, ``20ms``), and a request the budget cannot hold gets a
429 (``rate_limit_exceeded``) without using any. A request's tokens are its prompt's characters / 4 plus
``max_tokens``. ``time_scale`` speeds the server's clock: at 10, its minute lasts 6 s, so 600 requests a
minute refill at 100 a second; reset times are given in real seconds.

**Files and batches** (the Batch API): ``POST /v1/files`` (multipart: ``file``, ``purpose=batch``; a ``.jsonl``
name, at most ``max_file_bytes``), ``GET /v1/files/{id}`` and ``/v1/files/{id}/content``; ``POST /v1/batches``
(``input_file_id``, ``endpoint``, ``completion_window="24h"``), ``GET /v1/batches`` (newest first) and
``/v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``; ``GET /v1/batches`` and ``GET /v1/files`` are cursor
pages, newest first (``limit``: 1..100, default 20, for batches; 1..10,000 for files, with ``order`` and
``purpose``; ``after``: an id; ``has_more``, ``first_id``, ``last_id``). A batch is ``validating`` for
``batch_validate_s``, then fails with ``errors.data`` (``line``, ``code``: ``invalid_json_line``,
``missing_required_parameter``, ``invalid_method``, ``url_mismatch``, ``duplicate_custom_id``, ``model_mismatch``,
``empty_file``, ``too_many_tasks``; ``token_limit_exceeded`` when its prompt tokens, with those its model has
enqueued in batches validated and not yet ended, pass ``enqueued_tokens``, a limit for every model or per model
name) or runs ``in_progress`` for ``batch_run_s`` (``request_counts.completed`` growing), then
``finalizing`` for ``batch_finalize_s``, then ``completed`` with an output file (answers as the synchronous
endpoints give them) and an error file, their lines in shuffled order; a line whose body is refused (or
that a reasoning model refuses) is in the error file with the status and error body it gets alone.
``expire_batches(n)`` makes the next n batches expire with ``expire_share`` of their requests done (the rest
in the error file as ``batch_expired``); prompts holding ``batch_fail_marker`` come back as HTTP 500 lines in
the error file.

Run it alone: ``python tests/fault_server.py --port 8011 --latency 0.2`` (``--rpm 600 --time-scale 10``).
"""

from __future__ import annotations

import argparse
import email.parser
import email.policy
import hashlib
import json
import math
import random
import re
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

try:  # as tests.fault_server (the tests, the benchmarks) or as a script from tests/
    from tests.openai_rules import enqueued_limit_error, error, page, refuse
except ModuleNotFoundError:
    from openai_rules import enqueued_limit_error, error, page, refuse  # type: ignore[no-redef]

#: What the Batch API takes: endpoints, requests per file and bytes per file (OpenAI's documented limits).
BATCH_ENDPOINTS = ("/v1/responses", "/v1/chat/completions", "/v1/embeddings", "/v1/completions")
MAX_BATCH_REQUESTS = 50_000
MAX_FILE_BYTES = 200 * 1024 * 1024


def expected_goodness(prompt: str) -> float:
    """p(yes) / (p(yes) + p(no)) the server answers for ``prompt``: a hash of it mapped into [0.05, 0.95]."""
    h = int.from_bytes(hashlib.sha256(prompt.encode("utf-8")).digest()[:4], "big")
    return 0.05 + 0.9 * (h / 2**32)


def top_logprobs(prompt: str, space: str = "", labels: tuple[str, str] = ("Yes", "No")) -> dict[str, float]:
    """The top tokens answered for ``prompt``: the two labels (Yes/No) share 0.8 of the mass in proportion
    p : 1 - p (``space``: spelled after it, as the token after ``Answer:`` is)."""
    p = expected_goodness(prompt)
    yes, no = labels
    return {f"{space}{yes}": math.log(0.8 * p), f"{space}{no}": math.log(0.8 * (1 - p)), f"{space}The": math.log(0.1),
            f"{space}I": math.log(0.05)}


def _unit(*parts: object) -> float:
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def sampled_label(prompt: str, seed: int) -> str | None:
    """The answer of the sampled completion of ``prompt`` with ``seed``: Yes with probability
    ``expected_goodness``, else No; None (no answer line) for about one seed in ten."""
    if _unit("garble", prompt, seed) < 0.1:
        return None
    return "Yes" if _unit("label", prompt, seed) < expected_goodness(prompt) else "No"


def rationale(label: str | None) -> str:
    """The rationale the server writes before an answer line (or instead of one: ``label`` None)."""
    if label is None:
        return "The reply is hard to judge; it could go either way."
    return f"The reply {'follows from' if label == 'Yes' else 'ignores'} what the user said, so it is " + \
        ("a good turn." if label == "Yes" else "a weak turn.")


def tokens_of(text: str) -> list[str]:
    """The server's tokens of a completion: a line break, a word with its leading space, or a sign."""
    return re.findall(r"\n|[ ]?[A-Za-z0-9']+|[ ]?[^\sA-Za-z0-9']", text)


#: Hidden reasoning tokens a reasoning model spends per request, by ``reasoning_effort``.
REASONING_TOKENS = {"low": 16, "medium": 48, "high": 96}
#: OpenAI's refusals of reasoning models' parameters: HTTP status, ``code`` and message (``param`` names the
#: parameter, except in the 403 for log-probabilities, whose ``param`` and ``code`` are null).
REFUSALS: dict[str, tuple[int, str | None, str]] = {
    "max_tokens": (400, "unsupported_parameter", "Unsupported parameter: 'max_tokens' is not supported with this "
                   "model. Use 'max_completion_tokens' instead."),
    "logprobs": (403, None, "You are not allowed to request logprobs from this model"),
    "top_logprobs": (403, None, "You are not allowed to request logprobs from this model"),
    "temperature": (400, "unsupported_value", "Unsupported value: 'temperature' does not support {value} with this "
                    "model. Only the default (1) value is supported."),
}


def go_duration(seconds: float) -> str:
    """A duration as Go prints it, as OpenAI's reset headers do: ``6m0s``, ``1.5s``, ``20ms``."""
    if seconds < 1:
        return f"{max(0, round(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60.0)
    text = f"{round(rest, 3):g}s"
    return f"{int(minutes)}m{text}" if minutes else text


@dataclass
class RateLimit:
    """Budgets per minute (None: no limit of that kind); ``time_scale`` speeds the server's clock."""

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    time_scale: float = 1.0
    #: Add ``Retry-After`` (seconds until one request fits) to a 429, as some servers do.
    retry_after: bool = False


class _Bucket:
    def __init__(self, per_minute: float, scale: float, now: float) -> None:
        self.limit = per_minute
        self.rate = per_minute / 60.0 * scale  # per real second
        self.level = per_minute
        self.at = now

    def refill(self, now: float) -> None:
        self.level = min(self.limit, self.level + (now - self.at) * self.rate)
        self.at = now

    def headers(self, kind: str) -> dict[str, str]:
        return {f"x-ratelimit-limit-{kind}": str(int(self.limit)),
                f"x-ratelimit-remaining-{kind}": str(max(0, int(self.level))),
                f"x-ratelimit-reset-{kind}": go_duration((self.limit - self.level) / self.rate)}


def prompt_tokens(prompt: str) -> int:
    """The tokens the server reports (and charges its budget) for a prompt: its characters / 4."""
    return max(1, len(prompt) // 4)


@dataclass
class Request:
    path: str
    authorization: str | None
    prompt: str
    body: dict[str, Any]
    time: float
    action: str


@dataclass
class FaultServer:
    latency: float = 0.0
    sleep_s: float = 2.0
    logprobs: bool = True
    #: Completions answer in the chat "content" logprobs format, as llama.cpp's own server does.
    content_format: bool = False
    #: Answer as OpenAI's reasoning models do (see the module docstring).
    reasoning: bool = False
    #: Where a reasoning model shows its thinking: "" (nowhere), "block" (content), "field" (reasoning_content).
    think: str = ""
    #: A rationale asked for with logprobs ends with its answer line; False: it ends without one (a chat's
    #: next turn after it, asking for the answer line, then writes one).
    answer_line: bool = True
    #: The two answers it gives (top tokens and sampled answers): Yes/No, or A/B for a pairwise judge.
    labels: tuple[str, str] = ("Yes", "No")
    port: int = 0
    requests: list[Request] = field(default_factory=list)
    limit: RateLimit | None = None
    batch_validate_s: float = 0.05
    batch_run_s: float = 0.3
    batch_finalize_s: float = 0.05
    expire_share: float = 0.5
    batch_fail_marker: str | None = None
    max_batch_requests: int = MAX_BATCH_REQUESTS
    max_file_bytes: int = MAX_FILE_BYTES
    #: Prompt tokens a model may have enqueued in batches at once (validated, not yet ended): one number for
    #: every model, or per model name (a model not named has no limit); None: no limit.
    enqueued_tokens: int | dict[str, int] | None = None

    def __post_init__(self) -> None:
        self._rules: list[tuple[str, deque[str]]] = []
        self._samples: dict[str, int] = {}
        self._lock = threading.Lock()
        self.dead = False
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        now = time.monotonic()
        self._buckets: dict[str, _Bucket] = {}
        if self.limit is not None:
            for kind, per_minute in (("requests", self.limit.requests_per_minute),
                                     ("tokens", self.limit.tokens_per_minute)):
                if per_minute:
                    self._buckets[kind] = _Bucket(per_minute, self.limit.time_scale, now)
        #: 429s sent because a budget was spent.
        self.limited = 0
        self.files: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self._expire = 0
        self._ids = 0

    def expire_batches(self, n: int = 1) -> FaultServer:
        """The next ``n`` batches created expire with ``expire_share`` of their requests done."""
        with self._lock:
            self._expire += n
        return self

    def _new_id(self, prefix: str) -> str:
        with self._lock:
            self._ids += 1
            return f"{prefix}-{self._ids:06d}"

    # -- rate limits ------------------------------------------------------------------------------
    def _admit(self, tokens: int) -> tuple[bool, dict[str, str]]:
        """Whether the budgets hold one request of ``tokens`` (taken if so), and the headers to send."""
        if not self._buckets:
            return True, {}
        with self._lock:
            now = time.monotonic()
            for b in self._buckets.values():
                b.refill(now)
            need = {"requests": 1.0, "tokens": float(tokens)}
            ok = all(b.level >= need[k] for k, b in self._buckets.items())
            if ok:
                for k, b in self._buckets.items():
                    b.level -= need[k]
            else:
                self.limited += 1
            headers: dict[str, str] = {}
            for k, b in self._buckets.items():
                headers.update(b.headers(k))
            if not ok and self.limit is not None and self.limit.retry_after:
                waits = [max(0.0, need[k] - b.level) / b.rate for k, b in self._buckets.items()]
                headers["Retry-After"] = f"{max(waits):.3f}"
            return ok, headers

    # -- scripting --------------------------------------------------------------------------------
    def script(self, marker: str, *actions: str) -> FaultServer:
        """Prompts containing ``marker`` take these actions, one per request, then answer ``ok``."""
        with self._lock:
            self._rules.append((marker, deque(actions)))
        return self

    def _next_action(self, prompt: str) -> str:
        with self._lock:
            for marker, actions in self._rules:
                if marker in prompt and actions:
                    return actions.popleft()
        return "ok"

    def count(self, marker: str = "") -> int:
        """Requests received (that reached the handler) whose prompt contains ``marker``."""
        with self._lock:
            return sum(marker in r.prompt for r in self.requests)

    # -- lifecycle --------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> FaultServer:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = _Server(("127.0.0.1", self.port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def die(self) -> None:
        """Stop accepting connections; connections already open are closed without an answer."""
        self.dead = True
        if self._httpd is not None:
            threading.Thread(target=self._shutdown, daemon=True).start()

    def _shutdown(self) -> None:
        assert self._httpd is not None
        self._httpd.shutdown()
        self._httpd.server_close()

    def stop(self) -> None:
        if self._httpd is not None and not self.dead:
            self.dead = True
            self._shutdown()

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # the api benchmark opens 16+ connections at once

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # injected resets and client timeouts break connections on purpose; no tracebacks


class _Handler(BaseHTTPRequestHandler):
    owner: FaultServer
    protocol_version = "HTTP/1.1"  # keep-alive, like real servers: "die" must also close open connections
    disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart (delayed ACKs)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        srv = self.owner
        if srv.dead:
            self._reset()
            return
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        parts = url.path.rstrip("/").split("/")
        if parts == ["", "v1", "batches"]:
            _advance_all(srv)
            with srv._lock:
                data = [_public(b) for b in sorted(srv.batches.values(), key=lambda b: -b["_n"])]
            self._send(*page(data, query, "batches"))
        elif parts == ["", "v1", "files"]:
            with srv._lock:
                data = [_public(f) for f in sorted(srv.files.values(), key=lambda f: -f["_n"])]
            self._send(*page(data, query, "files"))
        elif len(parts) == 4 and parts[2] == "batches":
            if parts[3] not in srv.batches:
                self._error(404, f"No batch found with id '{parts[3]}'.")
                return
            _advance_all(srv)
            with srv._lock:
                batch = _public(srv.batches[parts[3]])
            self._send(200, batch)
        elif len(parts) in (4, 5) and parts[2] == "files":
            f = srv.files.get(parts[3])
            if f is None:
                self._error(404, f"No such File object: {parts[3]}", "id")
            elif len(parts) == 5 and parts[4] == "content":
                self._send_raw(200, f["_bytes"], {"Content-Type": "application/octet-stream"})
            else:
                self._send(200, _public(f))
        else:
            self._error(404, f"Invalid URL (GET {url.path})")

    def do_POST(self) -> None:
        srv = self.owner
        if srv.dead:
            self._reset()
            return
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        path = urlsplit(self.path).path.rstrip("/")
        if path == "/v1/files":
            self._upload(raw)
            return
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            self._error(400, "We could not parse the JSON body of your request. The OpenAI API expects a JSON payload.")
            return
        if path == "/v1/batches":
            self._create_batch(body)
            return
        if path.startswith("/v1/batches/") and path.endswith("/cancel"):
            self._cancel_batch(path.split("/")[3])
            return
        if path not in ("/v1/chat/completions", "/v1/completions"):
            self._error(404, f"Invalid URL (POST {path})")
            return
        chat = path == "/v1/chat/completions"
        refused = refuse(body, "chat" if chat else "completions")
        if refused is not None:  # refused before it is counted against any budget
            with srv._lock:
                srv.requests.append(Request(self.path, self.headers.get("Authorization"), _text_of(body), body,
                                            time.monotonic(), "invalid"))
            self._send(400, refused)
            return
        prompt = prompt_of(body, chat)
        spend = int(body.get("max_completion_tokens") or body.get("max_tokens") or 16)
        admitted, limit_headers = srv._admit(prompt_tokens(prompt) + spend)
        if not admitted:
            with srv._lock:
                srv.requests.append(Request(self.path, self.headers.get("Authorization"), prompt, body,
                                            time.monotonic(), "limited"))
            if srv.latency:
                time.sleep(srv.latency)
            self._send(429, error("Rate limit reached for requests", "requests", None, "rate_limit_exceeded"),
                       limit_headers)
            return
        action = srv._next_action(prompt)
        with srv._lock:
            srv.requests.append(Request(self.path, self.headers.get("Authorization"), prompt, body,
                                        time.monotonic(), action))
        if srv.latency:
            time.sleep(srv.latency)
        if action == "die":
            srv.die()
            self._reset()
            return
        if action == "reset":
            self._reset()
            return
        if action == "timeout":
            time.sleep(srv.sleep_s)
            action = "ok"
        if action.startswith("429"):
            _, _, wait = action.partition(":")
            self._send(429, error("Rate limit reached for requests", "requests", None, "rate_limit_exceeded"),
                       {"Retry-After": wait} if wait else {})
            return
        if action == "echo401":  # like a provider that echoes the rejected key in its error message
            auth = self.headers.get("Authorization") or ""
            self._send(401, error(f"Incorrect API key provided: {auth.removeprefix('Bearer ')}", code="invalid_api_key"))
            return
        if action.isdigit():
            status = int(action)
            self._send(status, error(f"injected {action}", "server_error" if status >= 500 else "invalid_request_error"))
            return
        if action == "malformed":
            self._send_raw(200, b'{"id": "x", "choices": [{"text": "Yes", "logprobs": {"top_lo')
            return
        if action == "truncated":
            data = json.dumps(self._answer(prompt, body, chat, True)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if srv.reasoning:
            refusal = _refusal(body)
            if refusal is not None:
                self._send(*refusal, limit_headers)
                return
            self._send(200, self._reasoned(prompt, body, chat, with_lp=False), limit_headers)
            return
        with_lp = srv.logprobs and action != "nologprobs"
        if int(body.get("max_tokens") or 1) > 1:  # a rationale, then the answer line
            self._send(200, self._reasoned(prompt, body, chat, with_lp), limit_headers)
            return
        answer = self._answer(prompt, body, chat, with_lp)
        if action == "badlogprobs":  # valid JSON, but the logprobs block lacks its fields
            answer["choices"][0]["logprobs"] = {"content": [{"top_logprobs": [{"t": 1}]}]} if chat else \
                {"top_logprobs": [["Yes", -0.1]]}
        self._send(200, answer, limit_headers)

    def _answer(self, prompt: str, body: dict[str, Any], chat: bool, with_lp: bool) -> dict[str, Any]:
        return answer(self.owner, prompt, body, chat, with_lp)

    # -- files and batches ------------------------------------------------------------------------
    def _error(self, status: int, message: str, param: str | None = None, code: str | None = None) -> None:
        self._send(status, error(message, param=param, code=code))

    def _upload(self, raw: bytes) -> None:
        srv = self.owner
        fields = _multipart(self.headers.get("Content-Type") or "", raw)
        if "file" not in fields or "purpose" not in fields:
            self._error(400, "Missing required parameter: 'file' and 'purpose' (multipart/form-data)")
            return
        name, data = fields["file"]
        purpose = fields["purpose"][1].decode()
        if purpose == "batch" and not (name or "").endswith(".jsonl"):
            self._error(400, "Invalid file format for Batch API. Must be .jsonl")
            return
        if len(data) > srv.max_file_bytes:
            self._error(400, f"File is too large: {len(data)} bytes; the limit is {srv.max_file_bytes} bytes")
            return
        fid = srv._new_id("file")
        with srv._lock:
            srv.files[fid] = {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                              "filename": name, "purpose": purpose, "status": "processed", "_bytes": data,
                              "_n": srv._ids}
            out = _public(srv.files[fid])
        self._send(200, out)

    def _create_batch(self, body: dict[str, Any]) -> None:
        srv = self.owner
        endpoint, window, fid = body.get("endpoint"), body.get("completion_window"), body.get("input_file_id")
        if endpoint not in BATCH_ENDPOINTS:
            self._error(400, f"Invalid value for 'endpoint': {endpoint!r}", "endpoint")
            return
        if window != "24h":
            self._error(400, "Invalid value for 'completion_window': only '24h' is supported", "completion_window")
            return
        f = srv.files.get(str(fid))
        if f is None or f["purpose"] != "batch":
            self._error(400, f"Invalid 'input_file_id': {fid!r} is not a file of purpose batch", "input_file_id")
            return
        bid = srv._new_id("batch")
        now = int(time.time())
        with srv._lock:
            expire = srv._expire > 0
            srv._expire -= int(expire)
            srv.batches[bid] = {
                "id": bid, "object": "batch", "endpoint": endpoint, "errors": None, "input_file_id": fid,
                "completion_window": "24h", "status": "validating", "output_file_id": None, "error_file_id": None,
                "created_at": now, "in_progress_at": None, "expires_at": now + 86400, "finalizing_at": None,
                "completed_at": None, "failed_at": None, "expired_at": None, "cancelling_at": None,
                "cancelled_at": None, "request_counts": {"total": 0, "completed": 0, "failed": 0},
                "metadata": body.get("metadata"),
                "_n": len(srv.batches), "_t0": time.monotonic(), "_expire": expire, "_lines": None, "_cancel": False,
                "_cancel_t": 0.0, "_tokens": None, "_model": None,
            }
            out = _public(srv.batches[bid])
        self._send(200, out)

    def _cancel_batch(self, bid: str) -> None:
        srv = self.owner
        if bid not in srv.batches:
            self._error(404, f"No batch found with id '{bid}'.")
            return
        _advance_all(srv)
        with srv._lock:
            b = srv.batches[bid]
            if b["status"] in ("validating", "in_progress", "finalizing"):
                b["_cancel"], b["_cancel_t"] = True, time.monotonic()
                b["status"], b["cancelling_at"] = "cancelling", int(time.time())
            out = _public(b)
        self._send(200, out)

    def _reasoned(self, prompt: str, body: dict[str, Any], chat: bool, with_lp: bool) -> dict[str, Any]:
        """A completion with a rationale and an answer line (see the module docstring)."""
        srv = self.owner
        n = int(body.get("n") or 1)
        budget = int(body.get("max_completion_tokens") or body.get("max_tokens") or 16)
        hidden = REASONING_TOKENS.get(str(body.get("reasoning_effort") or "medium"), 48) if srv.reasoning else 0
        greedy = float(body.get("temperature", 1.0)) == 0.0
        seed = int(body.get("seed") or 0)
        choices, spent, thought = [], 0, 0
        for i in range(n):
            label: str | None = max(("Yes", "No"), key=top_logprobs(prompt).__getitem__) if greedy else \
                sampled_label(prompt, seed + i)
            follow_up = chat and len(body["messages"]) > 1
            if with_lp and not srv.answer_line and not follow_up:
                label = None
            text = (f"Answer: {label}" if follow_up else rationale(label) + (f"\nAnswer: {label}" if label else ""))
            shown = ""
            if srv.think:  # the thinking holds the opposite answer line, which must never be read
                other = "No" if label == "Yes" else "Yes"
                shown = f"Let me weigh it. Answer: {other} at first sight.\nAnswer: {other}"
                if srv.think == "block":
                    text = f"<think>{shown}</think>\n{text}"
            toks = tokens_of(text)
            used = hidden + len(toks)
            finish = "stop"
            if used > budget:  # out of room: reasoning models then return no content at all
                toks, text, finish, used = [], "", "length", budget
            spent += used
            thought += min(hidden, budget)
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if srv.think == "field" and text:
                message["reasoning_content"] = shown
            choice: dict[str, Any] = {"index": i, "finish_reason": finish, "logprobs": None}
            if chat:
                choice["message"] = message
            else:
                choice["text"] = text
            if with_lp and toks:
                choice["logprobs"] = {"content": [_entry(tok, prompt, toks[j - 2:j] == ["Answer", ":"])
                                                  for j, tok in enumerate(toks)]}
            choices.append(choice)
        n_prompt = max(1, len(prompt) // 4)
        usage: dict[str, Any] = {"prompt_tokens": n_prompt, "completion_tokens": spent, "total_tokens": n_prompt + spent,
                                 "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0}}
        if srv.reasoning:
            usage["completion_tokens_details"] = {"reasoning_tokens": thought, "audio_tokens": 0,
                                                  "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
        return {"id": "chatcmpl-fault", "object": "chat.completion" if chat else "text_completion", "created": 0,
                "model": body.get("model", "fault"), "choices": choices, "usage": usage}

    def _send(self, code: int, obj: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self._send_raw(code, json.dumps(obj).encode(), headers)

    def _send_raw(self, code: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True  # the client gave up (its timeout) before the answer came

    def _reset(self) -> None:
        """Close the connection with a TCP RST (SO_LINGER 0) and no response."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass


def _text_of(body: object) -> str:
    """The prompt text of a request body that may be malformed (what :meth:`FaultServer.count` looks in)."""
    if not isinstance(body, dict):
        return ""
    messages = body.get("messages")
    if isinstance(messages, list):
        return "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
    return str(body.get("prompt", ""))


def prompt_of(body: dict[str, Any], chat: bool) -> str:
    """A request's prompt: a chat's is its messages' texts, one per line (one message: its text)."""
    return "\n".join(m["content"] for m in body["messages"]) if chat else str(body.get("prompt", ""))


def answer(srv: FaultServer, prompt: str, body: dict[str, Any], chat: bool, with_lp: bool) -> dict[str, Any]:
    """The completion the server answers ``prompt`` with (synchronously and in a batch alike)."""
    n = int(body.get("n") or 1)
    tops = top_logprobs(prompt, labels=srv.labels)
    choices = []
    for i in range(n):
        if with_lp:
            text = max(tops, key=tops.get)  # type: ignore[arg-type]
        else:
            with srv._lock:
                k = srv._samples.get(prompt, 0)
                srv._samples[prompt] = k + 1
            text = srv.labels[1] if k % 4 == 3 else srv.labels[0]
        choice: dict[str, Any] = {"index": i, "finish_reason": "length", "logprobs": None}
        if chat:
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice["text"] = text
        if with_lp:
            want = body.get("top_logprobs") if chat else body.get("logprobs")
            items = sorted(tops.items(), key=lambda t: -t[1])[: int(want or 0) or len(tops)]
            if chat or srv.content_format:
                choice["logprobs"] = {"content": [{
                    "token": text, "logprob": tops[text], "bytes": list(text.encode()),
                    "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in items],
                }]}
            else:
                choice["logprobs"] = {"tokens": [text], "token_logprobs": [tops[text]], "text_offset": [0],
                                      "top_logprobs": [dict(items)]}
        choices.append(choice)
    n_prompt = max(1, len(prompt) // 4)
    return {"id": "cmpl-fault", "object": "chat.completion" if chat else "text_completion", "created": 0,
            "model": body.get("model", "fault"), "choices": choices,
            "usage": {"prompt_tokens": n_prompt, "completion_tokens": n, "total_tokens": n_prompt + n}}


def _public(obj: dict[str, Any]) -> dict[str, Any]:
    """A file or batch object as the API shows it (without the server's own bookkeeping)."""
    return {k: v for k, v in obj.items() if not k.startswith("_")}


def _multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The fields of a multipart/form-data body: name -> (file name, bytes)."""
    if not content_type.startswith("multipart/form-data"):
        return {}
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
    out: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name:
            payload = part.get_payload(decode=True)
            out[str(name)] = (part.get_filename(), payload if isinstance(payload, bytes) else b"")
    return out


def _validate(srv: FaultServer, batch: dict[str, Any], data: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The requests of a batch's input file, and the errors the Batch API would fail the batch with."""
    lines, errors = [], []
    seen: set[str] = set()
    model = None
    text = data.decode("utf-8", errors="replace").splitlines()
    for n, line in enumerate(text, 1):
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise ValueError
        except ValueError:
            errors.append({"code": "invalid_json_line", "line": n, "message": "This line is not parseable as valid JSON.",
                           "param": None})
            continue
        missing = [k for k in ("custom_id", "method", "url", "body") if k not in req]
        if missing:
            errors.append({"code": "missing_required_parameter", "line": n, "param": missing[0],
                           "message": f"Missing required parameter: '{missing[0]}'."})
            continue
        if req["method"] != "POST":
            errors.append({"code": "invalid_method", "line": n, "param": "method", "message": "Only POST is supported."})
        if req["url"] != batch["endpoint"]:
            errors.append({"code": "url_mismatch", "line": n, "param": "url",
                           "message": f"The url {req['url']!r} does not match the batch's endpoint {batch['endpoint']!r}."})
        if req["custom_id"] in seen:
            errors.append({"code": "duplicate_custom_id", "line": n, "param": "custom_id",
                           "message": f"The custom_id {req['custom_id']!r} is not unique in this batch."})
        seen.add(req["custom_id"])
        body_model = req["body"].get("model") if isinstance(req["body"], dict) else None
        if model is not None and body_model != model:
            errors.append({"code": "model_mismatch", "line": n, "param": "body.model",
                           "message": "All requests of a batch must use the same model."})
        model = model if model is not None else body_model
        lines.append(req)
    if not lines and not errors:
        errors.append({"code": "empty_file", "line": None, "param": None, "message": "The input file is empty."})
    if len(lines) > srv.max_batch_requests:
        errors.append({"code": "too_many_tasks", "line": None, "param": None,
                       "message": f"The batch has {len(lines)} requests; the limit is {srv.max_batch_requests}."})
    return lines, errors


def _advance(srv: FaultServer, bid: str) -> None:
    """Move a batch on to where its age puts it: validating, failed, in progress, finalizing, then completed
    (or expired, or cancelled), writing its output and error files when it ends."""
    with srv._lock:
        b = srv.batches[bid]
        if b["status"] in ("failed", "completed", "expired", "cancelled"):
            return
        age = time.monotonic() - b["_t0"]
        now = int(time.time())
        if age < srv.batch_validate_s and not b["_cancel"]:
            return
        if b["_lines"] is None:
            lines, errors = _validate(srv, b, srv.files[b["input_file_id"]]["_bytes"])
            if not errors:
                errors = _over_enqueued(srv, b, lines)
            if errors:
                b.update(status="failed", failed_at=now, errors={"object": "list", "data": errors})
                return
            b["_lines"] = lines
            b.update(status="in_progress", in_progress_at=now)
            b["request_counts"] = {"total": len(lines), "completed": 0, "failed": 0}
        total = len(b["_lines"])
        running = min(1.0, (age - srv.batch_validate_s) / srv.batch_run_s) if srv.batch_run_s else 1.0
        if b["_cancel"]:
            _finish(srv, b, "cancelled", int(total * running), "batch_cancelled")
        elif b["_expire"] and running >= srv.expire_share:
            _finish(srv, b, "expired", int(total * srv.expire_share), "batch_expired")
        elif running < 1.0:
            b["request_counts"]["completed"] = int(total * running)
        elif age < srv.batch_validate_s + srv.batch_run_s + srv.batch_finalize_s:
            if b["status"] != "finalizing":
                b.update(status="finalizing", finalizing_at=now)
            b["request_counts"]["completed"] = total
        else:
            _finish(srv, b, "completed", total, "")


def _advance_all(srv: FaultServer) -> None:
    """Advance every batch, oldest first: a batch's validation then sees the batches validated before it."""
    with srv._lock:
        ids = [b["id"] for b in sorted(srv.batches.values(), key=lambda b: b["_n"])]
    for bid in ids:
        _advance(srv, bid)


def _enqueue_limit(srv: FaultServer, model: str) -> int | None:
    if isinstance(srv.enqueued_tokens, dict):
        return srv.enqueued_tokens.get(model)
    return srv.enqueued_tokens


def _holds_tokens(srv: FaultServer, b: dict[str, Any], at: float) -> bool:
    """Whether batch ``b`` had its prompt tokens enqueued at (monotonic) time ``at``: from its validation until
    it ended (completed, expired or cancelled), whenever it was last looked at."""
    if b["_tokens"] is None:
        return False
    start = b["_t0"] + srv.batch_validate_s
    if b["_cancel"]:
        end = b["_cancel_t"]
    elif b["_expire"]:
        end = start + srv.batch_run_s * srv.expire_share
    else:
        end = start + srv.batch_run_s + srv.batch_finalize_s
    return start <= at < end


def _over_enqueued(srv: FaultServer, b: dict[str, Any], lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The error that fails batch ``b`` at validation when its prompt tokens, with those its model has enqueued
    in other batches at that moment, pass the model's limit (``enqueued_tokens``); else none (the server's
    lock held). The tokens are counted as the server counts every prompt (``prompt_tokens``)."""
    model = str(lines[0]["body"].get("model")) if isinstance(lines[0]["body"], dict) else ""
    tokens = sum(prompt_tokens(_text_of(r["body"])) for r in lines)
    limit = _enqueue_limit(srv, model)
    at = b["_t0"] + srv.batch_validate_s
    if limit is not None:
        held = sum(o["_tokens"] for o in srv.batches.values()
                   if o is not b and o["_model"] == model and _holds_tokens(srv, o, at))
        if held + tokens > limit:
            return [enqueued_limit_error(model, limit)]
    b["_tokens"], b["_model"] = tokens, model
    return []


def _finish(srv: FaultServer, b: dict[str, Any], status: str, done: int, missing_code: str) -> None:
    """End a batch (the server's lock held): the first ``done`` requests answered (into the output file, or
    the error file for a prompt holding ``batch_fail_marker``), the rest errors of ``missing_code``."""
    out, err = [], []
    for i, req in enumerate(b["_lines"]):
        rid = f"batch_req_{b['_n']}_{i}"
        if i >= done:
            message = ("This request could not be executed before the completion window expired."
                       if missing_code == "batch_expired" else "This request was not executed: the batch was cancelled.")
            err.append({"id": rid, "custom_id": req["custom_id"], "response": None,
                        "error": {"code": missing_code, "message": message}})
            continue
        body = req["body"]
        chat = req["url"].endswith("/chat/completions")
        refused = _refused_in_batch(srv, body, chat)
        if refused is not None:  # the answer this body gets alone, as a line of the error file
            err.append({"id": rid, "custom_id": req["custom_id"], "error": None,
                        "response": {"status_code": refused[0], "request_id": f"req_{rid}", "body": refused[1]}})
            continue
        prompt = prompt_of(body, chat)
        if srv.batch_fail_marker and srv.batch_fail_marker in prompt:
            err.append({"id": rid, "custom_id": req["custom_id"], "error": None,
                        "response": {"status_code": 500, "request_id": f"req_{rid}",
                                     "body": error("injected 500", "server_error")}})
            continue
        srv._lock.release()  # answer() takes the lock for sampled answers
        try:
            body_out = answer(srv, prompt, body, chat, srv.logprobs)
        finally:
            srv._lock.acquire()
        out.append({"id": rid, "custom_id": req["custom_id"], "error": None,
                    "response": {"status_code": 200, "request_id": f"req_{rid}", "body": body_out}})
    rng = random.Random(b["_n"])
    rng.shuffle(out)  # the order of output lines is not the input's (OpenAI promises none)
    rng.shuffle(err)
    now = int(time.time())
    for kind, rows in (("output_file_id", out), ("error_file_id", err)):
        if rows:
            srv._ids += 1
            fid = f"file-{srv._ids:06d}"
            data = "".join(json.dumps(r) + "\n" for r in rows).encode()
            srv.files[fid] = {"id": fid, "object": "file", "bytes": len(data), "created_at": now,
                              "filename": f"{b['id']}_{kind.split('_')[0]}.jsonl", "purpose": "batch_output",
                              "status": "processed", "_bytes": data, "_n": srv._ids}
            b[kind] = fid
    b["request_counts"] = {"total": len(b["_lines"]), "completed": len(out), "failed": len(err)}
    b["status"] = status
    b[f"{status}_at"] = now


def _refused_in_batch(srv: FaultServer, body: object, chat: bool) -> tuple[int, dict[str, Any]] | None:
    """The status and error body a batch line's request gets, as it would alone: an invalid body (400), or a
    parameter a reasoning model refuses; None when it is answered."""
    refused = refuse(body, "chat" if chat else "completions")
    if refused is not None:
        return 400, refused
    return _refusal(body) if srv.reasoning and isinstance(body, dict) else None


def _entry(token: str, prompt: str, answer: bool) -> dict[str, Any]:
    """A token's logprobs entry: at the answer's position (after ``Answer:``) the prompt's top tokens, else
    the token alone at probability ~0.9."""
    tops = top_logprobs(prompt, " ") if answer else {token: math.log(0.9)}
    return {"token": token, "logprob": tops.get(token, math.log(0.01)), "bytes": list(token.encode()),
            "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(t.encode())}
                             for t, lp in sorted(tops.items(), key=lambda t: -t[1])]}


def _refusal(body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """OpenAI's answer (status, body) to the first parameter of ``body`` a reasoning model refuses, or None."""
    for param, (status, code, message) in REFUSALS.items():
        if param not in body:
            continue
        value = body[param]
        if param == "temperature" and float(value) == 1.0:
            continue
        shown = int(value) if isinstance(value, float) and value.is_integer() else value
        named = param if code is not None else None
        return status, {"error": {"message": message.format(value=shown), "type": "invalid_request_error",
                                  "param": named, "code": code}}
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=8011)
    ap.add_argument("--latency", type=float, default=0.0, help="seconds added to every request")
    ap.add_argument("--no-logprobs", action="store_true", help="answer without logprobs")
    ap.add_argument("--rpm", type=float, default=None, help="requests per minute the server allows")
    ap.add_argument("--tpm", type=float, default=None, help="tokens per minute the server allows")
    ap.add_argument("--time-scale", type=float, default=1.0, help="speed of the server's clock (10: a minute is 6 s)")
    ap.add_argument("--enqueued-tokens", type=int, default=None,
                    help="prompt tokens a model may have enqueued in batches at once (default: no limit)")
    args = ap.parse_args()
    limit = RateLimit(args.rpm, args.tpm, args.time_scale) if (args.rpm or args.tpm) else None
    srv = FaultServer(latency=args.latency, logprobs=not args.no_logprobs, port=args.port, limit=limit,
                      enqueued_tokens=args.enqueued_tokens).start()
    print(f"serving on {srv.base_url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()


if __name__ == "__main__":
    main()
