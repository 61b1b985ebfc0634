"""One worker thread owns the scorer; requests reach it through a queue.

llama.cpp holds one model and one context that must never be used from two threads at once, and
the event loop must never wait on the model: so every scoring call happens on this one thread and
each request awaits a future. For backends that batch (``capabilities.batching``: vLLM, HF, hosted
APIs), jobs waiting in the queue are scored together in one call, up to ``max_items`` items, which
is where batching across concurrent clients comes from. A batch that raises is retried job by
job, so one request's bad luck never fails another's.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..data.items import Item
from ..records.pair_rows import PairRow
from ..records.rows import Row

Rows = Sequence[Row | PairRow]


@dataclass
class _Job:
    items: Sequence[Any]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Rows] = field(repr=False)
    #: What turns the job's items into rows (None: the batcher's ``score``).
    run: Callable[[Sequence[Any]], Rows] | None = None


class Batcher:
    """Runs ``score`` (items -> rows) on a single thread; :meth:`submit` awaits one request's rows. A job may
    bring its own function instead (``POST /v1/compare``: pairs -> pair rows), run on the same thread, so the
    model is never used from two; only jobs of one function are merged."""

    def __init__(self, score: Callable[[Sequence[Item]], Rows], *, merge: bool, max_items: int,
                 on_batch: Callable[[int, int], None] | None = None) -> None:
        self._score = score
        self._merge = merge
        self._max_items = max(1, max_items)
        self._on_batch = on_batch
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._thread = threading.Thread(target=self._work, name="judge-scorer", daemon=True)
        self._closed = False

    def start(self) -> None:
        self._thread.start()

    @property
    def pending(self) -> int:
        """Jobs waiting for the worker (not counting the one it is scoring)."""
        return self._queue.qsize()

    async def submit(self, items: Sequence[Any], run: Callable[[Sequence[Any]], Rows] | None = None) -> Rows:
        """The rows of ``items`` once the worker has scored them (with ``run``, default ``score``; the exception
        it raised, if any)."""
        if self._closed:
            raise RuntimeError("the service is shutting down")
        loop = asyncio.get_running_loop()
        job = _Job(items, loop, loop.create_future(), run)
        self._queue.put(job)
        return await job.future

    def close(self) -> None:
        """Score every job already queued, then stop the worker (returns when it has)."""
        self._closed = True
        self._queue.put(None)
        if self._thread.is_alive():
            self._thread.join()

    # -- the worker thread ----------------------------------------------------------------------
    def _work(self) -> None:
        stop = False
        while not stop:
            job = self._queue.get()
            if job is None:
                break
            jobs = [job]
            total = len(job.items)
            while self._merge and total < self._max_items and job.run is None:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                if nxt.run is not None:  # another function: run what was gathered, then it
                    self._run(jobs)
                    jobs, total = [nxt], len(nxt.items)
                    break
                jobs.append(nxt)
                total += len(nxt.items)
            self._run(jobs)
        # Anything queued behind the stop mark (a request racing shutdown) is still answered.
        while True:
            try:
                late = self._queue.get_nowait()
            except queue.Empty:
                return
            if late is not None:
                self._run([late])

    def _run(self, jobs: list[_Job]) -> None:
        items = [it for job in jobs for it in job.items]
        run = jobs[0].run or self._score
        try:
            rows = run(items)
        except Exception as exc:
            if len(jobs) > 1:
                for job in jobs:
                    self._run([job])
                return
            _resolve(jobs[0], None, exc)
            return
        if self._on_batch is not None:
            self._on_batch(len(jobs), len(items))
        start = 0
        for job in jobs:
            _resolve(job, rows[start:start + len(job.items)], None)
            start += len(job.items)


def _resolve(job: _Job, rows: Rows | None, exc: BaseException | None) -> None:
    """Hand the result to the request's event loop (it may have gone: a client that disconnected)."""

    def deliver() -> None:
        if job.future.done():
            return
        if exc is not None:
            job.future.set_exception(exc)
        else:
            job.future.set_result(rows or [])

    try:
        job.loop.call_soon_threadsafe(deliver)
    except RuntimeError:
        pass  # the loop is closed: nobody is waiting any more
