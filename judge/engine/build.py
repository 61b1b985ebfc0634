"""The one place a method spec becomes a ready scorer.

Two steps, so that every mistake a user can make surfaces before a model loads:

* :func:`prepare` resolves names through the registries and checks the spec against the data; what
  that means is its method type's (:meth:`judge.engine.spec.MethodType.prepare`: for an LLM judge the
  prompt, the selector with its quality, the example pool, every item rendered once, manual-set ids,
  scales). Nothing expensive happens here.
* :func:`build` attaches a backend (kept alive by a :class:`BackendPool` while consecutive methods
  share it, behind the SQLite cache unless it is turned off) and returns the scorer its type builds.

The CLI, the harness, ``judge serve``, ``make_judge`` and the benchmark scripts all come through here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict

from ..backends import Backend, create_backend
from ..core.errors import InputError
from ..core.registry import Registry
from ..data.items import Item
from ..data.qualities import Quality
from ..scorers.base import Scorer
from .cache import Cache, CachedBackend
from .kinds import check_future, items_level, method_kinds
from .spec import Backends, MethodSpec, Prepared


def check_names(spec: MethodSpec) -> None:
    """Resolve the spec's names (prompt, selector, backend, scoring rule, classic scorer) without touching data."""
    spec.kind.check_names(spec)


def prepare(
    spec: MethodSpec,
    items: Sequence[Item] | None,
    quality: Quality | None = None,
    *,
    pool: Sequence[Item] | None = None,
    population: Sequence[Item] | None = None,
    seed: int | None = None,
    level: str = "turn",
) -> Prepared:
    """Validate ``spec`` against ``items`` (the items to score) before any model loads.

    ``pool`` is where examples come from; by default ``items`` themselves (their rated ones), each
    item's own conversation kept out by the selector's guard. With ``items`` None (a judge built before
    its data is known, as ``make_judge`` does) the checks that need the data wait for it and the pool
    defaults to the rated items of each ``score`` call. ``population`` is where a template that reads
    ``alternatives`` finds the other replies to each context (None: the items of each ``score`` call;
    the harness gives a set's whole half, so that a sample shows what the set holds). ``seed``
    overrides the spec's first seed.
    A method that reads the next user turn on turn-level items is refused here unless it opts in
    (``allow_future``), before anything loads.
    """
    check_names(spec)
    check_future(spec, method_kinds(spec, quality), items_level(items) if items else level)
    return prepare_checked(spec, items, quality, pool=pool, population=population, seed=seed, level=level)


def prepare_checked(spec: MethodSpec, items: Sequence[Item] | None, quality: Quality | None, *,
                    pool: Sequence[Item] | None, population: Sequence[Item] | None, seed: int | None,
                    level: str) -> Prepared:
    """``prepare`` without the top-level checks (an ensemble's members are covered by its own). A method
    that compares two replies (``MethodType.compares``) scores no item alone: refused here, the path every
    entry point that scores items takes."""
    if spec.kind.compares:
        raise InputError(f"method '{spec.name}' is a {spec.type} method: it compares two replies to one context "
                         "and scores no item alone; run it with judge compare, a [[compare]] cell of judge run, "
                         "or POST /v1/compare of judge serve", field="type")
    return spec.kind.prepare(spec, items, quality, pool=pool, population=population,
                             seed=spec.seeds[0] if seed is None else seed, level=level)


def backend_key(spec: MethodSpec) -> str:
    """What decides which loaded model a method runs on: LLM methods with equal keys share one backend
    (and so can be scheduled together, :mod:`judge.engine.schedule`)."""
    return json.dumps([spec.backend, spec.model, dict(spec.options), asdict(spec.generate)], sort_keys=True,
                      default=str)


def check_needs(backend: Backend, spec: MethodSpec) -> Backend:
    """``backend``, which must have every capability ``spec``'s type needs (InputError naming them if not)."""
    missing = backend.capabilities.lacks(spec.kind.needs)
    if missing:
        raise InputError(f"backend '{backend.name}' cannot do what a {spec.type} method needs "
                         f"({', '.join(missing)})", field="backend")
    return backend


class BackendPool:
    """Backends by settings: consecutive methods with the same backend, model, options and generation
    settings share one loaded model. Each is behind the persistent cache unless ``generate.cache`` is off."""

    def __init__(self) -> None:
        self._key: str | None = None
        self._backend: Backend | None = None
        #: The backend loaded now when it is the cache in front of the model (what a batch answers into).
        self._cached: CachedBackend | None = None
        self._closed: dict[str, int] = {}
        self._settled: dict[str, dict[str, str]] = {}

    def get(self, spec: MethodSpec) -> Backend:
        """The backend ``spec`` runs on, which must have every capability its type needs."""
        key = backend_key(spec)
        if key != self._key or self._backend is None:
            self.close()
            self._backend, self._key = self.create(spec, self._settled.get(key)), key
            self._cached = self._backend if isinstance(self._backend, CachedBackend) else None
        return check_needs(self._backend, spec)

    def cached(self, spec: MethodSpec) -> CachedBackend:
        """The backend ``spec`` runs on, behind the cache (InputError when the spec turns the cache off)."""
        self.get(spec)
        if self._cached is None:
            raise InputError(f"method '{spec.name}' runs without the cache (cache = false), which this needs",
                             field="cache")
        return self._cached

    def settle(self, spec: MethodSpec, failures: dict[str, str]) -> None:
        """Requests of ``spec``'s backend already answered by a failure in this run (a batch that could not
        answer them: cache key -> reason): the backend this pool hands out for ``spec`` fails them with the
        reason instead of sending them (``CachedBackend.settled``)."""
        key = backend_key(spec)
        self._settled.setdefault(key, {}).update(failures)
        if key == self._key and self._cached is not None:
            self._cached.settled.update(failures)

    def create(self, spec: MethodSpec, settled: Mapping[str, str] | None = None) -> Backend:
        """The backend of ``spec``, loaded here, behind the cache unless the spec turns it off (``settled``: its
        requests a batch already failed, :meth:`settle`). A pool that runs the model elsewhere builds another
        (a Ray cluster's driver: :class:`judge.distributed.backend.RayPool`)."""
        backend = create_backend(spec.backend, spec.model, spec.generate, **dict(spec.options))
        return CachedBackend(backend, Cache(spec.generate.cache_path), settled) if spec.generate.cache else backend

    @property
    def key(self) -> str | None:
        """The :func:`backend_key` of the backend loaded now (None: none)."""
        return self._key

    @property
    def current(self) -> Backend | None:
        """The backend loaded now (None before the first LLM method, or for classic scorers)."""
        return self._backend

    def counters(self) -> dict[str, int]:
        """Usage over every backend this pool has held (cache hits and misses, API usage, ...)."""
        live = self._backend.counters() if self._backend is not None else {}
        return {k: self._closed.get(k, 0) + live.get(k, 0) for k in sorted({*self._closed, *live})}

    def close(self) -> None:
        if self._backend is not None:
            self._closed = self.counters()
            self._backend.close()
        self._backend, self._key, self._cached = None, None, None


#: Pools that run a method's model elsewhere, by the name of where (``pool(options, log) -> BackendPool``): the
#: layer a run's ``--ray`` puts around every backend (:class:`judge.distributed.backend.RayPool`, imported
#: only when a run asks for it).
POOLS: Registry[Callable[..., BackendPool]] = Registry("pool", "judge.pools")
POOLS.register_lazy("ray", "judge.distributed.backend:RayPool")


def build(prepared: Prepared, backends: Backends) -> Scorer:
    """The scorer of a prepared spec (loads the model on first use)."""
    return prepared.spec.kind.build(prepared, backends)


def build_scorer(
    spec: MethodSpec,
    items: Sequence[Item],
    quality: Quality | None = None,
    *,
    pool: Sequence[Item] | None = None,
    seed: int | None = None,
    backends: BackendPool | None = None,
) -> Scorer:
    """``prepare`` then ``build``: the scorer for ``items`` (see :func:`prepare` for the pool default)."""
    return build(prepare(spec, items, quality, pool=pool, seed=seed), backends or BackendPool())
