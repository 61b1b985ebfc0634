"""What runs inside each Ray actor: one backend built from the method's spec, answering shipped requests.

The actor holds no cache and writes no file: the driver looked every request up before shipping it and
stores what comes back (:mod:`judge.distributed.executor`). It answers a piece of a unit of work exactly as
the driver's own backend would (:func:`judge.backends.requests.ask`: one backend call per run of one kind),
and says what that cost here: what its backend's counters moved (tokens evaluated, decodes,
API requests), so the driver charges each lane what its share cost, as a local run does. On close the
backend is closed as a local run closes it (llama.cpp records this node's rate for ``--check``).

This module imports no Ray: :func:`remote_worker` wraps :class:`Worker` as an actor class when a run asks
for the cluster.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..backends import create_backend
from ..backends.base import Backend, Prompt
from ..backends.requests import Answer, Request, ask
from ..core.config import GenerateConfig
from ..core.distribution import SOURCE_VERSION


@dataclass(frozen=True)
class BackendRecipe:
    """How an actor builds its backend: what the driver's ``BackendPool`` would build, with the threads the
    actor reserves (data only: it pickles)."""

    backend: str
    model: str | None
    generate: GenerateConfig
    options: Mapping[str, Any]

    def build(self) -> Backend:
        return create_backend(self.backend, self.model, self.generate, **dict(self.options))

    def with_threads(self, threads: int) -> BackendRecipe:
        return replace(self, generate=replace(self.generate, threads=threads))


@dataclass(frozen=True)
class Reply:
    """An actor's answers to one piece (in request order) and what the backend's counters moved meanwhile."""

    answers: list[Answer]
    moved: dict[str, int]


def built(backend: Backend) -> dict[str, Any]:
    """What a backend was built as: the judge version, its name, model and settings (the driver refuses an actor
    whose backend differs from its own: its answers would be cached under keys that do not describe them)."""
    return {"version": SOURCE_VERSION, "name": backend.name, "model_id": backend.model_id,
            "settings": backend.settings(), "sequence_settings": backend.sequence_settings()}


class Worker:
    """One backend, built once when the actor starts, answering pieces one at a time."""

    def __init__(self, recipe: BackendRecipe) -> None:
        self.backend = recipe.build()

    def hello(self) -> dict[str, Any]:
        """Where it runs and what it :func:`built`, for the driver's checks and progress."""
        import ray

        return {"node": ray.get_runtime_context().get_node_id(), "ip": ray.util.get_node_ip_address(),
                "pid": os.getpid(), **built(self.backend)}

    def answer(self, requests: Sequence[Request]) -> Reply:
        before = self.backend.counters()
        answers = ask(self.backend, requests)
        after = self.backend.counters()
        return Reply(answers, {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)})

    def identity(self) -> dict[str, Any]:
        """What a driver without a local twin of the backend plans with (``RemoteIdentity``)."""
        b = self.backend
        return {**built(b), "capabilities": b.capabilities, "wrapping": {c: b.wrapping(c) for c in (True, False)}}

    def count_tokens(self, prompt: Prompt) -> int:
        return self.backend.count_tokens(prompt)

    def single_token(self, text: str) -> bool | None:
        return self.backend.single_token(text)

    def close(self) -> None:
        self.backend.close()


#: Methods that answer the driver's planning questions: they run beside ``answer`` (their own thread), so a
#: driver fitting the next window's prompts never waits for a piece to finish.
IDENTITY_METHODS = ("identity", "count_tokens", "single_token", "hello")


def remote_worker(ray: Any, cpus: int, gpus: float) -> Any:
    """:class:`Worker` as a Ray actor class reserving ``cpus`` CPUs and ``gpus`` GPUs. Pieces run one at a
    time (the default concurrency group); the identity questions in a group of their own. No automatic
    restart or retry: the driver replaces an actor that died and gives its pieces to the others at once
    (:mod:`judge.distributed.actors`)."""
    cls = type("JudgeWorker", (Worker,), {
        name: ray.method(concurrency_group="identity")(getattr(Worker, name)) for name in IDENTITY_METHODS})
    return ray.remote(num_cpus=cpus, num_gpus=gpus, max_restarts=0, max_task_retries=0,
                      concurrency_groups={"identity": 1})(cls)
