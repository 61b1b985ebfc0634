"""Loader for Reliable-Eval (Ji et al., ACL 2022): live chats rated by the crowd worker who held them.

A file (``pass_free(run1).json``, ``pass_free(run2).json``, ``pass_icebreaker.json``) is a JSON array of
HITs (``AssignmentId``, ``HITId``, ``WorkerId``, ``data``); ``data`` holds the worker's conversations, one
per system (``A``..``E``, their persona variants ``A_p``..``E_p``, and ``QualityControl``, a deliberately
degraded bot), each a ``dialogue`` of ``{round, user, bot}`` rounds rated on seven 0-100 sliders (``raw
scores``) that the authors also standardised per worker (``z scores``).

The release stores the two negative qualities (``robotic``, ``repetitive``) already reversed: its value is
100 minus the slider the worker moved, and its z-score the negated z of that slider (the authors' code reverses
them before averaging; the raw MTurk answers in the same repository hold the sliders as moved, and a chat rated
100 on ``robotic`` there is 0 here). So the loader turns them back (:func:`as_rated`): ``robotic`` 90 is a chat
its worker found very robotic, as the quality's name says.

Each conversation is one dialog-level item. Its annotations are the sliders as rated plus ``overall``: the mean
of the seven with the two negative qualities reversed (100 - x), as the paper averages its qualities. The
per-worker z-scores travel in ``Item.meta`` (``z:<quality>``, and ``z:overall`` averaged the same way with the
negative ones negated), with the run, HIT, assignment and worker, so the system-level statistics
(:mod:`judge.stats.system_level`) can use either and say which.

Conversation identity: a conversation is a (HIT, system) chat. Two workers who took one HIT held two
chats, and a worker who met one system twice in a HIT (five HITs of run 2) held two chats too, so the
group is ``<run>/<HIT>/<assignment>/<system>`` with ``#2``, ``#3`` for a repeated system (the item's id
too). The two free-topic runs share systems, never conversations. Where the release holds a whole chat again
at the start of another (twice), the two are one conversation (:func:`_join_repeats`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..core.errors import InputError
from ..data.items import SYSTEM, USER, Item, Turn
from ._common import check_unicode, get_field, parse_json, require_list, to_number, type_name

#: The seven sliders, in the release's order; ``robotic`` and ``repetitive`` are negative qualities.
QUALITIES = ("robotic", "interesting", "fun", "consistent", "fluent", "repetitive", "topic")
NEGATIVE = ("robotic", "repetitive")
#: The sliders' range.
SCALE = (0.0, 100.0)
#: The quality-control bot's system name: degraded on purpose, so every sound judge should rank it last.
QUALITY_CONTROL = "QualityControl"
#: Item ids and groups open with the run, named from the file: the three files never share a conversation.
RUNS = {"pass_free(run1)": "free-run1", "pass_free(run2)": "free-run2", "pass_icebreaker": "icebreaker"}


def run_name(file: str) -> str:
    """The run a file holds (``free-run1``, ``free-run2``, ``icebreaker``), from its name; another name
    (a copy) keeps its stem."""
    stem = file.replace("\\", "/").rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return RUNS.get(stem, stem)


def from_text(text: str, file: str, dataset: str) -> list[Item]:
    """The format loader registered in ``judge.datasets.FORMAT_LOADERS``."""
    return from_records(parse_json(text, file), file, dataset)


def from_records(data: Any, file: str, dataset: str) -> list[Item]:
    """One dialog item per rated conversation of every HIT, in file order."""
    hits = require_list(data, file, "Reliable-Eval HITs")
    run = run_name(file)
    items: list[Item] = []
    for h, hit in enumerate(hits):
        rec = f"#{h}"
        if not isinstance(hit, dict):
            raise InputError(f"expected a HIT object, got {type_name(hit)}", file=file, record=rec)
        check_unicode(hit, file=file, rec=rec)
        ids = {k: get_field(hit, k, str, file=file, rec=rec) for k in ("HITId", "AssignmentId", "WorkerId")}
        rec = f"#{h} ({ids['HITId']})"
        chats = get_field(hit, "data", list, file=file, rec=rec)
        seen: dict[str, int] = {}
        for c, chat in enumerate(chats):
            where = f"data[{c}]"
            if not isinstance(chat, dict):
                raise InputError(f"expected a conversation object, got {type_name(chat)}", file=file, record=rec,
                                 field=where)
            system = get_field(chat, "model", str, file=file, rec=rec, prefix=where + ".").strip()
            if not system:
                raise InputError("empty system name", file=file, record=rec, field=where + ".model")
            seen[system] = seen.get(system, 0) + 1
            repeat = f"#{seen[system]}" if seen[system] > 1 else ""
            conv = f"{run}/{ids['HITId']}/{ids['AssignmentId']}/{system}{repeat}"
            items.append(_item(chat, conv, system, ids, run, dataset, file, rec, where))
    _join_repeats(items)
    return items


def _join_repeats(items: list[Item]) -> None:
    """A chat the release records whole at the start of another (a worker's log written twice, under two
    systems: one chat in run 1, one in run 2) is one conversation: the longer chat joins the shorter one's
    group, and both say so in ``meta["repeats"]`` (the other's id), so they are scored and can be found."""
    opening: dict[tuple[str, ...], Item] = {}
    for it in sorted(items, key=lambda it: len(it.dialog)):
        texts = tuple(t.text for t in it.dialog)
        first = next((opening[texts[:k]] for k in range(2, len(texts) + 1, 2) if texts[:k] in opening), None)
        if first is not None:
            it.group = first.group
            it.meta["repeats"], first.meta["repeats"] = first.id, it.id
        else:
            opening.setdefault(texts, it)


def _item(chat: Mapping[str, Any], conv: str, system: str, ids: Mapping[str, str], run: str, dataset: str,
          file: str, rec: str, where: str) -> Item:
    raw = as_rated(_sliders(chat, "raw scores", file, rec, where), reverse=lambda v: SCALE[1] - v)
    z = as_rated(_sliders(chat, "z scores", file, rec, where), reverse=lambda v: -v)
    annotations: dict[str, tuple[float, ...]] = {q: (v,) for q, v in raw.items()}
    annotations["overall"] = (overall(raw, reverse=lambda v: SCALE[1] - v),)
    meta: dict[str, str | int | float | bool | None] = {
        "run": run, "hit": ids["HITId"], "assignment": ids["AssignmentId"], "worker": ids["WorkerId"]}
    meta.update({f"z:{q}": v for q, v in z.items()})
    meta["z:overall"] = overall(z, reverse=lambda v: -v)
    return Item(id=conv, level="dialog", dialog=_dialog(chat, file, rec, where), system=system, group=conv,
                dataset=dataset, annotations=annotations, meta=meta)


def as_rated(stored: Mapping[str, float], reverse: Callable[[float], float]) -> dict[str, float]:
    """The scores as the worker gave them: the release stores the negative qualities reversed (``reverse``:
    100 - x for the raw sliders, -z for z-scores), and reversing again gives the slider back."""
    return {q: reverse(v) if q in NEGATIVE else v for q, v in stored.items()}


def overall(scores: Mapping[str, float], reverse: Callable[[float], float]) -> float:
    """The mean of the seven qualities with the negative ones reversed (``reverse``: 100 - x for the raw
    sliders, -z for z-scores), so higher is better throughout."""
    return math.fsum(reverse(v) if q in NEGATIVE else v for q, v in scores.items()) / len(scores)


def _sliders(chat: Mapping[str, Any], key: str, file: str, rec: str, where: str) -> dict[str, float]:
    """The seven scores under ``key``, every one present and a finite number (raw ones within 0-100)."""
    value = get_field(chat, key, dict, file=file, rec=rec, prefix=where + ".")
    out = {}
    for q in QUALITIES:
        field = f"{where}.{key}.{q}"
        if q not in value:
            raise InputError(f"missing the {q} score (expected {', '.join(QUALITIES)})", file=file, record=rec,
                             field=field)
        number = to_number(value[q], file=file, rec=rec, field=field)
        if key == "raw scores" and not SCALE[0] <= number <= SCALE[1]:
            raise InputError(f"slider value {number:g} is outside 0-100", file=file, record=rec, field=field)
        out[q] = number
    return out


def _dialog(chat: Mapping[str, Any], file: str, rec: str, where: str) -> tuple[Turn, ...]:
    """The rounds as alternating turns, the worker first (an empty message is kept as "" and flagged)."""
    rounds = get_field(chat, "dialogue", list, file=file, rec=rec, prefix=where + ".")
    if not rounds:
        raise InputError("empty dialogue", file=file, record=rec, field=where + ".dialogue")
    turns: list[Turn] = []
    for r, rnd in enumerate(rounds):
        at = f"{where}.dialogue[{r}]."
        for key, speaker in (("user", USER), ("bot", SYSTEM)):
            text = get_field(rnd, key, str, file=file, rec=rec, prefix=at)
            turns.append(Turn(speaker, text.strip()))
    return tuple(turns)
