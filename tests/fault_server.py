"""A small OpenAI-compatible HTTP server on 127.0.0.1 that fails on purpose (for tests and benchmarks).

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
sampling fallback estimates p(yes) = 0.75). Every request is recorded with its Authorization header.

Run it alone: ``python tests/fault_server.py --port 8011 --latency 0.2``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def expected_goodness(prompt: str) -> float:
    """p(yes) / (p(yes) + p(no)) the server answers for ``prompt``: a hash of it mapped into [0.05, 0.95]."""
    h = int.from_bytes(hashlib.sha256(prompt.encode("utf-8")).digest()[:4], "big")
    return 0.05 + 0.9 * (h / 2**32)


def top_logprobs(prompt: str) -> dict[str, float]:
    """The top tokens answered for ``prompt``: Yes/No share 0.8 of the mass in proportion p : 1 - p."""
    p = expected_goodness(prompt)
    return {"Yes": math.log(0.8 * p), "No": math.log(0.8 * (1 - p)), "The": math.log(0.1), "I": math.log(0.05)}


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
    port: int = 0
    requests: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._rules: list[tuple[str, deque[str]]] = []
        self._samples: dict[str, int] = {}
        self._lock = threading.Lock()
        self.dead = False
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

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

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        srv = self.owner
        if srv.dead:
            self._reset()
            return
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            self._send(400, {"error": {"message": "bad json"}})
            return
        chat = self.path.rstrip("/").endswith("/chat/completions")
        if not chat and not self.path.rstrip("/").endswith("/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        prompt = body["messages"][-1]["content"] if chat else body.get("prompt", "")
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
            self._send(429, {"error": {"message": "rate limited", "type": "rate_limit"}},
                       {"Retry-After": wait} if wait else {})
            return
        if action == "echo401":  # like a provider that echoes the rejected key in its error message
            auth = self.headers.get("Authorization") or ""
            self._send(401, {"error": {"message": f"Incorrect API key provided: {auth.removeprefix('Bearer ')}"}})
            return
        if action.isdigit():
            self._send(int(action), {"error": {"message": f"injected {action}"}})
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
        with_lp = srv.logprobs and action != "nologprobs"
        answer = self._answer(prompt, body, chat, with_lp)
        if action == "badlogprobs":  # valid JSON, but the logprobs block lacks its fields
            answer["choices"][0]["logprobs"] = {"content": [{"top_logprobs": [{"t": 1}]}]} if chat else \
                {"top_logprobs": [["Yes", -0.1]]}
        self._send(200, answer)

    def _answer(self, prompt: str, body: dict[str, Any], chat: bool, with_lp: bool) -> dict[str, Any]:
        srv = self.owner
        n = int(body.get("n") or 1)
        tops = top_logprobs(prompt)
        choices = []
        for i in range(n):
            if with_lp:
                text = max(tops, key=tops.get)  # type: ignore[arg-type]
            else:
                with srv._lock:
                    k = srv._samples.get(prompt, 0)
                    srv._samples[prompt] = k + 1
                text = "No" if k % 4 == 3 else "Yes"
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=8011)
    ap.add_argument("--latency", type=float, default=0.0, help="seconds added to every request")
    ap.add_argument("--no-logprobs", action="store_true", help="answer without logprobs")
    args = ap.parse_args()
    srv = FaultServer(latency=args.latency, logprobs=not args.no_logprobs, port=args.port).start()
    print(f"serving on {srv.base_url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()


if __name__ == "__main__":
    main()
