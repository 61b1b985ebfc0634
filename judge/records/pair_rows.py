"""The pair row: one pair of replies compared by a pairwise method (``judge compare``, ``[[compare]]`` cells of
``judge run``, ``POST /v1/compare`` of ``judge serve``; built by :func:`judge.engine.compare.pair_row`)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import ClassVar

from .record import Record
from .rows import read_records


@dataclass(frozen=True)
class PairOrder(Record):
    """One order a pairwise judge read (``ab``: a's reply shown first, or ``ba``): p(a's reply is better), the
    order's verdict and the label probabilities as read."""

    order: str
    p_a: float | None
    winner: str
    label_probs: dict[str, float | None]


@dataclass(frozen=True)
class PairRow(Record):
    """One pair's result. ``id`` is ``<item a> vs <item b>``; ``context`` the context both replies answer
    (``ctx:`` + a hash); ``group`` the conversation bootstraps resample; ``human_a``/``human_b`` the items'
    mean ratings for the quality (null without one); ``preference`` p(a's reply is better), the mean over the
    orders read (a tie counting half); ``winner`` (``a``, ``b`` or ``tie``) the orders' common verdict, a tie
    where they disagree; ``consistent`` whether both orders agreed (null with one order); ``tie`` the mean
    probability of the tie label (null without one); ``length_a``/``length_b`` the characters of each reply;
    ``flags`` each item's flags as ``a:<flag>``/``b:<flag>``, and ``same_reply`` when the texts are equal;
    ``n_prompt_tokens`` over both orders; ``prompt_sha`` and ``template_sha`` as an item row's (the prompt texts
    of the orders read, in order, joined by U+001F, are what ``prompt_sha`` hashes; absent from files written
    before they were recorded). A pair of a set that labels its pairs (PandaLM, LLMBar) adds
    ``label`` (the side the humans preferred: ``a``, ``b`` or ``tie``; absent where the annotators have no
    majority),
    ``label_kind`` (``annotators`` or ``gold``) and ``votes`` (each annotator's side), from
    :func:`judge.data.pairs.label_fields`; other pairs write none of them."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"prompt_sha", "template_sha", "label", "label_kind", "votes"})

    id: str
    method: str
    quality: str | None
    context: str
    group: str
    system_a: str
    system_b: str
    item_a: str
    item_b: str
    human_a: float | None
    human_b: float | None
    preference: float | None
    winner: str | None
    consistent: bool | None
    tie: float | None
    orders: tuple[PairOrder, ...]
    length_a: int
    length_b: int
    flags: tuple[str, ...]
    estimated: bool
    complete: bool
    error: str | None
    n_prompt_tokens: int
    prompt_sha: str | None = None
    template_sha: str | None = None
    label: str | None = None
    label_kind: str | None = None
    votes: tuple[str, ...] | None = None


#: Keys a labelled pair's row adds after the others.
LABEL_ROW_KEYS = ("label", "label_kind", "votes")
#: Pair row keys, in the order they are written.
PAIR_ROW_KEYS = tuple(f.name for f in fields(PairRow) if f.name not in LABEL_ROW_KEYS)


def read_pair_rows(path: str | Path) -> list[PairRow]:
    """The complete rows of a pair rows file, checked."""
    return read_records(path, PairRow)
