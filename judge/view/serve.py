"""``judge view --serve``: the written page on http://127.0.0.1, for a browser on this machine.

The page reads nothing but itself, so any static server would do; this one answers GET and HEAD of
``/`` (and the file's own name) with the file, everything else with 404, and listens on the loopback
interface only. It serves until interrupted.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

#: The only interface served: the page is for this machine's browser.
HOST = "127.0.0.1"


class _PageHandler(BaseHTTPRequestHandler):
    def __init__(self, page: Path, *args: object, **kwargs: object) -> None:
        self.page = page
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def _send(self, body: bool) -> None:
        path = unquote(urlsplit(self.path).path)
        if path not in ("/", f"/{self.page.name}"):
            self.send_error(404, "only the view is served here")
            return
        data = self.page.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if body:
            self.wfile.write(data)

    def do_GET(self) -> None:
        self._send(True)

    def do_HEAD(self) -> None:
        self._send(False)

    def log_message(self, format: str, *args: object) -> None:  # quiet: the address is all a user needs
        return


def make_server(page: str | Path, port: int = 0) -> ThreadingHTTPServer:
    """A server of ``page`` on 127.0.0.1:``port`` (0: a free port; read it from ``server_address``)."""
    return ThreadingHTTPServer((HOST, port), partial(_PageHandler, Path(page).resolve()))


def serve(page: str | Path, port: int = 0, announce: Callable[[str], None] = print) -> None:
    """Serve ``page`` until interrupted, announcing its address first."""
    server = make_server(page, port)
    try:
        announce(f"serving {page} at http://{HOST}:{server.server_address[1]}/ (Ctrl-C stops)")
        sys.stdout.flush()
        server.serve_forever()
    finally:
        server.server_close()
