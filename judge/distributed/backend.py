"""The driver's side of a run on a Ray cluster: a backend whose model runs on the cluster's actors.

:class:`RayPool` is the :class:`judge.engine.build.BackendPool` of a run with ``--ray``: every method is built
exactly as in a local run (:func:`judge.engine.build`), but the backend it gets is a :class:`RayBackend`:

* for planning, the backend's *identity*, here on the driver: its name, model, settings (so the cache keys of
  a local run), its capabilities and its tokenizer (prompts are fitted to the context window as a local run
  fits them). A backend with a replay (llama.cpp's replay, the vocabulary only: :data:`judge.backends.registry.REPLAYS`) or a free one (the
  mock) is built here for that; any other (vLLM, transformers, a hosted API) is asked through one of the
  actors (:class:`RemoteIdentity`).
* for answers, the actors (:class:`judge.distributed.actors.ActorGroup`), each holding the backend built from
  the same spec: the engine's passes find them through the executor registered for this backend
  (:func:`judge.scorers.units.answer_elsewhere`, :class:`judge.distributed.executor.RayExecutor`), and a direct call is one unit of work shipped the same way.
* the SQLite cache, here: the driver looks every request up before shipping it and stores what comes back.

Ray is imported only when a pool first builds a backend: ``--check``, classic scorers and a run whose every
answer is cached still need the extra installed, but start nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from ..backends.base import Backend, Capabilities, Failure, LabelDist, Prompt
from ..backends.layer import Layer
from ..backends.registry import backend_cost, replay_backend
from ..backends.requests import Answer, Request
from ..core.errors import BackendError, MissingExtraError
from ..engine.build import BackendPool
from ..engine.cache import Cache
from ..engine.ray_options import RayOptions
from ..engine.spec import MethodSpec
from ..scorers.units import Feed, Unit, answer_elsewhere, executor_for
from .actors import ActorGroup
from .executor import RayExecutor
from .worker import BackendRecipe, built


def import_ray() -> Any:
    """The ``ray`` module (the ``ray`` extra), or an error naming the extra to install."""
    try:
        import ray
    except ImportError as exc:
        raise MissingExtraError("running on a Ray cluster (--ray)", "ray", exc.name or "ray") from exc
    return ray


def connect(options: RayOptions) -> Any:
    """Join (or, with ``local``, start) the cluster; the ``ray`` module. ``auto`` finds the cluster this machine
    belongs to (``RAY_ADDRESS``, else the one ``ray start`` began here)."""
    ray = import_ray()
    if not ray.is_initialized():
        try:
            ray.init(address=options.address, log_to_driver=False, configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise BackendError(f"could not reach the Ray cluster at {options.address!r}: {exc}") from exc
    return ray


class RemoteIdentity(Backend):
    """A backend's identity answered by one of the actors (for a backend with no twin to build here): its name,
    settings and capabilities asked once, each token count and single-token check asked as planning needs it."""

    def __init__(self, group: ActorGroup) -> None:
        self._group = group
        group.start()
        self._actor = group.actors[0].handle
        info = group.ray.get(self._actor.identity.remote())
        self.name: str = info["name"]
        self.model_id: str = info["model_id"]
        self.capabilities: Capabilities = info["capabilities"]
        self._settings: dict[str, object] = info["settings"]
        self._sequence: dict[str, object] = info["sequence_settings"]
        self._wrapping: dict[bool, tuple[str, str] | None] = info["wrapping"]
        self._single: dict[str, bool | None] = {}

    def _ask(self, method: str, *args: Any) -> Any:
        try:
            return self._group.ray.get(getattr(self._actor, method).remote(*args))
        except self._group.ray.exceptions.RayActorError:  # it died: ask a live one
            live = self._group.live()
            if not live:
                raise
            self._actor = live[0].handle
            return self._group.ray.get(getattr(self._actor, method).remote(*args))

    def count_tokens(self, prompt: Prompt) -> int:
        return int(self._ask("count_tokens", prompt))

    def single_token(self, text: str) -> bool | None:
        if text not in self._single:
            self._single[text] = self._ask("single_token", text)
        return self._single[text]

    def settings(self) -> dict[str, object]:
        return dict(self._settings)

    def sequence_settings(self) -> dict[str, object]:
        return dict(self._sequence)

    def wrapping(self, chat: bool) -> tuple[str, str] | None:
        return self._wrapping[chat]

    def label_logprobs(self, prompts: Sequence[Prompt], candidates: Sequence[str],
                       top_n: int = 20) -> list[LabelDist | Failure]:
        raise BackendError("a backend's identity answers no request")  # RayBackend answers them on its actors

    def close(self) -> None:
        pass


class RayBackend(Layer):
    """The backend of ``recipe`` with its model on ``options``' cluster (see the module docstring): a
    :class:`Layer` over its identity (name, model, settings, tokenizer, chat wrapping: what planning reads),
    whose answers come from the actors. ``cache``: the driver's SQLite cache (None: the method turned it off)."""

    def __init__(self, recipe: BackendRecipe, options: RayOptions, cache: Cache | None,
                 log: Callable[[str], None]) -> None:
        self.ray = connect(options)
        self.cache = cache
        self.totals: dict[str, int] = {"cache_hits": 0, "cache_misses": 0} if cache is not None else {}
        how = backend_cost(recipe.backend)
        if how == "replay":  # the model's vocabulary only
            identity = replay_backend(recipe.backend, recipe.model, recipe.generate, **dict(recipe.options))
        elif how == "free":  # nothing to load
            identity = recipe.build()
        group = ActorGroup(self.ray, recipe, options, None, log)
        if how not in ("replay", "free"):
            identity = RemoteIdentity(group)
        super().__init__(identity)
        self.group = group
        answer_elsewhere(self, RayExecutor)
        group.expected = built(self.identity)  # what every actor must have built
        log(f"ray: {options.describe(group.count, recipe.generate.threads)}, backend '{recipe.backend}'")

    @property
    def identity(self) -> Backend:
        """The backend that names this one's cache keys and fits its prompts (``inner``)."""
        return self.inner

    @property
    def width(self) -> int:
        """How many actors share the work."""
        return self.group.count

    # -- answers: on the actors ---------------------------------------------------------------------------
    def answer(self, requests: Sequence[Request]) -> Iterator[tuple[int, Answer]]:
        """A direct call: one unit of work, shipped as a pass's are."""
        unit = Unit(0, tuple(requests), tuple(Feed(i, 0) for i in range(len(requests))))
        ((_, answers),) = list(executor_for(self).run([unit]))
        yield from enumerate(answers)

    # -- counters -----------------------------------------------------------------------------------------
    def moved(self, into: dict[str, int], delta: dict[str, int]) -> None:
        """Add ``delta`` (what a piece moved on an actor, or a cache hit or miss here) to ``into`` (a unit's
        share) and to this backend's totals."""
        for key, value in delta.items():
            into[key] = into.get(key, 0) + value
            self.totals[key] = self.totals.get(key, 0) + value

    def counters(self) -> dict[str, int]:
        return dict(self.totals)

    def close(self) -> None:
        try:
            self.group.close()
        finally:
            self.identity.close()
            if self.cache is not None:
                self.cache.close()


class RayPool(BackendPool):
    """:class:`BackendPool` of a run on a Ray cluster: each backend a :class:`RayBackend` (one set of actors per
    model and settings, as a local pool keeps one loaded model), the cache on this driver."""

    def __init__(self, options: RayOptions, log: Callable[[str], None] | None = None) -> None:
        super().__init__()
        self.options = options
        self.log = log or (lambda msg: print(msg, file=sys.stderr))

    def create(self, spec: MethodSpec, settled: Mapping[str, str] | None = None) -> Backend:
        """``spec``'s :class:`RayBackend`; ``settled`` is always empty (a run on a cluster sends no provider
        batch: :meth:`judge.engine.session.Session.plan`)."""
        recipe = BackendRecipe(spec.backend, spec.model, spec.generate, dict(spec.options))
        cache = Cache(spec.generate.cache_path) if spec.generate.cache else None
        return RayBackend(recipe, self.options, cache, self.log)
