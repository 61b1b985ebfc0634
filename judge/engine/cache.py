"""A persistent SQLite cache of label distributions, and a backend wrapper that uses it.

Keyed by a hash of (backend name, model id, exact prompt text and chat flag, candidates, top_n,
backend settings); the value is the returned ``LabelDist`` as JSON. Failures are never stored, so a
rerun retries exactly what failed. WAL mode and a busy timeout let several processes share one
file; every result is committed as it arrives, so a run killed half-way keeps what it finished.
Nothing secret goes in: backends keep API keys out of ``settings()``, and the key is not an input.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import math
import sqlite3
import threading
import time
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..backends.base import (
    Backend,
    Failure,
    HiddenState,
    LabelDist,
    Prompt,
    Reasoned,
    Reasoning,
    TokenLogprobs,
)
from ..backends.layer import Layer
from ..backends.requests import KINDS, Answer, Request
from ..core.config import default_cache_path as default_cache_path

SCHEMA_VERSION = 1
#: What a hidden-state key adds to its answer's key material: which vector is stored (``HiddenState``).
HIDDEN_MARKER = "final layer at the answer position"


def cache_key(backend: Backend, prompt: Prompt, candidates: Sequence[str], top_n: int) -> str:
    """sha256 over everything that can change the returned distribution."""
    return _digest(_answer_material(backend, prompt, candidates, top_n))


def hidden_key(backend: Backend, prompt: Prompt, candidates: Sequence[str], top_n: int) -> str:
    """The key of a hidden state: the material of its label answer's key (model, settings, prompt text, ...)
    plus a marker, so whatever changes the answer's key changes this one, and the answer keys stay as
    they were."""
    return _digest([*_answer_material(backend, prompt, candidates, top_n), {"hidden": HIDDEN_MARKER}])


def _answer_material(backend: Backend, prompt: Prompt, candidates: Sequence[str], top_n: int) -> list[object]:
    material = [SCHEMA_VERSION, backend.name, backend.model_id, prompt.text, bool(prompt.chat), list(candidates),
                int(top_n), backend.settings()]
    splits = prompt_splits(backend, prompt)
    if splits:
        material.append(splits)  # absent otherwise: the keys of unsplit prompts stay as they were
    return material


def sequence_key(backend: Backend, prompt: Prompt, continuation: str) -> str:
    """sha256 over everything that can change a continuation's per-token log-probabilities."""
    material = [SCHEMA_VERSION, "sequence", backend.name, backend.model_id, prompt.text, bool(prompt.chat),
                continuation, backend.settings()]
    extra = backend.sequence_settings()
    extra = {**extra, **prompt_splits(backend, prompt)}  # no splits: earlier keys stay as they were
    return _digest([*material, extra] if extra else material)


def reason_key(backend: Backend, prompt: Prompt, candidates: Sequence[str], top_n: int, how: Reasoning) -> str:
    """The key of an answer read after a rationale: the material of the prompt's label answer key (model,
    settings, prompt text, candidates, ...) plus every setting of the rationale (its budget, temperature,
    seed and answer cue) and how the backend generates it (``reason_settings``), so that a rerun with the
    same settings is served the same rationale and answer, and any other setting gets its own."""
    return _digest([*_answer_material(backend, prompt, candidates, top_n),
                    {"reason": how.material(), **backend.reason_settings()}])


def request_key(backend: Backend, request: Request) -> str:
    """The cache key of a request's answer (:mod:`judge.backends.requests`), whatever its kind: what a
    driver that answers requests elsewhere (another process, a batch API) looks up and stores under."""
    if request.kind == "sequence":
        return sequence_key(backend, request.prompt, request.continuation)
    if request.kind == "reason":
        assert request.reasoning is not None
        return reason_key(backend, request.prompt, request.candidates, request.top_n, request.reasoning)
    key = hidden_key if request.kind == "hidden" else cache_key
    return key(backend, request.prompt, request.candidates, request.top_n)


def lookup(cache: Cache, backend: Backend, requests: Sequence[Request]) -> list[Answer | None]:
    """The cached answer of each request (None: not cached), keyed by ``backend``'s identity
    (:func:`request_key`): what a driver that answers requests elsewhere serves before shipping the rest. A
    hidden state is cached only with its label answer (both halves, as :func:`store` writes them)."""
    keys = [request_key(backend, r) for r in requests]
    found: dict[str, dict[str, Any]] = {}
    for kind in dict.fromkeys(r.kind for r in requests):
        found[kind] = cache.get_many([k for k, r in zip(keys, requests, strict=True) if r.kind == kind], kind)
    out: list[Answer | None] = [found[r.kind].get(k) for k, r in zip(keys, requests, strict=True)]
    hidden = [i for i, r in enumerate(requests) if r.kind == "hidden" and out[i] is not None]
    if hidden:  # the vector's answer is the label answer's, under the label key
        labels = {i: cache_key(backend, requests[i].prompt, requests[i].candidates, requests[i].top_n)
                  for i in hidden}
        dists = cache.get_many(list(labels.values()))
        for i in hidden:
            dist = dists.get(labels[i])
            out[i] = None if dist is None else HiddenState(out[i], dist)  # type: ignore[arg-type]
    return out


def store(cache: Cache, backend: Backend, request: Request, answer: Answer) -> Answer:
    """Keep a fresh answer to ``request`` under its key (``backend``: the identity that names it), and return
    it; a Failure is returned as it is, never stored (a rerun retries it), and an answer holding a NaN (or
    +inf) becomes a Failure saying why, stored neither. A hidden state is stored as its label answer under
    the answer's own key and its vector under the hidden key."""
    if isinstance(answer, Failure):
        return answer
    reason = unstorable_answer(answer)
    if reason is not None:
        return Failure(reason)
    name, model = backend.name, backend.model_id
    if isinstance(answer, HiddenState):
        cache.put(cache_key(backend, request.prompt, request.candidates, request.top_n), name, model, answer.dist)
        cache.put(request_key(backend, request), name, model, answer.vector, "hidden")
    else:
        cache.put(request_key(backend, request), name, model, answer, request.kind)
    return answer


def prompt_splits(backend: Backend, prompt: Prompt) -> dict[str, int]:
    """Where a prompt's declared parts end, for its cache key, when the backend evaluates them apart (which
    can move an answer): ``shared`` and ``instructions``, each only when declared, so that the key of a
    prompt with neither, or with the shared part only, is the one it had before either existed."""
    if not backend.capabilities.split_shared:
        return {}
    return {k: v for k, v in (("shared", prompt.shared), ("instructions", prompt.instructions)) if v}


def _digest(material: list[object]) -> str:
    blob = json.dumps(material, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def unstorable(dist: LabelDist) -> str | None:
    """Why ``dist`` cannot be cached, or None. A NaN (or +inf) log-probability is a broken backend
    answer: it has no JSON form and must fail its item rather than be stored or crash the run.
    -inf is a valid log-probability (probability 0) and is stored."""
    values = [(repr(k), v) for k, v in dist.logprobs.items()] + [(repr(t), lp) for t, lp in dist.top]
    for where, value in values:
        if math.isnan(value) or value == math.inf:
            return f"backend returned an invalid log-probability {value!r} for {where}"
    return None


def unstorable_answer(answer: Answer) -> str | None:
    """Why an answer of any kind cannot be cached (a NaN or +inf in it), or None."""
    if isinstance(answer, TokenLogprobs):
        bad = any(math.isnan(x) or x == math.inf for x in answer.logprobs)
        return "backend returned an invalid log-probability for a reply token" if bad else None
    if isinstance(answer, HiddenState):
        if any(math.isnan(x) or math.isinf(x) for x in answer.vector):
            return "backend returned an invalid value in a hidden state"
        return unstorable(answer.dist)
    if isinstance(answer, Reasoned):
        return unstorable(answer.dist)
    return unstorable(answer)  # type: ignore[arg-type]


def dist_to_json(dist: LabelDist) -> str:
    """The cache's JSON form of a distribution; refuses what ``unstorable`` names."""
    reason = unstorable(dist)
    if reason is not None:
        raise ValueError(reason)
    # allow_nan only lets -inf through (NaN and +inf were refused above); json.loads reads it back.
    return json.dumps({
        "logprobs": dist.logprobs,
        "top": [[t, lp] for t, lp in dist.top],
        "n_prompt_tokens": dist.n_prompt_tokens,
        "n_evaluated_tokens": dist.n_evaluated_tokens,
        "estimated": dist.estimated,
        "complete": dist.complete,
    }, ensure_ascii=False, allow_nan=True)


def dist_from_json(text: str) -> LabelDist:
    """A cached distribution; ``n_evaluated_tokens`` is 0 because nothing ran through a model for it."""
    return _dist(json.loads(text))


def reasoned_to_json(answer: Reasoned) -> str:
    """The cache's JSON form of an answer after a rationale: the distribution's, with what the model said."""
    return json.dumps({**json.loads(dist_to_json(answer.dist)), "rationale": answer.rationale,
                       "n_generated": answer.n_generated, "unparsed": answer.unparsed},
                      ensure_ascii=False, allow_nan=True)


def reasoned_from_json(text: str) -> Reasoned:
    """A cached answer after a rationale, its rationale and counts as they were when it was computed (a
    replayed row is the row the run wrote); nothing is evaluated for it."""
    d = json.loads(text)
    return Reasoned(_dist(d), str(d["rationale"]), int(d["n_generated"]), int(d["unparsed"]))


def _dist(d: dict[str, Any]) -> LabelDist:
    return LabelDist(
        {str(k): float(v) for k, v in d["logprobs"].items()},
        [(str(t), float(lp)) for t, lp in d["top"]],
        n_prompt_tokens=int(d["n_prompt_tokens"]),
        n_evaluated_tokens=0,
        estimated=bool(d["estimated"]),
        complete=bool(d["complete"]),
    )


def _sequence_to_json(result: TokenLogprobs) -> str:
    return json.dumps({"logprobs": result.logprobs, "n_prompt_tokens": result.n_prompt_tokens}, allow_nan=True)


def _sequence_from_json(text: str) -> TokenLogprobs:
    d = json.loads(text)
    return TokenLogprobs([float(x) for x in d["logprobs"]], n_prompt_tokens=int(d["n_prompt_tokens"]))


def _vector_to_text(vector: Sequence[float]) -> str:
    """A vector as float64 bytes (exact for any float: a served vector equals the computed one), base64 in the
    TEXT column all tables share."""
    return base64.b64encode(array("d", vector).tobytes()).decode("ascii")


def _vector_from_text(text: str) -> list[float]:
    return array("d", base64.b64decode(text)).tolist()


@dataclass(frozen=True)
class Table:
    """Where answers of one request kind are kept, and their text form. Each kind has a table of its own, so
    that their keys never meet (a hidden state's table holds its vector; its answer is a label answer)."""

    name: str
    encode: Callable[[Any], str]
    decode: Callable[[str], Any]


#: The table of each request kind (:data:`judge.backends.requests.KINDS`).
TABLES: dict[str, Table] = {
    "label": Table("dists", dist_to_json, dist_from_json),
    "sequence": Table("sequences", _sequence_to_json, _sequence_from_json),
    "hidden": Table("hidden", _vector_to_text, _vector_from_text),
    "reason": Table("reasoned", reasoned_to_json, reasoned_from_json),
}


def select(db: sqlite3.Connection, table: str, keys: Iterable[str]) -> Iterator[tuple[str, str]]:
    """(key, stored text) of each distinct one of ``keys`` that ``table`` holds, asked 500 keys at a time."""
    uniq = list(dict.fromkeys(keys))
    for start in range(0, len(uniq), 500):
        chunk = uniq[start:start + 500]
        yield from db.execute(f"SELECT key, value FROM {table} WHERE key IN ({','.join('?' * len(chunk))})", chunk)


class Cache:
    """The SQLite file. Thread-safe within a process; WAL + busy timeout across processes."""

    def __init__(self, path: str | Path | None = None, *, busy_timeout: float = 60.0) -> None:
        self.path = Path(path).expanduser() if path else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # isolation_level=None: autocommit; each put is its own short transaction (durable on kill).
        self._db = sqlite3.connect(str(self.path), timeout=busy_timeout, isolation_level=None,
                                   check_same_thread=False)
        self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        self._retry_locked(lambda: self._db.execute("PRAGMA journal_mode = WAL"))
        self._db.execute("PRAGMA synchronous = NORMAL")
        # Label answers in `dists`; per-token answers (likelihood methods) in `sequences`, hidden states in
        # `hidden`, answers after a rationale in `reasoned`, so that their keys never meet (a file written
        # before a table existed gets it here).
        for table in (t.name for t in TABLES.values()):
            create = (f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, backend TEXT NOT NULL, "
                      "model TEXT NOT NULL, value TEXT NOT NULL, created REAL NOT NULL)")
            self._retry_locked(functools.partial(self._db.execute, create))

    @staticmethod
    def _retry_locked(fn: Callable[[], object], tries: int = 50) -> object:
        # Switching to WAL needs a moment of exclusive access; another process opening the file at the
        # same instant can make it fail with "database is locked" despite the busy timeout.
        for i in range(tries):
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or i == tries - 1:
                    raise
                time.sleep(0.05 * (i + 1))
        return None

    def read(self, table: str, keys: Sequence[str]) -> dict[str, str]:
        """The stored text of each of ``keys`` in ``table`` that it holds."""
        with self._lock:
            return dict(select(self._db, table, keys))

    def write(self, table: str, key: str, backend: str, model: str, value: str) -> None:
        with self._lock:
            self._retry_locked(lambda: self._db.execute(
                f"INSERT OR REPLACE INTO {table} (key, backend, model, value, created) VALUES (?, ?, ?, ?, ?)",
                (key, backend, model, value, time.time())))

    def rows(self, table: str, models: Sequence[str] = ()) -> list[tuple[str, str, str, str]]:
        """(backend, model, key, stored text) of every row of ``table`` whose model is one of ``models`` (every
        row when empty): what a cache pack carries (:mod:`judge.engine.cache_pack`)."""
        where = f" WHERE model IN ({','.join('?' * len(models))})" if models else ""
        with self._lock:
            return list(self._db.execute(f"SELECT backend, model, key, value FROM {table}{where}", list(models)))

    def count_by_model(self, table: str) -> list[tuple[str, int]]:
        """(model, rows) of ``table``, by model."""
        with self._lock:
            return list(self._db.execute(f"SELECT model, COUNT(*) FROM {table} GROUP BY model ORDER BY model"))

    def add_missing(self, table: str, rows: Sequence[tuple[str, str, str, str]]) -> None:
        """Keep each (key, backend, model, stored text) of ``rows`` whose key ``table`` lacks, in one
        transaction (a key it holds keeps its value)."""
        now = time.time()
        with self._lock:
            self._retry_locked(lambda: self._db.execute("BEGIN IMMEDIATE"))
            try:
                self._db.executemany(
                    f"INSERT OR IGNORE INTO {table} (key, backend, model, value, created) VALUES (?, ?, ?, ?, ?)",
                    [(*row, now) for row in rows])
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def get_many(self, keys: Sequence[str], kind: str = "label") -> dict[str, Any]:
        """The cached answers of ``kind`` among ``keys`` (a hidden state's vector alone: its answer is a label
        answer, :func:`lookup`)."""
        table = TABLES[kind]
        return {key: table.decode(value) for key, value in self.read(table.name, keys).items()}

    def put(self, key: str, backend: str, model: str, answer: Any, kind: str = "label") -> None:
        """Keep ``answer`` (of ``kind``; a hidden state's vector) under ``key``; refuses what ``unstorable``
        names."""
        table = TABLES[kind]
        self.write(table.name, key, backend, model, table.encode(answer))

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM dists").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachedBackend(Layer):
    """Any backend behind the cache: hits are served without model calls, misses go to the inner
    backend in one batch and are stored as they arrive. Failures are returned, never stored; a
    distribution holding a NaN is not stored either but returned as a Failure saying why.

    ``settled`` (label answers' keys -> a reason) are misses already answered by a failure elsewhere in
    this run (a provider's batch that could not answer them, :mod:`judge.backends.batching`): they fail
    with that reason without being sent again. Nothing of it is stored, so a rerun asks again."""

    def __init__(self, inner: Backend, cache: Cache, settled: Mapping[str, str] | None = None) -> None:
        super().__init__(inner)
        self.cache = cache
        self.settled: dict[str, str] = dict(settled or {})
        self.hits = 0
        self.misses = 0
        #: Calls made to the inner backend (0 when a batch was served entirely from the cache).
        self.calls = 0

    def answer(self, requests: Sequence[Request]) -> Iterator[tuple[int, Answer]]:
        """(index, answer) of ``requests`` (one kind, candidates, ``top_n`` and reasoning), as they come: hits
        first, then the misses, asked of the inner backend in one call (each key once) and stored as they
        arrive (label answers stream, so a kill loses at most the prompt in progress)."""
        found = lookup(self.cache, self.inner, requests)
        todo: dict[str, list[int]] = {}
        for i, hit in enumerate(found):
            if hit is not None:
                self.hits += 1
                yield i, hit
                continue
            self.misses += 1
            key = request_key(self.inner, requests[i])
            if key in self.settled:
                yield i, Failure(self.settled[key])
            else:
                todo.setdefault(key, []).append(i)
        if not todo:
            return
        asked = [requests[places[0]] for places in todo.values()]
        self.calls += 1
        first = asked[0]
        if first.kind == "label":
            answers: Iterable[tuple[int, Answer]] = self.inner.iter_label_logprobs(
                [r.prompt for r in asked], first.candidates, first.top_n)
        else:
            answers = enumerate(KINDS[first.kind].answer(self.inner, asked))
        places = list(todo.values())
        for j, res in answers:
            kept = store(self.cache, self.inner, asked[j], res)
            for i in places[j]:
                yield i, kept

    # -- what a provider's batch driver answers into (:class:`judge.backends.batching.Store`) ------------------
    def key(self, request: Request) -> str:
        return request_key(self.inner, request)

    def kept(self, keys: Sequence[str]) -> set[str]:
        return set(self.cache.read(TABLES["label"].name, keys))

    def keep(self, key: str, answer: LabelDist) -> str | None:
        reason = unstorable(answer)
        if reason is None:
            self.cache.put(key, self.inner.name, self.inner.model_id, answer)
        return reason

    def counters(self) -> dict[str, int]:
        return {**self.inner.counters(), "cache_hits": self.hits, "cache_misses": self.misses}

    def close(self) -> None:
        try:
            self.inner.close()
        finally:
            self.cache.close()

