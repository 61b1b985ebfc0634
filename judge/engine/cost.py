"""What a run will cost before it starts: prompt tokens after prefix reuse, and the wall time they take here.

The count is not modelled, it is replayed: the run's own scorers (:func:`judge.engine.build`) run their own
items in the run's own order (:func:`run_rows`, :func:`run_rows_together`), behind the run's own cache
keys, on a backend that is the llama.cpp backend with the forward pass taken out
(:class:`TokenCounter`). It reads the model's vocabulary only, tokenizes every prompt exactly as the
backend does (chat template, BOS, a family's shared split) and keeps the KV bookkeeping of
:meth:`LlamaCppBackend._eval` (the same code runs: which batches a prompt keeps from the one before),
so its count of tokens evaluated is what the run evaluates. Answers already in the SQLite cache are
served from it and cost nothing; answers the replay "computes" are remembered in memory only
(:class:`DryCache`), so a later cell or ensemble member that the run would serve from the cache is
counted as cached here too. Nothing is written: no cache entry, no result file.

The replay counts the llama.cpp decodes as well (one per batch), since each has a fixed cost whatever it
holds; tokens and decodes become a time through the rate this machine measured for the model
(:mod:`judge.rates`): a short calibration through the real backend on first use, refined by every real run.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..backends import Backend, create_backend
from ..backends.base import Failure, HiddenState, LabelDist, Prompt, TokenLogprobs
from ..backends.llamacpp import LlamaCppBackend
from ..backends.registry import BACKENDS
from ..cache import Cache, CachedBackend, dist_from_json
from ..config import GenerateConfig, default_cache_path
from ..errors import BackendError
from ..items import Item
from ..rates import Rate, UnreadableRates, fit, rate_key, read_rates, write_rate
from ..scorers.llm import LLMJudge
from .build import BackendPool, Prepared, backend_key, build
from .run import run_rows, run_rows_together
from .schedule import LaneCost
from .spec import MethodSpec


class _VocabLlama:
    """Stands in for ``llama_cpp.Llama`` inside :class:`TokenCounter`: the tokenizer of a ``vocab_only``
    load, and the token buffer (``input_ids``, ``n_tokens``) that ``_eval`` reads to decide what it keeps.
    ``eval`` records the tokens as evaluated without computing anything."""

    def __init__(self, vocab: Any, n_ctx: int) -> None:
        self._vocab = vocab
        self.metadata = vocab.metadata
        self.input_ids = np.zeros(n_ctx, dtype=np.intc)
        self.n_tokens = 0

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return list(self._vocab.tokenize(text, add_bos=add_bos, special=special))

    def detokenize(self, tokens: list[int], special: bool = False) -> bytes:
        return bytes(self._vocab.detokenize(tokens, special=special))

    def token_bos(self) -> int:
        return int(self._vocab.token_bos())

    def token_eos(self) -> int:
        return int(self._vocab.token_eos())

    def n_vocab(self) -> int:
        return int(self._vocab.n_vocab())

    def n_ctx(self) -> int:
        return len(self.input_ids)

    def eval(self, tokens: Sequence[int]) -> None:
        self.input_ids[self.n_tokens:self.n_tokens + len(tokens)] = tokens
        self.n_tokens += len(tokens)

    def reset(self) -> None:
        self.n_tokens = 0

    def close(self) -> None:
        self._vocab.close()


def _trained_context(metadata: dict[str, str], path: Path) -> int:
    """The training context a GGUF declares (``<architecture>.context_length``)."""
    try:
        return int(metadata[f"{metadata['general.architecture']}.context_length"])
    except (KeyError, ValueError):
        raise BackendError(f"{path}: the file declares no training context (<architecture>.context_length); "
                           "give generate.max_context") from None


class TokenCounter(LlamaCppBackend):
    """The llama.cpp backend without its forward pass: same model identity and settings (so the same cache
    keys), same tokens, same prefix-reuse rule; every answer is a uniform distribution. Its
    ``tokens_evaluated`` counter is what the real backend's would read after the same calls."""

    def __init__(self, model: str | None, config: GenerateConfig, *, reuse_prefix: bool = True, n_batch: int = 512,
                 **llama_kwargs: Any) -> None:
        llama_cpp = self._identify(model, config, reuse_prefix, n_batch, llama_kwargs)
        self.record_rate = False  # its counts are a replay, not a measurement
        try:
            vocab = llama_cpp.Llama(model_path=str(self.path), vocab_only=True, verbose=False)
        except Exception as exc:
            raise BackendError(f"llama.cpp could not read the vocabulary of {self.path}: {exc}") from exc
        # The real backend's window: the asked context, else the model's training context (``_window``),
        # which a vocabulary-only load reads as 0: it is taken from the file's metadata instead.
        self.llm = _VocabLlama(vocab, config.max_context or _trained_context(vocab.metadata, self.path))
        self._ready()

    def _last_logits(self) -> np.ndarray:
        return np.zeros(self.n_vocab)

    def _logits_at(self, i: int) -> np.ndarray:
        return np.zeros(self.n_vocab)

    def hidden_states(self, prompts: Sequence[Prompt], candidates: Sequence[str],
                      top_n: int = 20) -> list[HiddenState | Failure]:
        """The real backend reads the hidden state in the decode of its label answer: counted as that."""
        return [d if isinstance(d, Failure) else HiddenState([], d) for d in self.label_logprobs(prompts, candidates, top_n)]

    def _extend_all(self, tokens: list[int]) -> np.ndarray:
        """The bookkeeping of :meth:`LlamaCppBackend._extend_all` (a batch start per ``n_batch`` tokens)."""
        marks = self._marks[:-1]
        for i in range(0, len(tokens), self.n_batch):
            marks.append(self.llm.n_tokens)
            self.llm.eval(tokens[i:i + self.n_batch])
            self.decodes += 1
        self._marks = [*marks, self.llm.n_tokens]
        return np.broadcast_to(np.zeros(self.n_vocab), (len(tokens), self.n_vocab))


class DryCache(Cache):
    """The SQLite cache read-only, with what the replay computed kept in memory: a hit is an answer the run
    finds in the cache, whether it was there before or an earlier cell of the run put it there."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path).expanduser() if path else default_cache_path()
        self._lock = threading.Lock()
        self._dists: dict[str, LabelDist] = {}
        self._seqs: dict[str, TokenLogprobs] = {}
        self._hidden: dict[str, list[float]] = {}
        self._ro: sqlite3.Connection | None = None
        if self.path.exists():
            self._ro = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)

    def _rows(self, table: str, keys: Sequence[str]) -> list[tuple[str, str]]:
        if self._ro is None or not keys:
            return []
        marks = ",".join("?" * len(keys))
        try:
            with self._lock:
                return list(self._ro.execute(f"SELECT key, value FROM {table} WHERE key IN ({marks})", list(keys)))
        except sqlite3.OperationalError:  # an older file without this table: nothing cached in it
            return []

    def get_many(self, keys: Sequence[str]) -> dict[str, LabelDist]:
        out = {k: self._dists[k] for k in keys if k in self._dists}
        rest = list(dict.fromkeys(k for k in keys if k not in out))
        for start in range(0, len(rest), 500):
            for key, value in self._rows("dists", rest[start:start + 500]):
                out[key] = dist_from_json(value)
        return out

    def put(self, key: str, backend: str, model: str, dist: LabelDist) -> None:
        self._dists[key] = dist

    def get_sequence(self, key: str) -> TokenLogprobs | None:
        if key in self._seqs:
            return self._seqs[key]
        rows = self._rows("sequences", [key])
        if not rows:
            return None
        d = json.loads(rows[0][1])
        return TokenLogprobs([float(x) for x in d["logprobs"]], n_prompt_tokens=int(d["n_prompt_tokens"]))

    def put_sequence(self, key: str, backend: str, model: str, result: TokenLogprobs) -> None:
        self._seqs[key] = result

    def get_hidden(self, key: str) -> list[float] | None:
        if key in self._hidden:
            return self._hidden[key]
        rows = self._rows("hidden", [key])
        return [] if rows else None  # present is all a count needs; the vector is not decoded

    def put_hidden(self, key: str, backend: str, model: str, vector: Sequence[float]) -> None:
        self._hidden[key] = list(vector)

    def __len__(self) -> int:
        return len(self._dists)

    def close(self) -> None:
        if self._ro is not None:
            self._ro.close()


def estimable(spec: MethodSpec) -> str:
    """How a method's cost is known: ``llamacpp`` (counted), ``mock`` (no model: nothing to count),
    ``hosted`` (an API's speed is not this machine's), ``other`` (a local backend judge cannot count
    yet), ``none`` (no model: classic scorers), ``ensemble`` (members that cannot all be counted).

    An ensemble whose members all run on llama.cpp is replayed like any LLM cell: it scores its members
    itself (on its training sets too, for ``lodo``), and the replay's cache turns the answers that member
    cells of the same run computed first into hits, so nothing is counted twice. Members on several
    models or backends are not counted in the ensemble's cell (``ensemble``): one rate cannot time them."""
    members = spec.kind.members(spec)
    if members:
        one_model = len({backend_key(m) for m in members}) == 1
        return "llamacpp" if one_model and all(estimable(m) == "llamacpp" for m in members) else "ensemble"
    if spec.kind.cost is not None:
        return spec.kind.cost
    name = BACKENDS.canonical(spec.backend)
    if name == "llamacpp":
        return "llamacpp"
    if name == "mock":
        return "mock"
    return "hosted" if name == "openai" else "other"


class CostPool(BackendPool):
    """:class:`BackendPool` that hands out :class:`TokenCounter` backends (behind a :class:`DryCache` where
    the method uses the cache), switching them where the run switches models. Remembers, per backend key,
    the counter's rate identity, for the rate lookup."""

    def __init__(self) -> None:
        super().__init__()
        self.identities: dict[str, dict[str, object]] = {}
        self.labels: dict[str, tuple[str, int]] = {}

    def get(self, spec: MethodSpec) -> Backend:
        key = backend_key(spec)
        if key != self._key or self._backend is None:
            self.close()
            counter = TokenCounter(spec.model, spec.generate, **dict(spec.options))
            self.identities[key] = counter.rate_identity()
            self.labels[key] = (counter.model_id, counter.threads)
            backend: Backend = CachedBackend(counter, DryCache(spec.generate.cache_path)) if spec.generate.cache else counter
            self._backend, self._key = backend, key
        return self._backend


@dataclass
class CellCost:
    """One cell's share of a run: ``items`` to score, ``cached`` of them needing no model (saved rows,
    answers in the cache), the prompt ``tokens`` evaluated after reuse (None: not known, see ``how``) and
    the llama.cpp ``decodes`` they take."""

    label: str
    spec: MethodSpec
    items: int
    cached: int
    tokens: int | None
    how: str
    decodes: int = 0
    note: str = ""


@dataclass
class Entry:
    """A cell to replay: its label, prepared method, items left to score and items already saved."""

    label: str
    prep: Prepared
    todo: Sequence[Item]
    done: int = 0
    counters: dict[str, int] = field(default_factory=dict)


def _ignore(row: dict[str, Any]) -> None:
    pass


def _cached(entry: Entry) -> int:
    """Saved rows plus the items whose answers come from the cache (requests turned into items where a
    method sends several per item)."""
    hits, misses = entry.counters.get("cache_hits", 0), entry.counters.get("cache_misses", 0)
    n = len(entry.todo)
    served = hits if hits + misses == n else round(n * hits / (hits + misses)) if hits + misses else 0
    return entry.done + served


def count_groups(groups: Sequence[Sequence[Entry]], pool: CostPool | None = None,
                 order: Sequence[Entry] | None = None) -> list[CellCost]:
    """Replay ``groups`` (the run's order: a group of several LLM cells of one backend and set is scored
    in one prefix-scheduled pass, as :func:`judge.harness.runner.schedule_groups` makes them) and return
    each cell's cost, in the order of ``order`` (default: as the groups give them)."""
    pool = pool or CostPool()
    out: dict[int, CellCost] = {}
    try:
        for group in groups:
            how = estimable(group[0].prep.spec)
            if how != "llamacpp":
                for e in group:
                    tokens = 0 if how == "none" else None
                    out[id(e)] = CellCost(e.label, e.prep.spec, e.done + len(e.todo), e.done, tokens, how)
                continue
            try:
                _replay(group, pool)
            except BackendError as exc:  # a model not installed yet: the run itself stops on it, saying so
                pool.close()
                for e in group:
                    out[id(e)] = CellCost(e.label, e.prep.spec, e.done + len(e.todo), e.done, None, "missing",
                                          note=str(exc))
                continue
            for e in group:
                out[id(e)] = CellCost(e.label, e.prep.spec, e.done + len(e.todo), _cached(e),
                                      e.counters.get("tokens_evaluated", 0), how, e.counters.get("decodes", 0))
    finally:
        pool.close()
    return [out[id(e)] for e in (order if order is not None else [e for g in groups for e in g])]


def _replay(group: Sequence[Entry], pool: CostPool) -> None:
    """Score the group's items as the run does, on the pool's counters; each entry gets its counters."""
    live = [e for e in group if e.todo]
    if len(live) > 1:
        judges = [build(e.prep, pool) for e in live]
        assert all(isinstance(j, LLMJudge) for j in judges), "only LLM cells are scheduled together"
        costs = [LaneCost() for _ in live]
        run_rows_together([j for j in judges if isinstance(j, LLMJudge)], [e.todo for e in live], [e.label for e in live], [None] * len(live),
                          [_ignore] * len(live), costs=costs)
        for e, cost in zip(live, costs, strict=True):
            e.counters = cost.counters
    elif live:
        e = live[0]
        before = pool.counters()
        run_rows(build(e.prep, pool), e.todo, e.label, None, _ignore)
        after = pool.counters()
        e.counters = {k: after[k] - before.get(k, 0) for k in after}


# -- rates ------------------------------------------------------------------------------------------------

#: The calibration texts: plain prose, a few hundred tokens by any model, and its first sentence.
_CALIBRATION = ("A judge reads a conversation and the reply that follows it, then says how good the reply is. "
                "It weighs whether the reply follows from what was said, whether it is fluent, and whether it "
                "adds something worth reading. ") * 6
_CALIBRATION_SHORT = _CALIBRATION.split(". ", 1)[0] + "."


#: Times each calibration text is evaluated; the fastest counts.
CALIBRATION_REPEATS = 3


def calibrate(spec: MethodSpec, repeats: int = CALIBRATION_REPEATS) -> Rate:
    """Measure the model's rate here: load the real backend with the method's settings, evaluate a warm-up,
    then a short and a long text, each as one decode from an empty KV cache, ``repeats`` times, keeping
    the fastest of each; the two points fit the cost per decode and per token (:func:`judge.rates.fit`).
    Other work on the cores only ever slows a measurement, so the fastest of a few is the machine's rate;
    a single one taken while something else ran gave half of it (benchmarks/README.md,
    leaderboard_schedule)."""
    backend = create_backend(spec.backend, spec.model, spec.generate, **dict(spec.options))
    assert isinstance(backend, LlamaCppBackend)
    backend.record_rate = False
    try:
        backend.label_logprobs([Prompt("Warm up.", chat=False)], ["A"], 1)
        points = [_fastest(backend, text, repeats) for text in (_CALIBRATION_SHORT, _CALIBRATION)]
        return fit(backend.model_id, backend.threads, points[0], points[1])
    finally:
        backend.close()


def _fastest(backend: LlamaCppBackend, text: str, repeats: int) -> tuple[int, float]:
    """(tokens, seconds) of the fastest of ``repeats`` evaluations of ``text`` from an empty KV cache."""
    best: tuple[int, float] | None = None
    for _ in range(max(1, repeats)):
        backend.reset()
        tokens0, seconds0 = backend.tokens_evaluated, backend.eval_seconds
        backend.label_logprobs([Prompt(text, chat=False)], ["A"], 1)
        point = (backend.tokens_evaluated - tokens0, backend.eval_seconds - seconds0)
        if best is None or point[1] < best[1]:
            best = point
    assert best is not None
    return best


def rates_for(pool: CostPool, specs: dict[str, MethodSpec], log: Callable[[str], None],
              measure: Callable[[MethodSpec], Rate] = calibrate) -> dict[str, Rate]:
    """The rate of each backend key in ``specs`` (a method spec per key), from the rate file, measured
    (``measure``) and recorded where the file has none for that model and settings. An unreadable rate
    file is reported through ``log`` and measured again."""
    try:
        known = read_rates()
    except UnreadableRates as exc:
        log(f"note: {exc}; measuring the rates again")
        known = {}
    out: dict[str, Rate] = {}
    for key, spec in specs.items():
        rkey = rate_key(pool.identities[key])
        if rkey not in known:
            model, threads = pool.labels[key]
            log(f"note: no rate measured for {model} ({threads} threads) on this machine: calibrating")
            known[rkey] = measure(spec)
            write_rate(rkey, known[rkey])
        out[key] = known[rkey]
    return out


def counted_spec(spec: MethodSpec) -> MethodSpec:
    """The spec whose model evaluates a cell's counted tokens: an ensemble's first member (``estimable``
    counts an ensemble only when all its members share one model and backend), else the spec itself."""
    members = spec.kind.members(spec)
    return members[0] if members else spec


def duration(seconds: float) -> str:
    """A wall time as a person reads it: ``<1 s``, ``40 s``, ``12 min``, ``4.9 h``."""
    if 0 < seconds < 0.5:
        return "<1 s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def timed(cell: CellCost, rates: dict[str, Rate]) -> float:
    """A counted cell's model time: its tokens and decodes at the rate of the model that evaluates them
    (``rates`` by backend key); 0 for a cell with nothing counted."""
    if cell.how != "llamacpp" or not cell.tokens:
        return 0.0
    return rates[backend_key(counted_spec(cell.spec))].time(cell.tokens, cell.decodes)


def cost_lines(cells: Sequence[CellCost], rates: dict[str, Rate]) -> list[str]:
    """The table ``--check`` prints: one line per cell, then the total (``rates`` by backend key)."""
    what = {"mock": "? (mock)", "hosted": "n/a (hosted API)", "other": "n/a (backend not counted)",
            "ensemble": "n/a (mixed members)", "none": "0 (no model)", "missing": "n/a (model not installed)"}
    width = max([len(c.label) for c in cells] + [4])
    lines = [f"{'cell':<{width}}  {'items':>6}  {'cached':>6}  {'prompt tokens (after reuse)':>27}  est. time"]
    used: dict[str, Rate] = {}
    total_s = 0.0
    unknown = False
    for c in cells:
        if c.how == "llamacpp" and c.tokens == 0:
            tokens, est = "0", "0 s"
        elif c.tokens is not None and c.how == "llamacpp":
            key = backend_key(counted_spec(c.spec))
            used[key] = rates[key]
            total_s += timed(c, rates)
            tokens, est = f"{c.tokens:,}", duration(timed(c, rates))
        else:
            tokens = what[c.how]
            est = "0 s" if c.how in ("mock", "none") else "n/a"
            unknown |= c.how in ("hosted", "other", "missing", "ensemble")
        lines.append(f"{c.label:<{width}}  {c.items:>6,}  {c.cached:>6,}  {tokens:>27}  {est}")
    items = sum(c.items for c in cells)
    tokens_total = sum(c.tokens or 0 for c in cells if c.how == "llamacpp")
    line = f"total: {items:,} items, {tokens_total:,} prompt tokens"
    if used and total_s > 0:
        at = "; ".join(r.describe() for r in used.values())
        line += f", about {duration(total_s)}, {tokens_total / total_s:,.0f} tokens/s at {at}"
    if unknown:
        line += " (cells marked n/a not included)"
    lines.append(line)
    lines += [f"note: {n}" for n in dict.fromkeys(c.note for c in cells if c.note)]
    return lines


def estimate(groups: Sequence[Sequence[Entry]], log: Callable[[str], None],
             measure: Callable[[MethodSpec], Rate] = calibrate,
             order: Sequence[Entry] | None = None) -> tuple[list[CellCost], dict[str, Rate]]:
    """Count ``groups`` and find (or measure) the rates of the models they use: each cell's cost (cells in
    the order of ``order``, default the groups') and the rates by backend key. Benchmarks read these
    numbers; ``--check`` prints them with :func:`cost_lines`."""
    pool = CostPool()
    start = time.perf_counter()
    cells = count_groups(groups, pool, order)
    log(f"judge: counted the prompt tokens of {len(cells)} cells in {time.perf_counter() - start:.1f} s")
    counted = [counted_spec(c.spec) for c in cells if c.how == "llamacpp" and c.tokens]
    specs = {backend_key(spec): spec for spec in counted}
    return cells, rates_for(pool, specs, log, measure)


def report(groups: Sequence[Sequence[Entry]], log: Callable[[str], None],
           measure: Callable[[MethodSpec], Rate] = calibrate, order: Sequence[Entry] | None = None) -> list[str]:
    """The ``--check`` table of ``groups`` (see :func:`estimate`)."""
    return cost_lines(*estimate(groups, log, measure, order))
