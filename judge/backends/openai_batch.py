"""The provider's Batch API: a run's uncached requests asked in batches at the batch price, into the cache.

A judge run is a perfect batch: one short request per prompt and nothing interactive. :func:`fill_cache`
takes the label requests a run is about to make (:class:`judge.backends.requests.Request`: prompt, answer
labels, top N), keeps those the SQLite cache lacks, and sends them as Batch API input files whose
``custom_id`` is the request's cache key (:func:`judge.engine.cache.request_key`, the one way keys are made); the
answers it reads back go into the cache, so the run that follows finds every one there and scores as usual.
Every request body is the one the synchronous path sends (:meth:`OpenAIBackend.request`) and every answer
is read as a synchronous answer is (:meth:`OpenAIBackend.answer_from_batch`): rows from a batch equal rows
from a synchronous run. A run reaches it through the backend's driver (:class:`OpenAIBatcher`, what
:func:`batcher` returns for the ``batch`` options, :data:`judge.backends.registry.BATCHERS`), which the engine's pre-pass calls with every
request of the run (:mod:`judge.engine.batch`).

:class:`BatchClient` does the exchange, through the backend's own HTTP client and retries:

* input files split at the provider's limits (:data:`MAX_REQUESTS` requests, :data:`MAX_BYTES` bytes per
  file; one endpoint per batch), uploaded through ``/v1/files``, batches created through ``/v1/batches``;
* one paid answer per prompt, under kills at any point, reruns with other limits or subsets, and several
  processes on one cache: each file id, then each batch id, is written to the state file (:class:`BatchState`,
  fsynced) before anything waits; every look at the batches is one pass under the state's lock, in which
  ended batches are read (every answer in them goes to the cache, whichever run asked it) and what is still
  wanted is checked against the cache and the unread batches before anything is submitted, so a second
  process attaches or waits and never submits again (a file uploaded whose batch id was not recorded is
  found again among every page of the server's batches by its ``input_file_id``);
* under the backend's ``max_cost``, a batch is submitted only when the most it can cost
  (:meth:`BatchRequest.bound`: a token per prompt byte, the whole completion budget) fits what the backend's
  purse (its cost layer's, :mod:`judge.backends.priced`) and the batches in flight leave of the cap; the rest
  waits for them, or fails with the reason;
* the model's batch queue limit (:mod:`judge.accounting.batch_limits`, or ``queue_tokens``) kept by the same
  bound; a batch refused for it (``token_limit_exceeded``) goes again in smaller parts once the batches
  before it have finished;
* a progress line while it waits (status, completed and failed counts, time waited);
* output and error files read back by ``custom_id``, their order never assumed;
* an expired or cancelled batch's missing requests, and requests that failed on a transient fault, are
  resubmitted once (``resubmit=False``: left to the caller, which sends them synchronously).

The state file holds ids, cache keys, answer labels and token bounds: never a key or a prompt. ``write_batch_file`` writes the same
input lines for ``vllm run-batch`` or any runner of the format, and ``read_batch_results`` reads its output.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..accounting.batch_limits import queue_limit
from ..core.errors import BackendError, InputError
from ..core.io import atomic_write_text
from .base import Backend, Failure, LabelDist, Prompt
from .batching import BatchReport, Store
from .hosted import HostedOptions
from .layer import innermost
from .openai_api import OpenAIBackend, _Permanent, _without_userinfo, body_bound
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
    #: How its answer is read (answer labels, top N): recorded with the batch, so that whichever run reads the
    #: batch puts this answer in the cache, whether it asked it or not.
    candidates: tuple[str, ...] = ()
    top_n: int = 0

    def line(self) -> str:
        return json.dumps({"custom_id": self.custom_id, "method": "POST", "url": self.url, "body": self.body},
                          ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"

    def bound(self) -> tuple[int, int]:
        """The most prompt and completion tokens the request can use (:func:`body_bound`)."""
        prompt, completion = body_bound(self.body)
        if not completion:
            raise BackendError(f"request {self.custom_id} sets no completion budget (max_tokens): its cost has no bound")
        return prompt, completion


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


def batch_request(backend: OpenAIBackend, prompt: Prompt, top_n: int, custom_id: str,
                  candidates: Sequence[str] = ()) -> BatchRequest:
    """The input line asking what a synchronous request for ``prompt`` asks (``candidates``: the answer labels
    its answer is read for)."""
    url, body = backend.request(prompt, top_n)
    return BatchRequest(custom_id, url, body, tuple(candidates), top_n)


def state_path_for(cache_path: str | Path, backend: Backend) -> Path:
    """Where the batches of ``backend``'s server and model (the OpenAI backend, or a layer in front of it) are
    recorded beside the cache (``batches/`` next to it), so any run on that cache finds the batches a killed run
    left."""
    return state_file(Path(cache_path).expanduser().parent / "batches", _openai(backend))


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
    """What the batches gave the requests asked: ``answered`` (their answers are in the cache), ``failed``
    (key -> reason: a line that failed, or a request the budget or the queue limit kept back), ``missing``
    (no batch answered them: expired or cancelled twice, or left for synchronous sending), ``batches`` the
    ids waited for."""

    answered: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)
    missing: set[str] = field(default_factory=set)
    batches: list[str] = field(default_factory=list)


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _nap(seconds: float) -> None:
    time.sleep(seconds)


#: ``store(custom_id, line, candidates, top_n)``: the line's answer into the cache; returns the reason it failed
#: (never cached) or None.
Keeper = Callable[[str, dict[str, Any], Sequence[str], int], "str | None"]
#: ``have(keys)``: the keys among ``keys`` whose answers the cache holds.
Have = Callable[[Sequence[str]], set[str]]


class BatchClient:
    """Submits requests as batches, waits for them and reads their answers back (see the module's doc).

    Every look at the batches is one pass under the state's lock (:meth:`_pass`): read every unfinished batch
    holding a wanted request, then claim what is still wanted (not in the cache, in no unfinished batch, not
    settled by a batch this run saw) and submit it, within the budget and the queue limit. Two processes on
    one cache therefore never both submit a request: the second finds it in the cache or in the first one's
    batch, and waits for that."""

    def __init__(self, backend: OpenAIBackend, state_path: str | Path, *, poll_s: float = 30.0,
                 max_requests: int = MAX_REQUESTS, max_bytes: int = MAX_BYTES, resubmit: bool = True,
                 queue_tokens: int | None = None, log: Callable[[str], None] = _stderr) -> None:
        self.backend = backend
        self.state = BatchState(state_path, backend)
        self.poll_s = poll_s
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.resubmit = resubmit
        #: Prompt tokens the model's queue holds at once (None: not known; refusals still teach it).
        self.queue_tokens = queue_tokens
        self.log = log

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
        """The batch made from ``file_id``, if one was created before the process stopped: every page of the
        server's batches, newest first (``after`` the last id of a page while ``has_more``)."""
        after: str | None = None
        while True:
            page = self.backend.api(functools.partial(_list_page, after=after), "listing batches")
            for b in page.data:
                if b.input_file_id == file_id:
                    return str(b.id)
            if not page.has_more or not page.data:
                return None
            after = str(page.data[-1].id)

    # -- the run ---------------------------------------------------------------------------------------
    def run(self, requests: Sequence[BatchRequest], store: Keeper, have: Have) -> BatchOutcome:
        """Answer ``requests`` through batches. ``store`` gets every line of every batch read (whatever this run
        asked), before the batch is marked read in the state, so an answer is never lost between the two and
        never paid twice; ``have`` says which keys the cache holds (asked inside the state's lock)."""
        wanted = {r.custom_id: r for r in requests}
        if len(wanted) != len(requests):
            raise BackendError("a batch's custom_ids must be unique: the same request was given twice")
        self._wanted, self._store, self._have = wanted, store, have
        self._seen: list[str] = []  # entry keys this run waited for or read (what counts as a try)
        self._mine: set[str] = set()  # entry keys this run submitted
        self._kept: dict[str, str] = {}  # requests the budget or the queue limit keeps back, and why
        start = time.monotonic()
        first = True
        while True:
            with self.state.locked() as state:
                waiting = self._pass(state, start, first)
            first = False
            if not waiting:
                break
            _nap(self.poll_s)
        return self._outcome()

    def _pass(self, state: dict[str, Any], start: float, first: bool) -> bool:
        """One look under the lock: read what ended, claim and submit what is still wanted; returns whether
        this run still waits for a batch."""
        entries: list[dict[str, Any]] = state["batches"]
        holding = [e for e in entries if not e["read"] and set(e["custom_ids"]) & self._wanted.keys()]
        if first and holding:
            others = [e for e in holding if e["key"] not in self._mine]
            covered = {c for e in others for c in e["custom_ids"]} & self._wanted.keys()
            self.log(f"judge: attaching to {len(others)} batch(es) submitted before "
                     f"({len(covered)} of the {len(self._wanted)} requests)")
        for e in [e for e in entries if not e["read"]]:
            if e in holding:
                if e["key"] not in self._seen:
                    self._seen.append(e["key"])
                self._look(state, e, start)
            elif e["id"] is not None and e.get("reads"):
                self._look(state, e, start)  # another run's batch: its answers go to the cache too when it ends
        running = [e for e in entries if not e["read"] and set(e["custom_ids"]) & self._wanted.keys()]
        submitted, blocked = self._claim(state, running)
        return bool(running or submitted or (blocked and any(not e["read"] for e in entries)))

    def _look(self, state: dict[str, Any], entry: dict[str, Any], start: float) -> None:
        """Look at one unread batch (creating it first when its process stopped between upload and create);
        read it when it has ended."""
        if entry["id"] is None:
            entry["id"] = self._find_batch(str(entry["input_file_id"])) or \
                self._create(str(entry["input_file_id"]), str(entry["endpoint"]))
            self._save(state)
        batch = self._retrieve(entry["id"])
        entry["status"] = batch.status
        counts = batch.request_counts
        done = f"{counts.completed:,} of {counts.total:,} completed, {counts.failed:,} failed" if counts \
            else "counts not known yet"
        self.log(f"judge: batch {entry['id']}: {batch.status}, {done}, waited {_waited(time.monotonic() - start)}")
        if batch.status in TERMINAL:
            self._read(state, entry, batch)

    def _read(self, state: dict[str, Any], entry: dict[str, Any], batch: Any) -> None:
        """Read an ended batch: every line into the cache (whichever run asked it), what is worth one more try
        recorded in ``retry`` and failures in ``failed``, then the batch marked read."""
        if batch.status == "failed":
            self._refused(state, entry, batch)
            return
        lines: dict[str, dict[str, Any]] = {}
        for fid in (batch.output_file_id, batch.error_file_id):
            if fid:
                lines.update(_parse_lines(self._content(fid), f"batch {entry['id']} file {fid}"))
        retry: list[str] = []
        failed: dict[str, str] = {}
        for cid in entry["custom_ids"]:
            how = self._how(entry, cid)
            if how is None:
                continue  # a batch recorded before answers were read whatever the run: what it asked only
            line = lines.get(cid)
            if line is None or _worth_retrying(line):
                final = not self.resubmit or self._tries(state, cid) >= 1
                if line is not None and final and self.resubmit and not _not_run(line):
                    failed[cid] = self._store(cid, line, *how) or "API request failed"  # a second fault is final
                else:
                    retry.append(cid)  # not run (or a first fault): another try, or left to the caller
                continue
            reason = self._store(cid, line, *how)
            if reason is not None:
                failed[cid] = reason
        entry.update(read=True, retry=retry, failed=failed)
        self._save(state)
        if retry:
            self.log(f"judge: batch {entry['id']} ended {batch.status} with {len(retry):,} requests not answered"
                     + (": submitting them once more" if self.resubmit and entry.get("round", 1) == 1 else ""))

    def _refused(self, state: dict[str, Any], entry: dict[str, Any], batch: Any) -> None:
        """A batch that failed its validation. Refused for the queue's enqueued-token limit: nothing of it ran,
        its requests are claimed again once the batches before it have finished, the limit learned from the
        refusal. Any other reason is an error naming the lines."""
        errors = (batch.errors.data if batch.errors is not None and batch.errors.data else [])
        entry["read"] = True
        if errors and all(e.code == "token_limit_exceeded" for e in errors):
            entry["refused"] = True
            self._save(state)
            tokens = int(entry.get("queued_before", 0)) + int(entry.get("bound", [0, 0])[0])
            learned = max(1, tokens // 2)
            self.queue_tokens = learned if self.queue_tokens is None else min(self.queue_tokens, learned)
            self.log(f"judge: batch {entry['id']} refused: the model's queue is full ({errors[0].message}); its "
                     f"{len(entry['custom_ids']):,} requests go again when the batches before it have finished, "
                     f"in parts of at most {self.queue_tokens:,} prompt tokens")
            return
        self._save(state)
        listed = "; ".join(f"line {e.line}: {e.code}: {e.message}" for e in errors[:5]) or "no reason given"
        raise BackendError(f"batch {entry['id']} failed its validation: {listed}")

    def _how(self, entry: dict[str, Any], cid: str) -> tuple[list[str], int] | None:
        """How ``cid``'s answer is read (answer labels, top N): from the entry, or from the request asked."""
        reads, read_as = entry.get("reads"), entry.get("read_as")
        if reads and read_as:
            cands, top_n = reads[read_as[entry["custom_ids"].index(cid)]]
            return list(cands), int(top_n)
        r = self._wanted.get(cid)
        return (list(r.candidates), r.top_n) if r is not None else None

    def _tries(self, state: dict[str, Any], cid: str) -> int:
        """How often a batch this run saw left ``cid`` unanswered (expired, cancelled, a transient fault)."""
        return sum(1 for e in state["batches"] if e["key"] in self._seen and e["read"] and cid in e.get("retry", ()))

    def _settled(self, state: dict[str, Any]) -> dict[str, str]:
        """Failures read by the batches this run saw (earlier runs' failures are tried again: never cached)."""
        return {c: r for e in state["batches"] if e["key"] in self._seen for c, r in e.get("failed", {}).items()}

    # -- claiming and submitting -------------------------------------------------------------------------
    def _claim(self, state: dict[str, Any], running: list[dict[str, Any]]) -> tuple[bool, bool]:
        """Submit what is still wanted and unclaimed, within the budget and the queue limit; returns whether
        anything was submitted, and whether what is left waits for batches in flight (this run's, or other
        runs' holding the model's queue). What can never fit is kept back with its reason."""
        entries = state["batches"]
        busy = {c for e in entries if not e["read"] for c in e["custom_ids"]}
        settled = self._settled(state)
        allowed = 2 if self.resubmit else 1
        open_ = [c for c in self._wanted if c not in busy and c not in settled and self._tries(state, c) < allowed]
        found = self._have(open_) if open_ else set()
        todo = [self._wanted[c] for c in open_ if c not in found]
        self._kept = {}
        if not todo:
            return False, False
        money = self._money_left(running)
        queued = sum(int(e.get("bound", [0, 0])[0]) for e in entries if not e["read"])
        room = None if self.queue_tokens is None else self.queue_tokens - queued
        chosen: list[BatchRequest] = []
        spend, tokens = 0.0, 0
        for r in todo:
            prompt, completion = r.bound()
            cost = self._cost(prompt, completion)
            if (money is not None and spend + cost > money) or (room is not None and tokens + prompt > room):
                break  # in order: the next part starts here once something in flight has finished
            chosen.append(r)
            spend, tokens = spend + cost, tokens + prompt
        if not chosen:
            first_prompt, first_completion = todo[0].bound()
            affordable = money is None or self._cost(first_prompt, first_completion) <= money
            queue_bound = queued > 0 and self.queue_tokens is not None and first_prompt <= self.queue_tokens
            if running or (affordable and queue_bound):
                return False, True  # the next part goes when something in flight has finished
            self._keep(todo, money)
            return False, False
        for part in split_files(chosen, self.max_requests, self.max_bytes):
            round_ = 1 + max(self._tries(state, r.custom_id) for r in part)
            key = self._new_entry(state, part, round_, queued)
            queued += _bounds(part)[0]
            self._mine.add(key)
            self._seen.append(key)
        return True, False

    def _money_left(self, running: list[dict[str, Any]]) -> float | None:
        """Under ``max_cost``: the cap less the spend the server's usage has counted so far and the most the
        batches still running can cost (None: no cap)."""
        return self.backend.purse.room(sum(self._cost(*e.get("bound", [0, 0])) for e in running))

    def _cost(self, prompt: int, completion: int) -> float:
        return self.backend.purse.cost(prompt, completion, batch=True)

    def _keep(self, todo: Sequence[BatchRequest], money: float | None) -> None:
        """Nothing runs and the next request does not fit: it and those after it are kept back, with why."""
        assert money is not None or self.queue_tokens is not None
        for r in todo:
            prompt, completion = r.bound()
            if money is not None and self._cost(prompt, completion) > money:
                self._kept[r.custom_id] = self.backend.purse.refusal()
            else:
                self._kept[r.custom_id] = (f"not sent through the Batch API: its prompt alone may hold {prompt:,} "
                                           f"tokens, more than the model's batch queue holds ({self.queue_tokens:,})")
        self.log(f"judge: {len(todo):,} requests kept back: {next(iter(self._kept.values()))}")

    def _new_entry(self, state: dict[str, Any], part: Sequence[BatchRequest], round_: int, queued: int) -> str:
        """Record an entry for ``part`` (its file uploaded and recorded first, then its batch); the state is
        saved after each step, inside the caller's lock. The entry says how to read every answer (labels and
        top N, never the prompt) and the most its requests can use."""
        key = f"{len(state['batches']) + 1}"
        reads: list[list[Any]] = []
        read_as: list[int] = []
        for r in part:
            how = [list(r.candidates), r.top_n]
            if how not in reads:
                reads.append(how)
            read_as.append(reads.index(how))
        entry: dict[str, Any] = {"key": key, "custom_ids": [r.custom_id for r in part], "endpoint": part[0].url,
                                 "round": round_, "input_file_id": None, "id": None, "status": None, "read": False,
                                 "reads": reads, "read_as": read_as, "bound": list(_bounds(part)),
                                 "queued_before": queued}
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

    def _outcome(self) -> BatchOutcome:
        """What became of each request asked, from the cache and the batches this run saw."""
        with self.state.locked() as state:
            settled = self._settled(state)
            ids = [e["id"] for k in self._seen for e in state["batches"] if e["key"] == k and e["id"]]
        answered = self._have(list(self._wanted))
        failed = {c: r for c, r in {**settled, **self._kept}.items() if c in self._wanted and c not in answered}
        missing = set(self._wanted) - answered - failed.keys()
        return BatchOutcome(answered, failed, missing, list(dict.fromkeys(ids)))


def _list_page(client: Any, after: str | None) -> Any:
    """One page of the server's batches, newest first: the first, or the one after the batch ``after``."""
    return client.batches.list(limit=100, after=after) if after else client.batches.list(limit=100)


def _bounds(part: Sequence[BatchRequest]) -> tuple[int, int]:
    """The most prompt and completion tokens ``part`` can use."""
    bounds = [r.bound() for r in part]
    return sum(b[0] for b in bounds), sum(b[1] for b in bounds)


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


def fill_cache(backend: Store, requests: Sequence[Request], state_path: str | Path, *, poll_s: float = 30.0,
               resubmit: bool = True, max_requests: int = MAX_REQUESTS, max_bytes: int = MAX_BYTES,
               queue_tokens: int | None = None, log: Callable[[str], None] = _stderr) -> BatchReport:
    """Answer through the Batch API the label ``requests`` (what the run will ask its backend) that ``backend``
    (a :class:`judge.engine.cache.CachedBackend` around the OpenAI backend) does not have in its cache, and store the
    answers there under the keys the run will look up (:func:`judge.engine.cache.request_key`). The core of a run's
    ``--batch`` pass (:class:`OpenAIBatcher`): after it, the run scores as usual and finds the answers in the
    cache. ``queue_tokens``: the model's batch queue limit (None: the shipped table's,
    :mod:`judge.accounting.batch_limits`); under the backend's ``max_cost`` each batch is submitted only when
    the most it can cost fits what is left."""
    inner, report, pending = _pending(backend, requests)
    if not pending:
        return report
    limit = queue_limit(inner.model_id, queue_tokens)
    client = BatchClient(inner, state_path, poll_s=poll_s, resubmit=resubmit, max_requests=max_requests,
                         max_bytes=max_bytes, queue_tokens=limit.enqueued_tokens if limit else None, log=log)

    outcome = client.run(pending, _storer(backend), backend.kept)
    report.stored = len(outcome.answered)
    report.failed.update(outcome.failed)
    report.missing = outcome.missing
    report.batches = outcome.batches
    return report


def write_pending(backend: Store, requests: Sequence[Request], path: str | Path) -> BatchReport:
    """``--batch-file FILE``: the input lines of the ``requests`` the cache lacks, written for another runner
    (``vllm run-batch``); ``report.missing`` holds their keys, ``report.written`` the file."""
    _, report, pending = _pending(backend, requests)
    write_batch_file(path, pending)
    report.missing = {r.custom_id for r in pending}
    report.written = Path(path)
    return report


def store_results(backend: Store, requests: Sequence[Request], path: str | Path) -> BatchReport:
    """``--batch-results FILE``: the answers another runner wrote for the ``requests`` (by custom_id, in any
    order) read into the cache as a batch's are; requests the file does not answer are in ``report.missing``."""
    _, report, pending = _pending(backend, requests)
    lines = read_batch_results(path)
    store = _storer(backend)
    for r in pending:
        if r.custom_id in lines:
            reason = store(r.custom_id, lines[r.custom_id], r.candidates, r.top_n)
            if reason is None:
                report.stored += 1
            else:
                report.failed[r.custom_id] = reason
        else:
            report.missing.add(r.custom_id)
    return report


def _pending(backend: Store, requests: Sequence[Request]) -> tuple[OpenAIBackend, BatchReport, list[BatchRequest]]:
    """The OpenAI backend behind the cache, a report of the requests (distinct keys, cache hits, requests the
    endpoint refuses), and the input lines of those the cache lacks."""
    inner = _openai(backend.inner)
    report = BatchReport()
    by_key: dict[str, Request] = {}
    for r in requests:
        if r.kind != "label":
            raise BackendError(f"the Batch API answers label requests only, not {r.kind} requests")
        by_key.setdefault(backend.key(r), r)
    report.asked = len(by_key)
    found = backend.kept(list(by_key))
    report.hits = len(found)
    pending = []
    for key, r in by_key.items():
        if key in found:
            continue
        try:
            pending.append(batch_request(inner, r.prompt, r.top_n, key, r.candidates))
        except _Permanent as exc:
            report.failed[key] = f"API request failed: {exc}"
    return inner, report, pending


def _openai(backend: Backend) -> OpenAIBackend:
    """The OpenAI backend that answers behind any layers in front of it (its cost layer, say); BackendError
    when it is another."""
    inner = innermost(backend)
    if not isinstance(inner, OpenAIBackend):
        raise BackendError("the Batch API needs the openai backend behind the cache (--backend openai, cache on)")
    return inner


def _storer(backend: Store) -> Keeper:
    """``store(custom_id, line, candidates, top_n)``: the line's answer read as a synchronous one and kept under
    ``custom_id``; returns the reason of a failure (never kept), or None."""
    inner = _openai(backend.inner)

    def store(cid: str, line: dict[str, Any], candidates: Sequence[str], top_n: int) -> str | None:
        answer: LabelDist | Failure = inner.answer_from_batch(line, candidates, top_n)
        return backend.keep(cid, answer) if isinstance(answer, LabelDist) else answer.reason

    return store


@dataclass
class OpenAIBatcher:
    """The OpenAI backend's Batch API driver (:func:`batcher`), as its options set it: send the
    requests as batches (``batch``), write them for another runner (``file``: ``--batch-file``), or read
    that runner's answers (``results``: ``--batch-results``). What no batch answered is settled as a failure
    of its item with the reason (``fallback = "resubmit"``, after one resubmission), or left to the run to
    send one by one (``"sync"``)."""

    fallback: str = "resubmit"
    file: str | None = None
    results: str | None = None
    poll_s: float = 30.0
    #: The model's batch queue limit in prompt tokens (None: the shipped table's).
    queue_tokens: int | None = None

    def fill(self, backend: Store, requests: Sequence[Request], folder: Path) -> BatchReport:
        """See :meth:`judge.backends.batching.Batcher.fill`; the state file is ``folder/<server and model>.json``."""
        if self.file is not None:
            return write_pending(backend, requests, self.file)
        if self.results is not None:
            report = store_results(backend, requests, self.results)
            why = f"not answered in the batch results file {self.results}"
        else:
            report = fill_cache(backend, requests, state_file(folder, _openai(backend.inner)), poll_s=self.poll_s,
                                resubmit=self.fallback == "resubmit", queue_tokens=self.queue_tokens)
            why = ("not answered through the Batch API: its batch expired or was cancelled, and so was the one "
                   "that resubmitted it")
        if self.fallback == "resubmit":
            report.settled = {**dict.fromkeys(report.missing, f"{why} (--batch-fallback sync sends it one by one)"),
                              **report.failed}
        return report


def batcher(options: Mapping[str, Any]) -> OpenAIBatcher | None:
    """The Batch API driver the backend's ``options`` ask for (``batch``, ``batch_file`` or ``batch_results``), else
    None (:data:`judge.backends.registry.BATCHERS`)."""
    o = HostedOptions.of(options)
    if not o.batched:
        return None
    return OpenAIBatcher(o.batch_fallback, o.batch_file, o.batch_results, o.batch_poll, o.batch_queue_tokens)


__all__ = ["MAX_BYTES", "MAX_REQUESTS", "BatchClient", "BatchOutcome", "BatchReport", "BatchRequest", "BatchState",
           "OpenAIBatcher", "batch_request", "batcher", "fill_cache", "read_batch_results", "split_files", "state_file",
           "state_path_for", "store_results", "write_batch_file", "write_pending"]
