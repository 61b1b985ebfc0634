"""Pages served on http://127.0.0.1, for a browser on this machine: ``judge view --serve`` (one written
file, read-only) and ``judge label`` (a page and the few routes it posts labels to).

Both use one small server: a table of routes, each (method, path) answered by a function of the request
body, listening on the loopback interface only. Anything not in the table gets 404 (405 for a known path
asked with another method). It serves until interrupted.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

#: The only interface served: the pages are for this machine's browser.
HOST = "127.0.0.1"
#: The largest request body read (a label is a few hundred bytes).
MAX_BODY = 1 << 20


@dataclass(frozen=True)
class Request:
    """What a route reads: the query's parameters (each name's last value) and the body (empty for GET)."""

    query: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class Response:
    status: int
    content_type: str
    data: bytes


#: A route: the request in, the answer out.
Route = Callable[[Request], Response]


class _RouteHandler(BaseHTTPRequestHandler):
    def __init__(self, routes: Mapping[tuple[str, str], Route], missing: str, *args: object, **kwargs: object) -> None:
        self.routes = routes
        self.missing = missing
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def _answer(self, method: str, body: bool = True) -> None:
        url = urlsplit(self.path)
        path = unquote(url.path)
        route = self.routes.get((method, path))
        if route is None:
            known = any(p == path for _, p in self.routes)
            self.send_error(405 if known else 404, None if known else self.missing)
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.send_error(413, "request too large")
            return
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        answer = route(Request(query, self.rfile.read(length) if length else b""))
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(answer.data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if body:
            self.wfile.write(answer.data)

    def do_GET(self) -> None:
        self._answer("GET")

    def do_HEAD(self) -> None:
        self._answer("GET", body=False)

    def do_POST(self) -> None:
        self._answer("POST")

    def log_message(self, format: str, *args: object) -> None:  # quiet: the address is all a user needs
        return


def make_app_server(routes: Mapping[tuple[str, str], Route], port: int = 0,
                    missing: str = "not served here") -> ThreadingHTTPServer:
    """A server of ``routes`` ((method, path) -> route) on 127.0.0.1:``port`` (0: a free port; read it from
    ``server_address``); ``missing`` is the 404's message."""
    return ThreadingHTTPServer((HOST, port), partial(_RouteHandler, dict(routes), missing))


def _file_route(page: Path) -> Route:
    def send(_: Request) -> Response:
        return Response(200, "text/html; charset=utf-8", page.read_bytes())
    return send


def make_server(page: str | Path, port: int = 0) -> ThreadingHTTPServer:
    """A server of the file ``page`` (at ``/`` and at its own name) on 127.0.0.1:``port``."""
    path = Path(page).resolve()
    route = _file_route(path)
    return make_app_server({("GET", "/"): route, ("GET", f"/{path.name}"): route}, port,
                           missing="only the view is served here")


def serve_forever(server: ThreadingHTTPServer, what: str, announce: Callable[[str], None] = print) -> None:
    """Announce ``server``'s address, then serve until interrupted."""
    try:
        announce(f"serving {what} at http://{HOST}:{server.server_address[1]}/ (Ctrl-C stops)")
        sys.stdout.flush()
        server.serve_forever()
    finally:
        server.server_close()


def serve(page: str | Path, port: int = 0, announce: Callable[[str], None] = print) -> None:
    """Serve ``page`` until interrupted, announcing its address first."""
    serve_forever(make_server(page, port), str(page), announce)
