"""Connected components: which things are joined, directly or through others (a union-find)."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import TypeVar

T = TypeVar("T", bound=Hashable)


def components(nodes: Iterable[T], links: Iterable[tuple[T, T]]) -> list[list[T]]:
    """The groups of ``nodes`` that ``links`` join, directly or through others, each in the nodes' order and
    listed from its first node; a node no link names stands alone."""
    parent: dict[T, T] = {n: n for n in nodes}

    def find(x: T) -> T:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in links:
        parent[find(a)] = find(b)
    groups: dict[T, list[T]] = {}
    for n in parent:
        groups.setdefault(find(n), []).append(n)
    return list(groups.values())
