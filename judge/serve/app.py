"""The ASGI application: routes, body limits, bearer-token check, metrics and error statuses.

Plain Starlette (the toolkit FastAPI is built on): request bodies are validated by the JSONL
loader's own checks, not by a schema library, so that a bad field gets the message a bad file line
gets; FastAPI's models and OpenAPI generation would add pydantic without replacing any of that.

Statuses: 400 a body that is not JSON (or not UTF-8); 422 JSON in the wrong shape (the message names
record and field); 413 a body over ``--max-body-bytes`` (refused from its Content-Length before it
is read, or as soon as a chunked body passes the limit) or a batch over ``--max-batch`` items;
401 a missing or wrong token; 503 the backend failed (with its reason). An item that fails scoring
is not an HTTP error: its row comes back (200) with ``error`` set, as ``judge score`` writes it.
"""

from __future__ import annotations

import hmac
import json
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..accounting.counters import report_counters
from ..core.errors import BackendError, InputError, JudgeError
from ..core.io import dumps
from ..datasets._common import parse_json
from .batcher import Batcher, Rows
from .metrics import CONTENT_TYPE, Metrics
from .service import JudgeService

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: Paths counted under their own name in the metrics (anything else is "other").
ENDPOINTS = ("/v1/score", "/v1/score/batch", "/v1/compare", "/v1/info", "/healthz", "/metrics")
#: Keys a batch body may have.
BATCH_KEYS = ("items",)
#: Most bytes of a refused body read and dropped so that its client can read the 413 (see discard_body).
DISCARD_LIMIT = 64 << 20


@dataclass(frozen=True)
class Settings:
    """Limits and auth of one service."""

    max_batch: int = 64
    max_body_bytes: int = 1 << 20
    #: The bearer token every endpoint but /healthz requires (None: no auth).
    token: str | None = None


class HTTPError(Exception):
    """A request refused with a status and a message (and the field, when one is to blame)."""

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.field = field


def json_response(status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    return Response(dumps(payload), status_code=status, media_type="application/json", headers=headers)


def rows_response(rows: Rows, many: bool) -> Response:
    """The rows of a request: one row as its JSON object, or (``many``) every row as ``{"rows": [...]}``."""
    text = '{"rows": [' + ", ".join(row.to_json() for row in rows) + "]}" if many else rows[0].to_json()
    return Response(text, media_type="application/json")


def error_response(status: int, message: str, *, field: str | None = None, record: object = None,
                   headers: dict[str, str] | None = None) -> Response:
    payload: dict[str, Any] = {"error": message, "status": status}
    if field is not None:
        payload["field"] = field
    if record is not None:
        payload["record"] = record
    return json_response(status, payload, headers)


def create_app(service: JudgeService, settings: Settings, metrics: Metrics | None = None) -> Starlette:
    """The app around a built judge; its lifespan starts the worker thread and, at shutdown, lets every
    queued request finish before closing the backend and the cache."""
    metrics = metrics or Metrics()
    batcher = Batcher(service.score, merge=service.batching, max_items=settings.max_batch, on_batch=metrics.batch)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        batcher.start()
        try:
            yield
        finally:
            batcher.close()
            service.close()
            report_counters(service.counters())
            print("judge serve: stopped (queue drained, backend and cache closed)", file=sys.stderr, flush=True)

    async def score_items(items: list) -> Rows:
        rows = await batcher.submit(items)
        metrics.scored(rows)
        return rows

    async def score_one(request: Request) -> Response:
        record = parse_body(await read_body(request, settings.max_body_bytes))
        return rows_response(await score_items(service.parse([("item", record)])), many=False)

    async def score_batch(request: Request) -> Response:
        body = parse_body(await read_body(request, settings.max_body_bytes))
        return rows_response(await score_items(service.parse(batch_records(body, settings.max_batch))), many=True)

    async def compare(request: Request) -> Response:
        body = parse_body(await read_body(request, settings.max_body_bytes))
        rows = await batcher.submit(service.parse_pairs(body, settings.max_batch), service.compare)
        metrics.scored(rows)
        return rows_response(rows, many=isinstance(body, dict) and "pairs" in body)

    async def healthz(request: Request) -> Response:
        return json_response(200, {"status": "ok"})

    async def info(request: Request) -> Response:
        payload = service.info()
        payload["limits"] = {"max_batch": settings.max_batch, "max_body_bytes": settings.max_body_bytes}
        payload["auth"] = settings.token is not None
        return Response(json.dumps(payload, default=str), media_type="application/json")

    async def metrics_text(request: Request) -> Response:
        return Response(metrics.render(service.counters(), batcher.pending), media_type=CONTENT_TYPE)

    routes = [
        Route("/v1/score", score_one, methods=["POST"]),
        Route("/v1/score/batch", score_batch, methods=["POST"]),
        Route("/v1/compare", compare, methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/v1/info", info, methods=["GET"]),
        Route("/metrics", metrics_text, methods=["GET"]),
    ]
    handlers = dict.fromkeys((HTTPError, InputError, BackendError, JudgeError, RuntimeError), _on_error)
    return Starlette(routes=routes, lifespan=lifespan, exception_handlers=handlers,
                     middleware=[Middleware(Guard, metrics=metrics, token=settings.token)])


# -- request bodies -------------------------------------------------------------------------------
async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused (413) as soon as it is known to pass ``limit``: from Content-Length before
    reading anything, else while streaming (chunked bodies). A refused body is never buffered."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise HTTPError(400, f"invalid Content-Length header {declared!r}") from None
        if size > limit:
            await discard_body(request, size)
            raise HTTPError(413, too_large(f"{size} bytes", limit))
    chunks: list[bytes] = []
    total = 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limit:
            await discard_body(request, None)
            raise HTTPError(413, too_large(f"more than {limit} bytes", limit))
        chunks.append(chunk)
    return b"".join(chunks)


async def discard_body(request: Request, size: int | None) -> None:
    """Read and drop what a refused client is still sending, so that it can read the 413 (a server that
    closes with unread data resets the connection, and a client still writing never sees the answer).

    Clients that asked first (``Expect: 100-continue``, as curl does) have sent nothing and are told
    without reading; bodies over DISCARD_LIMIT are not waited for (their client sees the reset).
    """
    if request.headers.get("expect", "").lower() == "100-continue":
        return
    if size is not None and size > DISCARD_LIMIT:
        return
    seen = 0
    async for chunk in request.stream():
        seen += len(chunk)
        if seen > DISCARD_LIMIT:
            return


def too_large(what: str, limit: int) -> str:
    return f"request body of {what} is over the limit of {limit} bytes (--max-body-bytes)"


def parse_body(body: bytes) -> Any:
    """The JSON value of a body; 400 when it is not UTF-8 JSON (the loader's message)."""
    if not body.strip():
        raise HTTPError(400, "empty request body: expected a JSON object")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HTTPError(400, f"request body is not UTF-8 (byte {exc.start})") from None
    try:
        return parse_json(text, "request")
    except InputError as exc:
        raise HTTPError(400, str(exc)) from None


def batch_records(body: Any, max_batch: int) -> list[tuple[str, Any]]:
    """``{"items": [...]}`` -> labelled records (``items[0]``, ...); 422 naming the field when it is not."""
    if not isinstance(body, dict):
        raise InputError(f'expected an object {{"items": [...]}}, got {type(body).__name__}', file="request",
                         field="items")
    unknown = [k for k in body if k not in BATCH_KEYS]
    if unknown:
        raise InputError(f"unknown key; allowed keys: {', '.join(BATCH_KEYS)}", file="request", field=unknown[0])
    items = body.get("items")
    if not isinstance(items, list):
        what = "missing required field" if items is None else f"expected an array of items, got {type(items).__name__}"
        raise InputError(what, file="request", field="items")
    if not items:
        raise InputError("no items (send at least one)", file="request", field="items")
    if len(items) > max_batch:
        raise HTTPError(413, f"{len(items)} items is over the limit of {max_batch} per request (--max-batch)",
                        field="items")
    return [(f"items[{i}]", record) for i, record in enumerate(items)]


# -- errors ---------------------------------------------------------------------------------------
async def _on_error(request: Request, exc: Exception) -> Response:
    """The status and message of an error a request met (the handler of every class in :func:`create_app`)."""
    if isinstance(exc, HTTPError):
        return error_response(exc.status, str(exc), field=exc.field)
    if isinstance(exc, InputError):
        return error_response(422, str(exc), field=exc.field, record=exc.record)
    if isinstance(exc, BackendError):
        return error_response(503, f"backend failure: {exc}", headers={"Retry-After": "5"})
    if isinstance(exc, JudgeError):  # template errors and the like: this judge cannot render the items
        return error_response(422, str(exc))
    # The worker raised something that is not bad input (or the service is stopping): not the
    # client's fault and possibly transient.
    return error_response(503, f"scoring failed: {type(exc).__name__}: {exc}")


# -- auth and metrics -----------------------------------------------------------------------------
class Guard:
    """Pure ASGI middleware: the bearer-token check (every path but /healthz) and per-request metrics.

    The token is compared in constant time and never written anywhere (uvicorn's access log is off).
    """

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], metrics: Metrics,
                 token: str | None) -> None:
        self.app = app
        self.metrics = metrics
        self.token = token.encode() if token is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        endpoint = path if path in ENDPOINTS else "other"
        start = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            if self.token is not None and path != "/healthz" and not self.authorized(scope):
                refusal = error_response(401, "missing or wrong bearer token (send 'Authorization: Bearer <token>')",
                                         headers={"WWW-Authenticate": "Bearer"})
                await refusal(scope, receive, send_status)
            else:
                await self.app(scope, receive, send_status)
        finally:
            self.metrics.request(endpoint, status, time.perf_counter() - start)

    def authorized(self, scope: Scope) -> bool:
        assert self.token is not None
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                scheme, _, given = bytes(value).partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self.token)
        return False
