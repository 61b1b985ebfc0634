"""The provider's Batch API: a run's uncached requests asked in one batch at the batch price, into the cache.

A judge run is a perfect batch: one short request per prompt and nothing interactive. :func:`fill_cache`
takes the label requests a run is about to make (:class:`judge.backends.requests.Request`: prompt, answer
labels, top N), keeps those the SQLite cache lacks, and sends them as Batch API input files whose
``custom_id`` is the request's cache key (:func:`judge.engine.cache.request_key`, the one way keys are made); the
answers it reads back go into the cache, so the run that follows finds every one there and scores as usual.
Every request body is the one the synchronous path sends (:meth:`OpenAIBackend.request`) and every answer
is read as a synchronous answer is (:meth:`OpenAIBackend.answer_from_batch`): rows from a batch equal rows
from a synchronous run. A run reaches it through the backend's driver (:class:`OpenAIBatcher`, what
``OpenAIBackend.batcher`` returns for the ``batch`` options), which the engine's pre-pass calls with every
request of the run (:mod:`judge.engine.batch`).

:class:`BatchClient` does the exchange, through the backend's own HTTP client and retries:

* input files split at the provider's limits (:data:`MAX_REQUESTS` requests, :data:`MAX_BYTES` bytes per
  file; one endpoint per batch), uploaded through ``/v1/files``, batches created through ``/v1/batches``;
* no double billing: each file id, then each batch id, is written to the state file (:class:`BatchState`,
  fsynced) before anything waits, so a process killed while it waits, run again, attaches to its batches
  instead of submitting again (a file uploaded whose batch id was not recorded is found again among the
  server's batches by its ``input_file_id``);
* a progress line while it waits (status, completed and failed counts, time waited);
* output and error files read back by ``custom_id``, their order never assumed;
* an expired or cancelled batch's missing requests, and requests that failed on a transient fault, are
  resubmitted once (``resubmit=False``: left to the caller, which sends them synchronously).

The state file holds ids and cache keys only: never a key or a prompt. ``write_batch_file`` writes the same
input lines for ``vllm run-batch`` or any runner of the format, and ``read_batch_results`` reads its output.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import BackendError, InputError
from ..core.io import atomic_write_text
from .base import Backend, Failure, LabelDist, Prompt
from .batching import BatchReport
from .openai_api import OpenAIBackend, _Permanent, _without_userinfo
from .requests import Request

#: The provider's limits on one input file: requests and bytes (OpenAI: 50,000 and 200 MB).
MAX_REQUESTS = 50_000
MAX_BYTES = 200 * 1024 * 1024
#: Statuses after which a batch changes no more.
TERMINAL = frozenset({"completed", "expired", "cancelled", "failed"})
#: Line errors worth one more try: the batch ran out of time or was cancelled, or the request met a transient fault.
RETRY_CODES = frozenset({"batch_expired", "batch_cancelled", "request_timeout"})
STATE_VERSION = 1


@dataclass(frozen=True)
class BatchRequest:
    """One input line: the request's cache key as ``custom_id``, its endpoint and its JSON body."""

    custom_id: str
    url: str
    body: dict[str, Any]

    def line(self) -> str:
        return json.dumps({"custom_id": self.custom_id, "method": "POST", "url": self.url, "body": self.body},
                          ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"


def split_files(requests: Sequence[BatchRequest], max_requests: int = MAX_REQUESTS,
                max_bytes: int = MAX_BYTES) -> list[list[BatchRequest]]:
    """The requests as input files: one endpoint per file (a batch has one), in order, each within both limits."""
    files: list[list[BatchRequest]] = []
    for url in dict.fromkeys(r.url for r in requests):
        current: list[BatchRequest] = []
        size = 0
        for r in (r for r in requests if r.url == url):
            n = len(r.line().encode("utf-8"))
            if n > max_bytes:
                raise BackendError(f"request {r.custom_id} is {n} bytes, more than a batch file may hold ({max_bytes})")
            if current and (len(current) >= max_requests or size + n > max_bytes):
                files.append(current)
                current, size = [], 0
            current.append(r)
            size += n
        if current:
            files.append(current)
    return files


def write_batch_file(path: str | Path, requests: Sequence[BatchRequest]) -> int:
    """Write the Batch API input lines (what ``vllm run-batch -i`` reads), atomically; returns their count."""
    atomic_write_text(Path(path), "".join(r.line() for r in requests))
    return len(requests)


def read_batch_results(path: str | Path) -> dict[str, dict[str, Any]]:
    """A Batch API output (or error) file, or ``vllm run-batch -o``'s: its lines by ``custom_id``, whatever
    their order. A line that is not JSON, lacks its ``custom_id`` or repeats one is an InputError naming the
    file and line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the batch results: {exc.strerror or exc}", file=str(p)) from None
    return _parse_lines(text, str(p))


def _parse_lines(text: str, where: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            raise InputError("not a JSON line", file=where, record=n) from None
        if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
            raise InputError("a batch output line needs its custom_id", file=where, record=n, field="custom_id")
        if line["custom_id"] in out:
            raise InputError(f"custom_id {line['custom_id']!r} appears twice", file=where, record=n, field="custom_id")
        out[line["custom_id"]] = line
    return out


def batch_request(backend: OpenAIBackend, prompt: Prompt, top_n: int, custom_id: str) -> BatchRequest:
    """The input line asking what a synchronous request for ``prompt`` asks."""
    url, body = backend.request(prompt, top_n)
    return BatchRequest(custom_id, url, body)


def state_path_for(cache_path: str | Path, backend: OpenAIBackend) -> Path:
    """Where the batches of ``backend``'s server and model are recorded beside the cache (``batches/`` next to
    it), so any run on that cache finds the batches a killed run left."""
    return state_file(Path(cache_path).expanduser().parent / "batches", backend)


def state_file(folder: str | Path, backend: OpenAIBackend) -> Path:
    """The state file of ``backend``'s server and model in ``folder``: one file per server and model."""
    ident = json.dumps([_without_userinfo(backend.base_url), backend.model_id])
    digest = hashlib.sha256(ident.encode("utf-8")).hexdigest()[:16]
    return Path(folder) / f"{digest}.json"


class BatchState:
    """The file recording the batches submitted (fsynced after every change), locked while it is changed so
    two processes on one cache never both submit the same requests."""

    def __init__(self, path: str | Path, backend: OpenAIBackend) -> None:
        self.path = Path(path)
        self.server = _without_userinfo(backend.base_url)
        self.model = backend.model_id

    @contextmanager
    def locked(self) -> Iterator[dict[str, Any]]:
        """The state, to read and change; written back (atomically, fsynced) when the block ends."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + ".lock"), "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                state = self._read()
                yield state
                atomic_write_text(self.path, json.dumps(state, indent=1, sort_keys=True) + "\n")
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _read(self) -> dict[str, Any]:
        if not self.path.exists():
            return {"version": STATE_VERSION, "server": self.server, "model": self.model, "batches": []}
        try:
            state = json.loads(self.path.read_text(encoding="utf-8"))
        except ValueError:
            raise InputError("the batch state file is not JSON: its batches cannot be found again; check them on "
                             "the provider's side before removing it", file=str(self.path)) from None
        if state.get("version") != STATE_VERSION or state.get("server") != self.server or state.get("model") != self.model:
            raise InputError(f"the batch state file is of another server or model ({state.get('server')}, "
                             f"{state.get('model')})", file=str(self.path))
        return state


@dataclass
class BatchOutcome:
    """What the batches gave: ``answered`` lines read back (answers and failures), ``missing`` requests no
    batch answered (expired or cancelled twice, or left for synchronous sending), ``batches`` the ids used."""

    answered: int = 0
    missing: set[str] = field(default_factory=set)
    batches: list[str] = field(default_factory=list)
    resubmitted: int = 0


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class BatchClient:
    """Submits requests as batches, waits for them and reads their answers back (see the module's doc)."""

    def __init__(self, backend: OpenAIBackend, state_path: str | Path, *, poll_s: float = 30.0,
                 max_requests: int = MAX_REQUESTS, max_bytes: int = MAX_BYTES, resubmit: bool = True,
                 log: Callable[[str], None] = _stderr, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.backend = backend
        self.state = BatchState(state_path, backend)
        self.poll_s = poll_s
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.resubmit = resubmit
        self.log = log
        self.sleep = sleep
        self.clock = clock

    # -- the provider's endpoints, through the backend's client and retries ---------------------------
    def _upload(self, lines: Sequence[BatchRequest], n: int) -> str:
        data = "".join(r.line() for r in lines).encode("utf-8")
        f = self.backend.api(lambda c: c.files.create(file=(f"judge-batch-{n}.jsonl", data), purpose="batch"),
                             "uploading a batch input file")
        return str(f.id)

    def _create(self, file_id: str, endpoint: str) -> str:
        b = self.backend.api(lambda c: c.batches.create(input_file_id=file_id, endpoint=endpoint,
                                                        completion_window="24h", metadata={"made_by": "judge"}),
                             "creating a batch")
        return str(b.id)

    def _retrieve(self, batch_id: str) -> Any:
        return self.backend.api(lambda c: c.batches.retrieve(batch_id), f"reading batch {batch_id}")

    def _content(self, file_id: str) -> str:
        raw = self.backend.api(lambda c: c.files.content(file_id), f"downloading file {file_id}")
        return bytes(raw.content).decode("utf-8")

    def _find_batch(self, file_id: str) -> str | None:
        """The batch made from ``file_id``, if one was created before the process stopped."""
        page = self.backend.api(lambda c: c.batches.list(limit=100), "listing batches")
        for b in page.data:  # the first page: a batch created moments before a kill is among the newest
            if b.input_file_id == file_id:
                return str(b.id)
        return None

    # -- the run ---------------------------------------------------------------------------------------
    def run(self, requests: Sequence[BatchRequest], store: Callable[[str, dict[str, Any]], None]) -> BatchOutcome:
        """Answer ``requests`` through batches. ``store(custom_id, line)`` gets each line read back before its
        batch is marked read in the state, so an answer is never lost between the two."""
        wanted = {r.custom_id: r for r in requests}
        if len(wanted) != len(requests):
            raise BackendError("a batch's custom_ids must be unique: the same request was given twice")
        self._store_fn = store
        mine = self._submit(wanted)
        start = self.clock()
        while mine:
            if self._poll(mine, start):  # some batch still running: wait before looking again
                self.sleep(self.poll_s)
        return BatchOutcome(self._answered, self._missing, self._ids, self._resubmitted)

    def _submit(self, wanted: dict[str, BatchRequest]) -> list[str]:
        """Attach to this state's unread batches holding wanted requests, and submit the rest; returns the
        batch entries (by position key) this run waits for."""
        self._wanted = wanted
        self._missing: set[str] = set()
        self._answered = 0
        self._ids: list[str] = []
        self._resubmitted = 0
        with self.state.locked() as state:
            entries = state["batches"]
            mine = [e["key"] for e in entries if not e["read"] and set(e["custom_ids"]) & set(wanted)]
            covered = {cid for e in entries if e["key"] in mine for cid in e["custom_ids"]}
            if mine:
                self.log(f"judge: attaching to {len(mine)} batch(es) submitted before "
                         f"({len(covered & set(wanted))} of the {len(wanted)} requests)")
            todo = [r for cid, r in wanted.items() if cid not in covered]
            for part in split_files(todo, self.max_requests, self.max_bytes):
                mine.append(self._new_entry(state, part, round_=1))
        return mine

    def _new_entry(self, state: dict[str, Any], part: Sequence[BatchRequest], round_: int) -> str:
        """Record an entry for ``part`` (its file uploaded and recorded first, then its batch); the state is
        saved after each step, inside the caller's lock."""
        key = f"{len(state['batches']) + 1}"
        entry: dict[str, Any] = {"key": key, "custom_ids": [r.custom_id for r in part], "endpoint": part[0].url,
                                 "round": round_, "input_file_id": None, "id": None, "status": None, "read": False}
        state["batches"].append(entry)
        file_id = self._upload(part, int(key))
        entry["input_file_id"] = file_id
        self._save(state)
        entry["id"] = self._create(file_id, part[0].url)
        self._save(state)
        self.log(f"judge: batch {entry['id']}: {len(part):,} requests submitted ({entry['endpoint']})")
        return key

    def _save(self, state: dict[str, Any]) -> None:
        atomic_write_text(self.state.path, json.dumps(state, indent=1, sort_keys=True) + "\n")

    def _poll(self, mine: list[str], start: float) -> bool:
        """Look at every unfinished batch of ``mine`` once (printing its progress), read those that ended;
        returns whether any is still running (``mine`` loses the entries read, gains resubmissions)."""
        running = False
        with self.state.locked() as state:
            by_key = {e["key"]: e for e in state["batches"]}
            for key in list(mine):
                entry = by_key[key]
                if entry["id"] is None:
                    entry["id"] = self._find_batch(str(entry["input_file_id"])) or \
                        self._create(str(entry["input_file_id"]), str(entry["endpoint"]))
                    self._save(state)
                batch = self._retrieve(entry["id"])
                entry["status"] = batch.status
                counts = batch.request_counts
                done = f"{counts.completed:,} of {counts.total:,} completed, {counts.failed:,} failed" if counts \
                    else "counts not known yet"
                self.log(f"judge: batch {entry['id']}: {batch.status}, {done}, waited {_waited(self.clock() - start)}")
                if batch.status not in TERMINAL:
                    running = True
                    continue
                if entry["id"] not in self._ids:
                    self._ids.append(entry["id"])
                self._finish(state, entry, batch)
                mine.remove(key)
                mine.extend(e["key"] for e in state["batches"] if e.get("resubmit_of") == key)
        return running

    def _finish(self, state: dict[str, Any], entry: dict[str, Any], batch: Any) -> None:
        """Read an ended batch's lines back by custom_id, hand the wanted ones to ``store``, resubmit what is
        worth one more try (once), and mark the batch read."""
        if batch.status == "failed":
            entry["read"] = True
            self._save(state)
            errors = (batch.errors.data if batch.errors is not None and batch.errors.data else [])
            listed = "; ".join(f"line {e.line}: {e.code}: {e.message}" for e in errors[:5]) or "no reason given"
            raise BackendError(f"batch {entry['id']} failed its validation: {listed}")
        lines: dict[str, dict[str, Any]] = {}
        for fid in (batch.output_file_id, batch.error_file_id):
            if fid:
                lines.update(_parse_lines(self._content(fid), f"batch {entry['id']} file {fid}"))
        retry: list[str] = []
        for cid in entry["custom_ids"]:
            if cid not in self._wanted:
                continue
            line = lines.get(cid)
            if line is None or _worth_retrying(line):
                retry.append(cid)
                continue
            self._store(cid, line)
        if retry:
            if entry["round"] == 1 and self.resubmit:
                self.log(f"judge: batch {entry['id']} ended {batch.status} with {len(retry):,} requests not answered: "
                         "submitting them once more")
                self._resubmitted += len(retry)
                for part in split_files([self._wanted[c] for c in retry], self.max_requests, self.max_bytes):
                    key = self._new_entry(state, part, round_=2)
                    next(e for e in state["batches"] if e["key"] == key)["resubmit_of"] = entry["key"]
            else:
                for cid in retry:
                    line = lines.get(cid)
                    if line is not None and self.resubmit and not _not_run(line):
                        self._store(cid, line)  # a second fault is final: the item fails with its reason
                    else:
                        self._missing.add(cid)  # never ran: left to the caller (sent synchronously, or reported)
                self.log(f"judge: batch {entry['id']} ended {batch.status}: {len(retry):,} requests left unanswered")
        entry["read"] = True
        self._save(state)

    def _store(self, cid: str, line: dict[str, Any]) -> None:
        self._store_fn(cid, line)
        self._answered += 1

    _store_fn: Callable[[str, dict[str, Any]], None]


def _worth_retrying(line: dict[str, Any]) -> bool:
    """An output line whose request did not run (expired, cancelled) or met a transient fault (429, 5xx)."""
    error = line.get("error")
    if error:
        return isinstance(error, dict) and error.get("code") in RETRY_CODES
    status = int((line.get("response") or {}).get("status_code") or 0)
    return status == 429 or status >= 500


def _not_run(line: dict[str, Any]) -> bool:
    """A line of a request the batch never ran (it expired or was cancelled first)."""
    error = line.get("error")
    return isinstance(error, dict) and error.get("code") in ("batch_expired", "batch_cancelled")


def _waited(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


def fill_cache(backend: Any, requests: Sequence[Request], state_path: str | Path, *, poll_s: float = 30.0,
               resubmit: bool = True, max_requests: int = MAX_REQUESTS, max_bytes: int = MAX_BYTES,
               log: Callable[[str], None] = _stderr) -> BatchReport:
    """Answer through the Batch API the label ``requests`` (what the run will ask its backend) that ``backend``
    (a :class:`judge.engine.cache.CachedBackend` around the OpenAI backend) does not have in its cache, and store the
    answers there under the keys the run will look up (:func:`judge.engine.cache.request_key`). The core of a run's
    ``--batch`` pass (:class:`OpenAIBatcher`): after it, the run scores as usual and finds the answers in the
    cache."""
    inner, report, by_key, pending = _pending(backend, requests)
    if not pending:
        return report
    client = BatchClient(inner, state_path, poll_s=poll_s, resubmit=resubmit, max_requests=max_requests,
                         max_bytes=max_bytes, log=log)
    outcome = client.run(pending, _storer(backend, by_key, report))
    report.missing = outcome.missing
    report.batches = outcome.batches
    return report


def write_pending(backend: Any, requests: Sequence[Request], path: str | Path) -> BatchReport:
    """``--batch-file FILE``: the input lines of the ``requests`` the cache lacks, written for another runner
    (``vllm run-batch``); ``report.missing`` holds their keys, ``report.written`` the file."""
    _, report, _, pending = _pending(backend, requests)
    write_batch_file(path, pending)
    report.missing = {r.custom_id for r in pending}
    report.written = Path(path)
    return report


def store_results(backend: Any, requests: Sequence[Request], path: str | Path) -> BatchReport:
    """``--batch-results FILE``: the answers another runner wrote for the ``requests`` (by custom_id, in any
    order) read into the cache as a batch's are; requests the file does not answer are in ``report.missing``."""
    _, report, by_key, pending = _pending(backend, requests)
    lines = read_batch_results(path)
    store = _storer(backend, by_key, report)
    for r in pending:
        if r.custom_id in lines:
            store(r.custom_id, lines[r.custom_id])
        else:
            report.missing.add(r.custom_id)
    return report


def _pending(backend: Any, requests: Sequence[Request]) -> tuple[
        OpenAIBackend, BatchReport, dict[str, Request], list[BatchRequest]]:
    """The OpenAI backend behind the cache, a report of the requests (distinct keys, cache hits, requests the
    endpoint refuses), the requests by key, and the input lines of those the cache lacks."""
    from ..engine.cache import request_key

    inner = _behind_cache(backend)
    report = BatchReport()
    by_key: dict[str, Request] = {}
    for r in requests:
        if r.kind != "label":
            raise BackendError(f"the Batch API answers label requests only, not {r.kind} requests")
        by_key.setdefault(request_key(inner, r), r)
    report.asked = len(by_key)
    found = backend.cache.get_many(list(by_key))
    report.hits = len(found)
    pending = []
    for key, r in by_key.items():
        if key in found:
            continue
        try:
            pending.append(batch_request(inner, r.prompt, r.top_n, key))
        except _Permanent as exc:
            report.failed[key] = f"API request failed: {exc.reason}"
    return inner, report, by_key, pending


def _behind_cache(backend: Any) -> OpenAIBackend:
    """The OpenAI backend behind ``backend``, the cache the batch's answers go to (BackendError otherwise)."""
    from ..engine.cache import CachedBackend

    if not isinstance(backend, CachedBackend) or not isinstance(backend.inner, OpenAIBackend):
        raise BackendError("the Batch API needs the openai backend behind the cache (--backend openai, cache on)")
    return backend.inner


def _storer(backend: Any, by_key: dict[str, Request], report: BatchReport) -> Callable[[str, dict[str, Any]], None]:
    """``store(custom_id, line)``: the line's answer read as a synchronous one and put in the cache (a failure
    goes to ``report.failed``, never to the cache)."""
    from ..engine.cache import unstorable

    inner: OpenAIBackend = backend.inner

    def store(cid: str, line: dict[str, Any]) -> None:
        r = by_key[cid]
        answer: LabelDist | Failure = inner.answer_from_batch(line, r.candidates, r.top_n)
        if isinstance(answer, LabelDist):
            reason = unstorable(answer)
            if reason is None:
                backend.cache.put(cid, inner.name, inner.model_id, answer)
                report.stored += 1
                return
            answer = Failure(reason)
        report.failed[cid] = answer.reason

    return store


@dataclass
class OpenAIBatcher:
    """The OpenAI backend's Batch API driver (``OpenAIBackend.batcher``), as its options set it: send the
    requests as batches (``batch``), write them for another runner (``file``: ``--batch-file``), or read
    that runner's answers (``results``: ``--batch-results``). What no batch answered is settled as a failure
    of its item with the reason (``fallback = "resubmit"``, after one resubmission), or left to the run to
    send one by one (``"sync"``)."""

    fallback: str = "resubmit"
    file: str | None = None
    results: str | None = None
    poll_s: float = 30.0

    def fill(self, backend: Backend, requests: Sequence[Request], folder: Path) -> BatchReport:
        """See :meth:`judge.backends.batching.Batcher.fill`; the state file is ``folder/<server and model>.json``."""
        if self.file is not None:
            return write_pending(backend, requests, self.file)
        if self.results is not None:
            report = store_results(backend, requests, self.results)
            why = f"not answered in the batch results file {self.results}"
        else:
            report = fill_cache(backend, requests, state_file(folder, _behind_cache(backend)), poll_s=self.poll_s,
                                resubmit=self.fallback == "resubmit")
            why = ("not answered through the Batch API: its batch expired or was cancelled, and so was the one "
                   "that resubmitted it")
        if self.fallback == "resubmit":
            report.settled = {**dict.fromkeys(report.missing, f"{why} (--batch-fallback sync sends it one by one)"),
                              **report.failed}
        return report


__all__ = ["MAX_BYTES", "MAX_REQUESTS", "BatchClient", "BatchOutcome", "BatchReport", "BatchRequest", "BatchState",
           "OpenAIBatcher", "batch_request", "fill_cache", "read_batch_results", "split_files", "state_file",
           "state_path_for", "store_results", "write_batch_file", "write_pending"]
