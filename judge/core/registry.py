"""One registry mechanism for every extension type: backends, selectors, classic scorers, data formats.

An entry maps a name to a factory. Built-in entries are registered lazily as ``"module:attribute"``
strings, so naming a backend never imports torch or vllm until it is built. Third-party packages add
entries without touching ``judge``: either by calling ``REGISTRY.register(name)`` on import, or by
declaring a Python entry point in the group ``judge.<kind>s`` (``judge.backends``,
``judge.selectors``, ``judge.scorers``, ``judge.formats``) whose value is the factory.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from .errors import UnknownNameError

F = TypeVar("F", bound=Callable[..., object])


class Registry(Generic[F]):
    """Names -> factories of one kind of extension, with lazy imports and entry-point discovery."""

    def __init__(self, kind: str, group: str) -> None:
        #: What the entries are, for error messages ("backend", "selector", ...).
        self.kind = kind
        #: The entry-point group third-party packages declare their factories in.
        self.group = group
        self._entries: dict[str, F | str] = {}
        self._aliases: dict[str, str] = {}
        self._discovered = False

    def register(self, name: str, *, aliases: Iterable[str] = ()) -> Callable[[F], F]:
        """Decorator: register ``factory`` under ``name`` (and ``aliases``)."""

        def deco(factory: F) -> F:
            self._entries[name] = factory
            for alias in aliases:
                self._aliases[alias] = name
            return factory

        return deco

    def register_lazy(self, name: str, target: str, *, aliases: Iterable[str] = ()) -> None:
        """Register ``"package.module:attribute"``, imported only when the entry is first used."""
        self._entries[name] = target
        for alias in aliases:
            self._aliases[alias] = name

    def _discover(self) -> None:
        if self._discovered:
            return
        self._discovered = True
        for ep in entry_points(group=self.group):
            self._entries.setdefault(ep.name, ep.value)

    def canonical(self, name: str) -> str:
        """The registered name ``name`` stands for (aliases resolved); UnknownNameError if none."""
        self._discover()
        name = self._aliases.get(name, name)
        if name not in self._entries:
            raise UnknownNameError(self.kind, name, self.names())
        return name

    def names(self) -> list[str]:
        """Registered names (aliases excluded), sorted."""
        self._discover()
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        self._discover()
        return isinstance(name, str) and (name in self._entries or name in self._aliases)

    def get(self, name: str) -> F:
        """The factory registered under ``name``, importing it on first use."""
        key = self.canonical(name)
        entry = self._entries[key]
        if isinstance(entry, str):
            module, _, attr = entry.partition(":")
            factory = getattr(importlib.import_module(module), attr)
            self._entries[key] = factory
            return factory
        return entry
