"""The batch pre-pass: a run's uncached requests answered in bulk, through its backend's batch API, before
the run sends anything (``--batch``, ``batch = true`` under a method's backend options).

Which requests a run will make is the engine's to say, not guessed: :meth:`BatchPlan.collect` runs the
run's own scorers over the run's own items in the run's own order (the replay ``--check`` counts with,
:func:`judge.engine.cost.replay_group`: the same lanes, windows and units, :mod:`judge.scorers.units`; an
ensemble's members on its reference and training sets; a ``judge run`` grid's cells, several cells of one
model in one prefix-ordered pass), on backends that answer nothing. A method whose backend batches (its
options ask the driver registered for it, :data:`judge.backends.registry.BATCHERS`) runs on :class:`_Recorder`: the real backend's identity, settings and tokenizer (so the
same prompts, fitted to the same window, and the same cache keys) with every label request recorded and
answered by a placeholder, behind the cache read-only (:class:`judge.engine.cost.DryCache`), so that what the
SQLite cache holds, and what an earlier cell of the run will have put there, is not asked again. Every
other method runs on :class:`_StandIn`, which answers everything with placeholders and loads nothing.

:meth:`BatchPlan.send` then hands each batched backend's requests, all of the run's cells together (one
submission per model and settings, split only at the provider's limits), to its driver
(:class:`judge.backends.batching.Batcher`) through the run's own backend, so the batch's usage and cost are
the run's; what the batches could not answer is settled on the run's backends
(:meth:`judge.engine.build.BackendPool.settle`) or left to be sent one by one, as the backend's
``batch_fallback`` says. The run then scores as usual and finds the answers in the cache. With
``--batch-file`` the requests are written for another runner and the run stops (:class:`RunStopped`).

``judge score`` and ``judge run`` (``judge bench``) call this where their run starts: ``collect`` before
anything is written (a method that cannot be batched is refused there), ``send`` before the first cell.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..backends import Backend, Capabilities, Failure, Prompt, create_backend
from ..backends.base import uniform
from ..backends.batching import Batcher, BatchReport
from ..backends.layer import Answering, Layer
from ..backends.registry import BATCHERS, has_batch_api
from ..backends.requests import Answer, Request
from ..core.config import default_cache_path
from ..core.errors import InputError, RunStopped
from .build import BackendPool, backend_key
from .cache import CachedBackend
from .cost import DryCache, Entry, replay_group
from .spec import MethodSpec


class _Recorder(Layer):
    """A batched backend with its sending taken out: the real backend's name, model, settings, capabilities
    and tokenizer (so the run's prompts and cache keys), every label request recorded into ``requests`` (in
    the order first asked) and answered by a placeholder. Other kinds of request cannot go through a batch
    API: they are refused, naming the method's backend."""

    def __init__(self, inner: Backend, requests: dict[Request, None]) -> None:
        super().__init__(inner)
        self.requests = requests

    def answer(self, requests: Sequence[Request]) -> Iterator[tuple[int, Answer]]:
        kind = requests[0].kind if requests else "label"
        if kind != "label":
            what = {"hidden": "hidden states", "sequence": "the log-probabilities of a given text",
                    "reason": "a rationale and the answer after it (reason = N)"}[kind]
            raise InputError(f"backend '{self.name}' answers label requests through its batch API, not {what}: "
                             "run this method without the batch options", field="--batch")
        for i, r in enumerate(requests):
            self.requests.setdefault(r, None)
            yield i, uniform(r.candidates)


class _StandIn(Answering):
    """What a method whose backend does not batch runs on in the pre-pass (an ensemble's member on a local
    model, say): nothing is loaded or sent; label requests get a placeholder, hidden states, sequences and
    rationales a failure (its scores are thrown away: only the batched members' requests are wanted)."""

    def __init__(self, spec: MethodSpec) -> None:
        self.name = spec.backend
        self.model_id = str(spec.model or "")
        self.capabilities = Capabilities(full_vocab=True, chat_template=True, batching=True,
                                         max_context=spec.generate.max_context or 1 << 20,
                                         sequence_logprobs=True, hidden_states=True, reason=True)

    def answer(self, requests: Sequence[Request]) -> Iterator[tuple[int, Answer]]:
        for i, r in enumerate(requests):
            yield i, uniform(r.candidates) if r.kind == "label" else Failure("not answered in the batch pre-pass")

    def count_tokens(self, prompt: Prompt) -> int:
        return len(prompt.text) // 4

    def settings(self) -> dict[str, object]:
        return {}

    def close(self) -> None:
        return None


@dataclass
class _Pending:
    """One batched backend's share of the run: the first spec that runs on it (what the run's pool builds
    for it), its driver, and the label requests the cache lacks, in the order the run asks them."""

    spec: MethodSpec
    batcher: Batcher
    requests: dict[Request, None] = field(default_factory=dict)


class _PlanPool(BackendPool):
    """Hands out the pre-pass's backends (:class:`_Recorder` behind a read-only cache for a batched method,
    :class:`_StandIn` for any other), switching where the run switches backends."""

    def __init__(self, plan: BatchPlan) -> None:
        super().__init__()
        self._plan = plan

    def create(self, spec: MethodSpec, settled: Mapping[str, str] | None = None) -> Backend:
        pending = self._plan.pending.get(backend_key(spec))
        if pending is None:
            return _StandIn(spec)
        real = create_backend(spec.backend, spec.model, spec.generate, **dict(spec.options))
        return CachedBackend(_Recorder(real, pending.requests), DryCache(spec.generate.cache_path))


def _model_specs(spec: MethodSpec) -> list[MethodSpec]:
    """The specs that run a model in ``spec``: itself, or an ensemble's members (and theirs)."""
    members = spec.kind.members(spec)
    if members:
        return [m for member in members for m in _model_specs(member)]
    return [spec] if spec.kind.runs_model else []


class BatchPlan:
    """The requests a run will make that its batched backends should answer in bulk first (see the module's
    doc): :meth:`collect` the run's parts (several times for a file streamed a chunk at a time), then
    :meth:`send` once the run's backends exist."""

    def __init__(self) -> None:
        self.pending: dict[str, _Pending] = {}
        self._probed: set[str] = set()

    def collect(self, groups: Sequence[Sequence[Entry]]) -> BatchPlan:
        """Add the uncached label requests of ``groups`` (the run's cells in the run's order, as
        :func:`judge.engine.cost.count_groups` takes them) for every backend whose options ask for a batch
        API. Refuses (InputError) a batched method that cannot be: without the cache, or two models' requests
        in one ``--batch-file``. Nothing is sent or written."""
        batched = [[self.batched(e.prep.spec) for e in g] for g in groups]  # every backend, before any replay
        live = [g for g, flags in zip(groups, batched, strict=True) if any(flags)]
        self._check_files()
        if not live:
            return self
        pool = _PlanPool(self)
        try:
            for group in live:
                replay_group(group, pool)
        finally:
            pool.close()
        return self

    def batched(self, spec: MethodSpec) -> bool:
        """Whether any backend ``spec`` runs on (an ensemble's members' too) batches its requests."""
        specs = _model_specs(spec)
        for s in specs:  # the driver of each backend, recorded the first time its key is seen, when it batches
            key = backend_key(s)
            if key in self._probed:
                continue
            self._probed.add(key)
            batcher = BATCHERS.get(s.backend)(s.options) if has_batch_api(s.backend) else None
            if batcher is not None:
                if not s.generate.cache:
                    raise InputError("the batch's answers reach the run through the cache: drop --no-cache "
                                     f"(cache = false) to batch {s.name}", field="--batch")
                self.pending[key] = _Pending(s, batcher)
        return any(backend_key(s) in self.pending for s in specs)

    def _check_files(self) -> None:
        by_file: dict[str, list[_Pending]] = {}
        for p in self.pending.values():
            if p.batcher.file is not None:
                by_file.setdefault(str(Path(p.batcher.file).expanduser().resolve()), []).append(p)
        for path, shared in by_file.items():
            if len(shared) > 1:
                models = ", ".join(dict.fromkeys(f"{p.spec.model} ({p.spec.name})" for p in shared))
                raise InputError(f"one batch file would hold the requests of several backends ({models}): a "
                                 "runner takes one model and its settings per file; give each its own file",
                                 file=path, field="--batch-file")

    def send(self, backends: BackendPool, log: Callable[[str], None]) -> list[BatchReport]:
        """Answer each batched backend's requests through its driver, on the run's own backend from
        ``backends`` (its usage counts as the run's), recording the batches in ``batches/`` beside the
        method's cache, and settle what they could not answer on ``backends``. The record sits with the answers
        it guards: every run on one cache (``judge score``, ``judge run`` in any folder, ``judge bench``)
        claims its requests in the same state, so none submits what another has in a batch. Raises
        :class:`RunStopped` after writing the files of ``--batch-file``."""
        reports: list[BatchReport] = []
        for p in self.pending.values():
            if not p.requests and p.batcher.file is None:
                continue  # everything is in the cache already
            backend = backends.cached(p.spec)
            where = Path(p.spec.generate.cache_path or default_cache_path()).expanduser().parent / "batches"
            report = p.batcher.fill(backend, list(p.requests), where)
            backends.settle(p.spec, report.settled)
            log(f"judge: batch of {p.spec.model or p.spec.backend}: {report.describe()}")
            reports.append(report)
        written = [r for r in reports if r.written is not None]
        if written:
            files = ", ".join(str(r.written) for r in written)
            raise RunStopped(f"wrote {sum(len(r.missing) for r in written):,} requests to {files} in the Batch API's "
                             "input format and stopped: run them elsewhere (e.g. vllm run-batch -i FILE -o OUT "
                             "--model MODEL), then run this command again with --batch-results OUT in place of "
                             "--batch-file")
        return reports


__all__ = ["BatchPlan"]
