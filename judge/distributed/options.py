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
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any, get_args

from ..core.errors import InputError
from ..engine.fields import close_hint, convert, field_types


def _option(flag: str, key: str, help: str, default: Any = None) -> Any:
    return field(default=default, metadata={"flag": flag, "key": key, "help": help})


@dataclass(frozen=True)
class RayOptions:
    """A Ray cluster and the actors a run keeps on it. Each actor holds one backend built from the method's
    spec and answers units of work; the driver (the ``judge`` process) plans, keeps the cache and writes
    every output (docs/distributed.md)."""

    address: str = _option(
        "--ray", "ray", "run the model work on a Ray cluster: auto (the cluster this machine belongs to), local (start "
        "one here, as Ray does) or HOST:PORT of its head (also ray://HOST:PORT); needs dialogue-judge[ray]", "auto")
    actors: int | None = _option(
        "--ray-actors", "ray_actors", "actors (model replicas) to keep on the cluster (default: as many as its CPUs, "
        "or its GPUs with --ray-gpus, hold)")
    cpus: int | None = _option(
        "--ray-cpus", "ray_cpus", "CPUs each actor reserves; its backend runs that many threads, whatever --threads says "
        "(default: --threads, else 1)")
    gpus: float = _option(
        "--ray-gpus", "ray_gpus", "GPUs each actor reserves (vLLM replicas: 1, or the tensor_parallel_size they use; "
        "default 0)", 0.0)

    def __post_init__(self) -> None:
        if not self.address.strip():
            raise InputError("must name a cluster: auto, local or HOST:PORT", field="ray")
        for name, low in (("actors", 1), ("cpus", 1)):
            value = getattr(self, name)
            if value is not None and value < low:
                raise InputError(f"must be >= {low}, got {value}", field=_meta(name)["key"])
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


def _meta(name: str) -> Mapping[str, Any]:
    return next(f.metadata for f in fields(RayOptions) if f.name == name)


#: The ``[run]`` keys a config may hold (each a field of :class:`RayOptions`), by key.
RUN_KEYS: dict[str, str] = {f.metadata["key"]: f.name for f in fields(RayOptions)}


def add_ray_options(p: argparse.ArgumentParser) -> None:
    """The flags of :class:`RayOptions` (``--ray`` and the per-actor resources) in a group of their own."""
    g = p.add_argument_group("Ray cluster (needs dialogue-judge[ray]; docs/distributed.md)")
    for name, hint in field_types(RayOptions).items():
        kind = next(a for a in (get_args(hint) or (hint,)) if a is not type(None))
        g.add_argument(_meta(name)["flag"], dest=f"ray_{name}", type=kind, default=None,
                       metavar="ADDRESS" if kind is str else "N", help=_meta(name)["help"])


def ray_from_args(args: argparse.Namespace, base: RayOptions | None = None) -> RayOptions | None:
    """The options the flags give, over ``base`` (a config's ``[run]`` table); None when neither asks for Ray.
    A per-actor flag without ``--ray`` (and no ``[run] ray``) is refused: it would change nothing."""
    given = {f.name: getattr(args, f"ray_{f.name}") for f in fields(RayOptions)
             if getattr(args, f"ray_{f.name}", None) is not None}
    if base is None and "address" not in given:
        if given:
            flag = _meta(next(iter(given)))["flag"]
            raise InputError("applies to a run on a Ray cluster: give --ray ADDRESS too", field=flag)
        return None
    return replace(base or RayOptions(), **given)


def ray_from_table(table: Mapping[str, Any], path: str) -> RayOptions | None:
    """The options of a config's ``[run]`` table (None when it names no cluster); errors name the key."""
    values: dict[str, Any] = {}
    types = field_types(RayOptions)
    for key, value in table.items():
        if key not in RUN_KEYS:
            raise InputError(f"unknown key{close_hint(key, RUN_KEYS)}", file=path, field=f"run.{key}")
        name = RUN_KEYS[key]
        try:
            values[name] = convert(key, value, types[name])
        except InputError as exc:
            raise InputError(exc.reason, file=path, field=f"run.{key}") from None
    if "address" not in values:
        if values:
            raise InputError("applies to a run on a Ray cluster: give ray = ADDRESS too", file=path,
                             field=f"run.{next(iter(table))}")
        return None
    try:
        return RayOptions(**values)
    except InputError as exc:
        raise InputError(exc.reason, file=path, field=f"run.{exc.field}") from None


def option_rows() -> list[tuple[str, str, str, str]]:
    """(flag, ``[run]`` key, default, help) of every option, for the docs' table."""
    rows = []
    for f in fields(RayOptions):
        default = "" if f.default is MISSING or f.default is None else str(f.default)
        rows.append((f.metadata["flag"], f.metadata["key"], default, f.metadata["help"]))
    return rows
