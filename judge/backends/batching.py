"""Answering a run's requests in bulk before it scores them: what a backend with a provider's batch API
registers (:data:`judge.backends.registry.BATCHERS`) and what its driver reports.

A hosted API's batch endpoint answers the same requests as its synchronous one, at a discount and within
hours. A run that asks for it (``--batch``: the OpenAI backend's ``batch`` option) first lists every request
it will make that the cache lacks (:mod:`judge.engine.batch`, from the engine's own plan), hands them to the
backend's :class:`Batcher`, which answers them into the cache under the run's own keys, and then scores as
usual, finding the answers there. What the batch could not answer is either left to the run to send one by
one, or settled: a failure with its reason that the run reports for its item without sending it again
(:attr:`BatchReport.settled`; the backend's ``batch_fallback`` option says which).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from .base import Backend, LabelDist
from .requests import Request


@dataclass
class BatchReport:
    """What a batch pass did: requests ``asked`` (distinct cache keys), found in the cache (``hits``), answers
    ``stored`` into it, ``failed`` (key -> reason, never cached), ``missing`` (keys no batch answered), the
    batch ids; ``settled``: the keys the run must not send again and the reason its items fail with (empty
    when what the batch left goes synchronously); ``written``: the input file written for another runner
    (``--batch-file``: the run stops after writing it)."""

    asked: int = 0
    hits: int = 0
    stored: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    missing: set[str] = field(default_factory=set)
    batches: list[str] = field(default_factory=list)
    settled: dict[str, str] = field(default_factory=dict)
    written: Path | None = None

    def describe(self) -> str:
        """One line for the run's log."""
        if self.written is not None:
            return f"{len(self.missing):,} requests written to {self.written}"
        how = f"through {len(self.batches)} batch(es)" if self.batches else "from the batch results"
        line = (f"{self.asked:,} requests the cache lacked, {self.stored:,} answered {how}, "
                f"{len(self.failed):,} failed, {len(self.missing):,} not answered")
        if self.failed or self.missing:
            line += ("; their items fail with the reason (--batch-fallback sync sends them one by one)"
                     if self.settled else "; they are sent one by one")
        return line


class Store(Protocol):
    """The run's backend behind its answer store, as a batch driver sees it: the backend that answers
    (``inner``), the key each request's answer is kept under, which keys are kept, and keeping an answer.
    (The engine's SQLite cache in front of the backend is one: :class:`judge.engine.cache.CachedBackend`.)"""

    @property
    def inner(self) -> Backend: ...

    def key(self, request: Request) -> str: ...

    def kept(self, keys: Sequence[str]) -> set[str]: ...

    def keep(self, key: str, answer: LabelDist) -> str | None:
        """Keep ``answer`` under ``key``; the reason it cannot be kept (a NaN in it), else None."""
        ...


class Batcher(Protocol):
    """A backend's driver of its provider's batch API, as its options configured it
    (:data:`judge.backends.registry.BATCHERS`)."""

    #: The file ``fill`` writes for another runner instead of sending (``--batch-file``; None: it sends).
    file: str | None

    def fill(self, store: Store, requests: Sequence[Request], folder: Path) -> BatchReport:
        """Answer ``requests`` (label requests the run will make) into ``store`` (the run's backend behind the
        cache), recording the batches submitted in a state file in ``folder`` before anything waits, so that a
        killed run, run again, attaches to them."""
        ...


__all__ = ["BatchReport", "Batcher", "Store"]
