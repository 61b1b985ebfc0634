"""Where a run's model work goes when it runs on a Ray cluster: the typed options of ``--ray``.

One dataclass, :class:`RayOptions`, holds them; its fields' metadata give each one's command-line flag
(``--ray``, ``--ray-actors``, ...), its key in a config's ``[run]`` table (``ray``, ``ray_actors``, ...) and
its help, so the flags of ``judge run``, ``score``, ``bench``, ``compare`` and ``fit``, the TOML keys and the table in
docs/distributed.md come from one place; a run's :class:`judge.engine.session.Session` turns them into the pool
its methods get their backends from. Nothing here imports Ray: the options are read, checked and printed without it (the
extra is needed only to run).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..core.errors import InputError
from ..core.settings import Settings, setting


@dataclass(frozen=True)
class RayOptions:
    """A Ray cluster and the actors a run keeps on it. Each actor holds one backend built from the method's
    spec and answers units of work; the driver (the ``judge`` process) plans, keeps the cache and writes
    every output (docs/distributed.md)."""

    address: str = setting(
        "run the model work on a Ray cluster: auto (the cluster this machine belongs to), local (start "
        "one here, as Ray does) or HOST:PORT of its head (also ray://HOST:PORT); needs dialogue-judge[ray]", "auto",
        flag="--ray", key="ray", metavar="ADDRESS")
    actors: int | None = setting(
        "actors (model replicas) to keep on the cluster (default: as many as its CPUs, "
        "or its GPUs with --ray-gpus, hold)")
    cpus: int | None = setting(
        "CPUs each actor reserves; its backend runs that many threads, whatever --threads says "
        "(default: --threads, else 1)")
    gpus: float = setting(
        "GPUs each actor reserves (vLLM replicas: 1, or the tensor_parallel_size they use; "
        "default 0)", 0.0)

    def __post_init__(self) -> None:
        if not self.address.strip():
            raise InputError("must name a cluster: auto, local or HOST:PORT", field="ray")
        for name, low in (("actors", 1), ("cpus", 1)):
            value = getattr(self, name)
            if value is not None and value < low:
                raise InputError(f"must be >= {low}, got {value}", field=RAY.key(name))
        if self.gpus < 0:
            raise InputError(f"must be >= 0, got {self.gpus}", field="ray_gpus")

    def actor_cpus(self, threads: int | None) -> int:
        """CPUs each actor reserves, and the threads its backend runs (threads move no answer and no cache key):
        ``cpus``, else the method's ``threads``, else 1."""
        return self.cpus or threads or 1

    def describe(self, actors: int | None = None, threads: int | None = None) -> str:
        """For logs: the address and the actors (``actors`` of them, each of ``threads``' CPUs) it keeps."""
        count = actors or self.actors
        gpus = f" and {self.gpus:g} GPU" if self.gpus else ""
        return (f"Ray cluster {self.address}: {count or 'as many'} actors of {self.actor_cpus(threads)} CPU{gpus} "
                "each")


#: The flags and ``[run]`` keys of :class:`RayOptions`.
RAY = Settings(RayOptions, "Ray cluster (needs dialogue-judge[ray]; docs/distributed.md)", prefix="ray_")


def add_ray_options(p: argparse.ArgumentParser) -> None:
    """The flags of :class:`RayOptions` (``--ray`` and the per-actor resources) in a group of their own."""
    RAY.add_flags(p)


def ray_from_args(args: argparse.Namespace, base: RayOptions | None = None) -> RayOptions | None:
    """The options the flags give, over ``base`` (a config's ``[run]`` table); None when neither asks for Ray.
    A per-actor flag without ``--ray`` (and no ``[run] ray``) is refused: it would change nothing."""
    given = RAY.given(args)
    if base is None and "address" not in given:
        if given:
            raise InputError("applies to a run on a Ray cluster: give --ray ADDRESS too", field=RAY.flag(next(iter(given))))
        return None
    return replace(base or RayOptions(), **given)


def ray_from_table(table: Mapping[str, Any], path: str) -> RayOptions | None:
    """The options of a config's ``[run]`` table (None when it names no cluster); errors name the key."""
    values = RAY.read(table, path=path, section="run")
    if "address" not in values:
        if values:
            raise InputError("applies to a run on a Ray cluster: give ray = ADDRESS too", file=path,
                             field=f"run.{next(iter(table))}")
        return None
    try:
        return RayOptions(**values)
    except InputError as exc:
        raise InputError(exc.reason, file=path, field=f"run.{exc.field}") from None
