"""What a test counts on the batches of tests/fault_server.py, and the server with a model's batch queue.

The server itself pages ``GET /v1/batches`` and fails a batch that would take its model past an enqueued-token
limit (``enqueued_tokens``, see its docstring); :class:`QueueServer` names that limit ``queue_limit`` for every
model and counts a batch's input tokens as the server does. :func:`paid` counts the answers the server's
batches gave per ``custom_id`` (what the account pays for) and :func:`spend` their cost at the batch price from
the usage the server reported.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from judge.accounting.prices import Price
from tests.fault_server import FaultServer, prompt_of, prompt_tokens


@dataclass
class QueueServer(FaultServer):
    """A FaultServer whose model's batch queue holds ``queue_limit`` prompt tokens (None: no limit)."""

    queue_limit: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.queue_limit is not None:
            self.enqueued_tokens = self.queue_limit

    def __enter__(self) -> QueueServer:
        self.start()
        return self

    def input_tokens(self, batch: dict[str, Any]) -> int:
        """The prompt tokens of a batch's input file, as the server counts them."""
        total = 0
        for raw in self.files[batch["input_file_id"]]["_bytes"].decode().splitlines():
            line = json.loads(raw)
            total += prompt_tokens(prompt_of(line["body"], line["url"].endswith("/chat/completions")))
        return total


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
