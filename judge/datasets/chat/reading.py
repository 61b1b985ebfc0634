"""A chat log's items, loaded whole (:func:`load`) or streamed (:func:`scan`, then :meth:`ChatScan.items`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ...core.errors import InputError
from ...data.items import Item
from .._common import _where
from . import otlp, tabular
from .files import READERS, check_level, records
from .items import ChatLevel, conversation_items
from .messages import Conversation, Where


def conversations(path: str | Path, fmt: str, dataset: str, columns: Mapping[str, str] | None = None
                  ) -> Iterator[Conversation]:
    """The log's conversations in order, each checked; a conversation id used twice is an error."""
    file = str(path)
    if fmt == "otlp":
        found: Iterator[Conversation] = iter(otlp.load_conversations(path, dataset))
    elif fmt == "tabular":
        found = tabular.conversations(path, dataset, columns or {})
    else:
        reader = READERS[fmt]
        found = (reader(record, Where(file, where), dataset) for where, record in records(path, file))
    seen: dict[str, int | str] = {}
    for conv in found:
        if conv.id in seen:
            raise InputError(f"conversation id '{conv.id}' is used twice (first on {_where(seen[conv.id])}); a "
                             "conversation is one record", file=file, record=conv.record, field="id")
        seen[conv.id] = conv.record
        yield conv


def load(path: str | Path, fmt: str, dataset: str, level: str | None = None,
         columns: Mapping[str, str] | None = None) -> list[Item]:
    """Every item of a chat log (``level``: turn, the default; dialog; or both)."""
    return list(scan(path, fmt, dataset, level, columns, keep=True).kept)


@dataclass
class ChatScan:
    """A first pass over a chat log (every record checked, ids unique), so that its items stream from it again
    (:meth:`items`) in little memory: the conversations' ids are kept, not their items."""

    path: Path
    fmt: str
    dataset: str
    level: ChatLevel
    columns: Mapping[str, str]
    count: int = 0
    #: The first item, then the first to carry each rating (what a quality is resolved from).
    samples: list[Item] = field(default_factory=list)
    #: Every item, when the scan was asked to keep them (:func:`load`).
    kept: list[Item] = field(default_factory=list)

    def items(self) -> Iterator[Item]:
        """The log's items again, in order, one at a time."""
        for conv in conversations(self.path, self.fmt, self.dataset, self.columns):
            yield from conversation_items(conv, self.dataset, self.level)


def scan(path: str | Path, fmt: str, dataset: str, level: str | None = None,
         columns: Mapping[str, str] | None = None, *, keep: bool = False) -> ChatScan:
    """Check every record of a chat log, keeping what :class:`ChatScan` needs (``keep``: every item too)."""
    found = ChatScan(Path(path), fmt, dataset, check_level(level), columns or {})
    spellings: set[str] = set()
    for item in found.items():
        if not found.samples or not spellings.issuperset(item.annotations):
            found.samples.append(item)
            spellings.update(item.annotations)
        if keep:
            found.kept.append(item)
        found.count += 1
    if not found.count:
        has = "an assistant reply" if found.level == "turn" else "a message"
        raise InputError(f"no items: no conversation has {has}", file=str(path))
    return found
