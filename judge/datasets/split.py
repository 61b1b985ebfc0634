"""Development / test halves of a set, split by conversation so no conversation lands in both.

Choosing a prompt, a selector or ensemble members on the numbers one reports overstates them. A
config can therefore run on ``split = "dev"`` while choosing and on ``split = "test"`` to report,
with the choice fixed. Each conversation goes to one half by a seeded hash of its name, so the halves
are stable across runs, machines and subset sizes. The name is the content fingerprint of the item's
conversation (``item.conversation``, :mod:`judge.datasets.identity`): a registered set's conversation has
one name in every file that holds it (FED-Turn's turns follow the FED-Dial dialog they were cut from, a
release file given by path follows its registered set, and so does a new reply to one of its contexts or
a copy with labels in its texts: :mod:`judge.datasets.contexts`), so a conversation is in one half
across every set and file that rates it. Items built in code without one fall back to their group.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from ..core.errors import InputError
from ..data.items import Item, conversation_of

SPLITS = ("dev", "test")


def split_of(group: str, seed: int = 0) -> str:
    """``"dev"`` or ``"test"`` for one conversation group (half each, by a seeded hash)."""
    digest = hashlib.sha256(f"{seed}:{group}".encode()).digest()
    return "dev" if digest[0] < 128 else "test"


def split_items(items: Sequence[Item], split: str | None, seed: int = 0) -> list[Item]:
    """The items of ``split`` (all of them for None), in file order."""
    if split is None:
        return list(items)
    if split not in SPLITS:
        raise InputError(f"must be one of {', '.join(SPLITS)}, got {split!r}", field="split")
    return [it for it in items if split_of(conversation_of(it), seed) == split]
