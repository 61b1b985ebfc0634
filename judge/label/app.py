"""The labelling page and its server: the viewer's server (:mod:`judge.view.serve`, loopback only) with
three routes. ``GET /`` is the page (script and style inline, as the viewer's); ``GET /api/next?rater=NAME``
is the rater's next item; ``POST /api/label`` with ``{"rater", "id", "scores"}`` writes one label and answers
with the rater's next item. A refused label answers 400 with ``{"error": ...}`` and writes nothing."""

from __future__ import annotations

import json
from html import escape
from http.server import ThreadingHTTPServer
from typing import Any

from ..core.errors import InputError
from ..view.page import asset, fill, script_json
from ..view.serve import Request, Response, make_app_server
from .desk import LabelDesk, check_rater

JSON = "application/json; charset=utf-8"


def render_label_page(desk: LabelDesk, rater: str | None, title: str) -> str:
    """The page: the qualities with their scales, the default rater; the items come one at a time."""
    config = {"title": title, "rater": rater, "qualities": desk.qualities_view(), "total": len(desk.order.ids),
              "order": desk.order.kind, "seed": desk.order.seed}
    return fill(asset("label.html"), {
        "/*STYLE*/": asset("view.css") + asset("label.css"),
        "<!--TITLE-->": escape(title),
        "<!--DATA-->": f'<script type="application/json" id="label-config">{script_json(config)}</script>',
        "/*SCRIPT*/": asset("label.js"),
    })


def _json(status: int, data: Any) -> Response:
    return Response(status, JSON, json.dumps(data, ensure_ascii=False).encode("utf-8"))


def _refused(exc: InputError) -> Response:
    return _json(400, {"error": str(exc)})


def make_label_server(desk: LabelDesk, rater: str | None = None, title: str = "judge label",
                      port: int = 0) -> ThreadingHTTPServer:
    """A server of the labelling page for ``desk`` on 127.0.0.1:``port`` (0: a free one)."""
    page = render_label_page(desk, rater, title).encode("utf-8")

    def index(_: Request) -> Response:
        return Response(200, "text/html; charset=utf-8", page)

    def next_item(request: Request) -> Response:
        try:
            return _json(200, desk.state(request.query.get("rater", "")))
        except InputError as exc:
            return _refused(exc)

    def label(request: Request) -> Response:
        try:
            try:
                body = json.loads(request.body)
            except (UnicodeDecodeError, json.JSONDecodeError):
                raise InputError("the label is not JSON", field="body") from None
            if not isinstance(body, dict) or not isinstance(body.get("scores"), dict) \
                    or not isinstance(body.get("id"), str):
                raise InputError('a label is {"rater": NAME, "id": ITEM, "scores": {QUALITY: RATING}}', field="body")
            rater = check_rater(body.get("rater"))
            desk.record(rater, body["id"], body["scores"])
            return _json(200, desk.state(rater))
        except InputError as exc:
            return _refused(exc)
        except OSError as exc:  # the labels file cannot be written (disk full, removed folder): say so, saved nothing
            return _json(500, {"error": f"the label could not be saved: {exc.strerror or exc}"})

    return make_app_server({("GET", "/"): index, ("GET", "/api/next"): next_item, ("POST", "/api/label"): label},
                           port, missing="only the labelling page is served here")
