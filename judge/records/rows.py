"""The per-item row: one schema for every output (``judge score``, ``judge bench``, ``judge run`` cell
files, ``judge serve`` responses), with fixed key order and float rounding so identical runs write
byte-identical files."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import ClassVar

from ..core.errors import InputError
from ..data.items import Item
from ..data.reference_copy import reference_copy
from ..scorers.base import Score
from .record import R, Record

#: Decimal places of every float in a row.
DIGITS = 6

#: The longest rationale a row holds (a rationale is the judge's, not data: a reader needs its gist).
RATIONALE_CHARS = 2000


def rounded(x: float | None) -> float | None:
    """``x`` rounded to DIGITS places; None for None and non-finite values (JSON has no NaN)."""
    if x is None or not math.isfinite(x):
        return None
    return round(float(x), DIGITS)


def item_flags(item: Item) -> list[str]:
    """Odd but legitimate properties of the input that a reader of the scores should see: the item's
    own (``Item.flags``, e.g. an empty response) and a response that is (nearly) one of its references
    (``response_is_reference`` / ``response_near_reference``, see judge.data.reference_copy)."""
    copy = reference_copy(item)
    return list(item.flags) + ([copy] if copy else [])


@dataclass(frozen=True)
class Reasoned(Record):
    """What a method that reasons first (``reason = N``) adds to its rows: what the judge said (capped at
    RATIONALE_CHARS; None where the item failed), its full length, the tokens it generated, and the sampled
    completions whose answer could not be read."""

    rationale: str | None
    rationale_chars: int
    n_generated_tokens: int
    unparsed: int


@dataclass(frozen=True)
class Row(Record):
    """One item's result, as every output writes it (keys in field order).

    ``estimated`` marks scores read from sampled answers (no log-probabilities); ``complete`` is false when
    the backend returned only its top-N tokens, so a label spelling outside them counted as 0. ``group`` is
    the conversation the leakage guard used (null for plain same-context groups). ``seed`` is the selection
    seed of LLM methods (null for classic scorers). ``prompt_sha`` and ``template_sha`` (written only by a
    method that sends a prompt): the first 16 hex digits of the SHA-256 of the prompt text the model read and
    of the template's source that rendered it. ``meta``: what the item's log said beyond its text (written
    only when there is any). A method that reasons first adds ``rationale``, ``rationale_chars``,
    ``n_generated_tokens`` and ``unparsed``."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"prompt_sha", "template_sha", "meta"})
    INLINE: ClassVar[frozenset[str]] = frozenset({"reasoned"})

    id: str
    method: str
    seed: int | None
    quality: str | None
    human: float | None
    score: float | None
    label_probs: dict[str, float | None] | None
    examples: tuple[str, ...]
    flags: tuple[str, ...]
    estimated: bool
    complete: bool
    error: str | None
    system: str | None
    group: str | None
    n_prompt_tokens: int
    prompt_sha: str | None = None
    template_sha: str | None = None
    meta: dict[str, str | int | float | bool | None] | None = None
    reasoned: Reasoned | None = None

    @property
    def rationale(self) -> str | None:
        """The judge's own words, where its method reasons first and the item did not fail."""
        return self.reasoned.rationale if self.reasoned is not None else None


#: The keys every row holds, in the order they are written.
ROW_KEYS = tuple(f.name for f in fields(Row) if f.name not in Row.OPTIONAL | Row.INLINE)
#: The keys after ROW_KEYS in the rows of a method that sends a prompt, and only in them.
PROMPT_KEYS = ("prompt_sha", "template_sha")
#: The keys after those in the rows of a method that reasons first, and only in them.
REASON_KEYS = tuple(f.name for f in fields(Reasoned))


def item_row(item: Item, score: Score, method: str, quality: str | None, seed: int | None = None) -> Row:
    """The row of ``item`` scored ``score`` by ``method`` (see :class:`Row`)."""
    said = score.said
    return Row(
        id=item.id, method=method, seed=seed, quality=quality,
        human=rounded(item.human(quality) if quality is not None else None),
        score=rounded(score.value) if score.error is None else None,
        label_probs=None if score.label_probs is None else {k: rounded(v) for k, v in score.label_probs.items()},
        examples=tuple(score.examples), flags=tuple(item_flags(item) + [f for f in score.flags if f]),
        estimated=score.estimated, complete=score.complete, error=score.error, system=item.system,
        group=item.group if item.group is None or not item.group.startswith("ctx:") else None,
        n_prompt_tokens=score.n_prompt_tokens, prompt_sha=score.prompt_sha, template_sha=score.template_sha,
        meta=dict(item.meta) if item.meta else None,
        reasoned=None if said is None else Reasoned(said.rationale[:RATIONALE_CHARS] if score.error is None else None,
                                                    len(said.rationale), said.n_generated, said.unparsed))


def read_rows(path: str | Path) -> list[Row]:
    """The complete rows of a rows file (a line cut short by a killed run is not one), checked."""
    return read_records(path, Row)


def iter_rows(path: str | Path) -> Iterator[Row]:
    """:func:`read_rows` one row at a time, for files too large to hold (a million-turn log's rows)."""
    return iter_records(path, Row)


def read_records(path: str | Path, cls: type[R]) -> list[R]:
    """The complete JSON lines of ``path`` as records of ``cls`` (InputError naming the file and line)."""
    return list(iter_records(path, cls))


def iter_records(path: str | Path, cls: type[R]) -> Iterator[R]:
    """:func:`read_records` one record at a time."""
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.endswith("\n"):
                break
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"line {n}: invalid JSON: {exc}", file=str(path)) from None
            yield cls.from_dict(data, file=f"{path}:{n}")
