"""The actors a run keeps on a Ray cluster: started, checked, replaced when they die, and what each node did.

Each actor (:class:`judge.distributed.worker.Worker`) holds one backend built from the method's spec. When
it says hello the driver checks that it built what the driver plans with (the same backend settings, so its
answers are cached under keys that describe them, and the same judge version); an actor that differs stops
the run with both versions named. An actor that dies (its process killed, its node lost) is replaced by a
new one, placed wherever the cluster has room; the executor gives the pieces it held to the others at once
(:mod:`judge.distributed.executor`), so no piece waits for the replacement. An actor whose backend cannot be
built (a model missing on its node) stops the run with the backend's own message: a new one would fail the
same way.

Progress is counted per node (units of work and items answered there) and written as lines to the run's log:
when an actor is ready, when one dies, every :data:`PROGRESS_EVERY` seconds while work runs, and at the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import BackendError
from ..engine.ray_options import RayOptions
from .worker import BackendRecipe, remote_worker

#: Seconds between two progress lines of the nodes' work.
PROGRESS_EVERY = 30.0
#: Replacements of dead actors a run makes, per actor it keeps, before it stops (something kills every one).
REPLACEMENTS_PER_ACTOR = 3


@dataclass
class Actor:
    """One actor: its slot (which replica), its handle, and once it said hello, where it runs."""

    slot: int
    handle: Any
    hello: Any  # the pending hello (an ObjectRef) until it is answered
    node: str = ""
    ip: str = ""
    pid: int = 0
    ready: bool = False

    def where(self) -> str:
        return f"actor {self.slot} on node {self.node[:8]} ({self.ip}), pid {self.pid}"


@dataclass
class NodeWork:
    """What one node answered: units of work (pieces) and the items they fed."""

    units: int = 0
    items: int = 0


@dataclass
class ActorGroup:
    """``count`` actors of ``recipe`` (their resources from ``options``), checked against ``expected`` (the
    driver's backend identity: name, model id, settings and sequence settings; None until it is known)."""

    ray: Any
    recipe: BackendRecipe
    options: RayOptions
    expected: dict[str, Any] | None
    log: Callable[[str], None]
    count: int = 0
    actors: list[Actor] = field(default_factory=list)
    nodes: dict[str, NodeWork] = field(default_factory=dict)
    replaced: int = 0
    _cls: Any = None
    _said: float = 0.0

    def __post_init__(self) -> None:
        cpus = self.options.actor_cpus(self.recipe.generate.threads)
        self.recipe = self.recipe.with_threads(cpus)
        self._cls = remote_worker(self.ray, cpus, self.options.gpus)
        self.count = self.options.actors or fitting(self.ray.cluster_resources(), cpus, self.options.gpus)
        roomiest = max(([n["Resources"].get("CPU", 0), n["Resources"].get("GPU", 0)] for n in self.ray.nodes()
                        if n.get("Alive")), default=[0, 0])
        if roomiest[0] < cpus or roomiest[1] < self.options.gpus:
            self.log(f"ray: note: no node of the cluster has room for an actor of {self.needs()} yet (the roomiest "
                     f"has {roomiest[0]:g} CPU, {roomiest[1]:g} GPU): waiting for one to join (give --ray-cpus or "
                     "--ray-gpus to fit the nodes there are)")

    def needs(self) -> str:
        """What each actor reserves, as text."""
        gpus = f" and {self.options.gpus:g} GPU" if self.options.gpus else ""
        return f"{self.recipe.generate.threads} CPU{gpus}"

    def start(self) -> None:
        """Start the actors, the first time there is work for them (a run whose every answer is cached starts
        none)."""
        if not self.actors:
            self.actors = [self._start(slot) for slot in range(self.count)]
            self._said = time.monotonic()

    def _start(self, slot: int) -> Actor:
        handle = self._cls.options(scheduling_strategy="SPREAD").remote(self.recipe)
        return Actor(slot, handle, handle.hello.remote())

    # -- readiness -------------------------------------------------------------------------------------
    def starting(self) -> list[Any]:
        """The hellos not answered yet (ObjectRefs to wait on beside the pieces in flight)."""
        return [a.hello for a in self.actors if not a.ready]

    def live(self) -> list[Actor]:
        return [a for a in self.actors if a.ready]

    def said_hello(self, ref: Any) -> Actor | None:
        """The actor whose hello ``ref`` is, now ready (checked against the driver's identity); None when it died
        before answering (it is replaced)."""
        actor = next(a for a in self.actors if not a.ready and a.hello == ref)
        try:
            info = self.ray.get(ref)
        except self.ray.exceptions.RayActorError as exc:
            if exc.actor_init_failed:
                raise BackendError(f"a Ray actor could not build backend '{self.recipe.backend}': "
                                   f"{_last_line(str(exc))}") from None
            self.died(actor, exc)
            return None
        expected = self.expected or {}
        mismatch = {k: (info[k], expected[k]) for k in expected if info.get(k) != expected[k]}
        if mismatch:
            what = "; ".join(f"{k} {theirs!r} there, {ours!r} here" for k, (theirs, ours) in mismatch.items())
            raise BackendError(f"a Ray actor on {info['ip']} built another backend than this driver plans with ({what}): "
                               "install the same judge and model on every node")
        actor.node, actor.ip, actor.pid, actor.ready = info["node"], info["ip"], info["pid"], True
        self.log(f"ray: {actor.where()}: ready")
        return actor

    def died(self, actor: Actor, exc: BaseException, lost: int = 0) -> None:
        """Replace ``actor`` (it died: ``exc``, with ``lost`` pieces unanswered, which the others take) by a new
        one in its slot. Stops the run when actors keep dying."""
        self.replaced += 1
        where = actor.where() if actor.ready else f"actor {actor.slot} (starting)"
        if self.replaced > REPLACEMENTS_PER_ACTOR * self.count:
            raise BackendError(f"Ray actors keep dying ({self.replaced} replaced); the last, {where}: "
                               f"{_last_line(str(exc))}")
        self.log(f"ray: {where} died ({_last_line(str(exc))}); {lost} units of work go to the others; "
                 "starting another actor")
        try:
            self.ray.kill(actor.handle)
        except Exception:  # already gone with its node: nothing to stop
            pass
        self.actors[self.actors.index(actor)] = self._start(actor.slot)

    # -- progress -------------------------------------------------------------------------------------
    def count_work(self, actor: Actor, items: int) -> None:
        """One piece answered on ``actor``'s node, feeding ``items`` items; a progress line when it is time."""
        work = self.nodes.setdefault(f"{actor.node[:8]} ({actor.ip})", NodeWork())
        work.units += 1
        work.items += items
        if time.monotonic() - self._said >= PROGRESS_EVERY:
            self.report()

    def report(self) -> None:
        """A line of what each node did so far."""
        self._said = time.monotonic()
        if self.nodes:
            self.log("ray: done per node: " + "; ".join(node_lines(self.nodes)))

    # -- the end --------------------------------------------------------------------------------------
    def close(self, timeout: float = 60.0) -> None:
        """Close every live actor's backend (llama.cpp records the node's rate then) and stop them all."""
        self.report()
        closing = [a.handle.close.remote() for a in self.actors if a.ready]
        if closing:
            self.ray.wait(closing, num_returns=len(closing), timeout=timeout)
        for a in self.actors:
            try:
                self.ray.kill(a.handle)
            except Exception:  # already gone
                pass
        self.actors = []


def fitting(resources: dict[str, float], cpus: int, gpus: float) -> int:
    """How many actors of ``cpus`` CPUs and ``gpus`` GPUs the cluster's ``resources`` hold (at least one)."""
    n = int(resources.get("CPU", 0) // cpus)
    if gpus:
        n = min(n, int(resources.get("GPU", 0) // gpus))
    return max(1, n)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else text


def node_lines(nodes: dict[str, NodeWork]) -> Sequence[str]:
    """One text per node of what it answered."""
    return [f"node {node}: {w.units} units, {w.items} items" for node, w in sorted(nodes.items())]
