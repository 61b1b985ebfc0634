"""tests/fault_server.py with two more of OpenAI's Batch API behaviours, and what a test counts on its batches.

* ``GET /v1/batches`` pages as OpenAI's list endpoints do (``limit``, 1 to 100, default 20; ``after``: the id
  of the last batch of the page before; ``has_more``, ``first_id``, ``last_id``), newest first.
* ``queue_limit``: the model's batch queue holds at most that many prompt tokens (the server's own count:
  characters / 4 per request); a batch whose input would take the batches not yet finished past it fails
  its validation with ``token_limit_exceeded`` and OpenAI's message ("Enqueued token limit reached for
  MODEL in organization ORG. Limit: N enqueued tokens. Please try again once some in_progress batches have
  been completed."), and none of its requests runs.

:func:`paid` counts the answers the server's batches gave per ``custom_id`` (what the account pays for) and
:func:`spend` their cost at the batch price from the usage the server reported.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from judge.accounting.prices import Price
from tests.fault_server import FaultServer, _advance, _Handler, _public, _Server, prompt_of, prompt_tokens

#: Statuses of a batch whose requests still sit in the model's queue.
QUEUED = ("validating", "in_progress", "finalizing")


@dataclass
class QueueServer(FaultServer):
    """A FaultServer whose batch list pages and whose model's batch queue holds ``queue_limit`` tokens."""

    queue_limit: int | None = None

    def start(self) -> QueueServer:
        import threading

        server = self

        class Handler(_QueueHandler):
            owner = server

        self._httpd = _Server(("127.0.0.1", self.port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def __enter__(self) -> QueueServer:
        return self.start()

    def input_tokens(self, batch: dict[str, Any]) -> int:
        """The prompt tokens of a batch's input file, as the server counts them."""
        total = 0
        for raw in self.files[batch["input_file_id"]]["_bytes"].decode().splitlines():
            line = json.loads(raw)
            total += prompt_tokens(prompt_of(line["body"], line["url"].endswith("/chat/completions")))
        return total


class _QueueHandler(_Handler):
    owner: QueueServer

    def do_GET(self) -> None:
        split = urlsplit(self.path)
        if split.path.rstrip("/") != "/v1/batches" or self.owner.dead:
            super().do_GET()
            return
        srv = self.owner
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        limit = int(query.get("limit", 20))
        if not 1 <= limit <= 100:
            self._send(400, {"error": {"message": f"Invalid 'limit': integer below minimum value or above maximum "
                                                  f"value (1 to 100), got {limit}.", "type": "invalid_request_error",
                                       "param": "limit", "code": "integer_out_of_range"}})
            return
        with srv._lock:
            ids = [b["id"] for b in sorted(srv.batches.values(), key=lambda b: -b["_n"])]
        after = query.get("after")
        if after is not None:
            ids = ids[ids.index(after) + 1:] if after in ids else []
        page, more = ids[:limit], len(ids) > limit
        for bid in page:
            _advance(srv, bid)
        with srv._lock:
            data = [_public(srv.batches[bid]) for bid in page]
        self._send(200, {"object": "list", "data": data, "first_id": page[0] if page else None,
                         "last_id": page[-1] if page else None, "has_more": more})

    def do_POST(self) -> None:
        before = set(self.owner.batches)
        super().do_POST()
        srv = self.owner
        created = set(srv.batches) - before
        if srv.queue_limit is None or not created:
            return
        bid = created.pop()
        with srv._lock:
            batch = srv.batches[bid]
            queued = [b for b in srv.batches.values() if b["id"] != bid and b["status"] in QUEUED]
        waiting = sum(srv.input_tokens(b) for b in queued)
        if waiting + srv.input_tokens(batch) <= srv.queue_limit:
            return
        message = (f"Enqueued token limit reached for fault-model in organization org-test. Limit: "
                   f"{srv.queue_limit:,} enqueued tokens. Please try again once some in_progress batches have been "
                   "completed.")
        with srv._lock:
            batch.update(status="failed", failed_at=batch["created_at"], errors={"object": "list", "data": [
                {"code": "token_limit_exceeded", "line": None, "param": None, "message": message}]})


def lines_of(srv: FaultServer, batch: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """The lines of a batch's output (``output_file_id``) or error file (``error_file_id``)."""
    fid = batch.get(kind)
    return [json.loads(x) for x in srv.files[fid]["_bytes"].decode().splitlines()] if fid else []


def paid(srv: FaultServer) -> Counter[str]:
    """Answers the server's batches gave (status 200 lines: what the account is billed for), per custom_id."""
    return Counter(x["custom_id"] for b in srv.batches.values() for x in lines_of(srv, b, "output_file_id")
                   if (x.get("response") or {}).get("status_code") == 200)


def spend(srv: FaultServer, price: Price) -> float:
    """Dollars the server's batches cost at the batch price, from the usage each answer reported."""
    prompt = completion = 0
    for b in srv.batches.values():
        for x in lines_of(srv, b, "output_file_id"):
            usage = x["response"]["body"]["usage"]
            prompt, completion = prompt + usage["prompt_tokens"], completion + usage["completion_tokens"]
    return price.cost(prompt, completion, batch=True)
