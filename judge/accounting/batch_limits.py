"""How many prompt tokens a model's Batch API queue holds at once (``judge/accounting/batch_limits.toml``, each
row with the day it was read and its source).

OpenAI refuses a batch whose input would take the prompt tokens of the batches not yet finished past the
model's "batch queue limit": the batch fails its validation with ``token_limit_exceeded`` and nothing of it
runs. The Batch API client (:mod:`judge.backends.openai_batch`) splits a run's requests under this limit and
submits the next part when an earlier one has finished. The shipped rows are the lowest paid tier's, so that
no account is refused; a higher tier gives its own with the backend option ``batch_queue_tokens``. A model
the table does not list has no known limit: its requests are split at the file limits only, and a refusal
is still met by waiting and submitting again.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from ..core.errors import InputError

#: The shipped table.
SHIPPED = "batch_limits.toml"


@dataclass(frozen=True)
class QueueLimit:
    """One model's batch queue: prompt tokens it holds at once, when and where the figure was read."""

    model: str
    enqueued_tokens: int
    checked: str
    source: str

    def describe(self) -> str:
        return f"{self.model}: {self.enqueued_tokens:,} enqueued tokens (checked {self.checked}; {self.source})"


def load_queue_limits() -> dict[str, QueueLimit]:
    """The shipped table, by model name (aliases included)."""
    where = f"judge/accounting/{SHIPPED}"
    data = tomllib.loads(files("judge.accounting").joinpath(SHIPPED).read_text(encoding="utf-8"))
    out: dict[str, QueueLimit] = {}
    for i, row in enumerate(data.get("models") or []):
        limit = _row(row, where, f"models[{i}]")
        for name in [limit.model, *row.get("aliases", [])]:
            out[str(name)] = limit
    return out


def queue_limit(model: str, override: int | None = None) -> QueueLimit | None:
    """The queue limit a run on ``model`` keeps under: ``override`` (the ``batch_queue_tokens`` option) when
    given, else the table's row (None: the table does not know the model)."""
    if override is not None:
        return QueueLimit(model, int(override), "given", "the batch_queue_tokens option")
    return load_queue_limits().get(model)


def _row(row: Any, where: str, record: str) -> QueueLimit:
    if not isinstance(row, dict):
        raise InputError("expects a table", file=where, record=record)
    for key in ("model", "enqueued_tokens", "checked", "source"):
        if key not in row:
            raise InputError("is required", file=where, record=record, field=key)
    tokens = row["enqueued_tokens"]
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens <= 0:
        raise InputError(f"must be a whole number of tokens > 0, got {tokens!r}", file=where, record=record,
                         field="enqueued_tokens")
    return QueueLimit(str(row["model"]), tokens, str(row["checked"]), str(row["source"]))


__all__ = ["QueueLimit", "load_queue_limits", "queue_limit"]
