"""Loaders of the response-pair sets: two replies to one instruction and the human preference between them.

Each record of these files is a *pair*: one instruction (with its input, if any), two replies, and who
preferred which. A record becomes two turn-level items, one per reply, in the pair's order (the first reply
is the pair's side ``a``); their context is the instruction as one user turn. What makes them a pair rides on
the items, so that every path that loads a set (``judge compare --dataset``, ``judge run``, the split) keeps it:

* ``meta["labelled_pair"]``: the record's index in the file, shared by its two items, and
  ``meta["label_kind"]``: how the set labels its pairs (``annotators``: several people, ties allowed; ``gold``: one label, no tie);
  :func:`judge.data.pairs.pairs_within` pairs exactly these two items and reads the label
  (:class:`judge.data.pairs.PairLabel`);
* ``annotations["preferred"]``: per annotator, 1 when this reply was preferred, 0 when the other one
  was, 0.5 for a tie (a pointwise reading of the same votes: its mean is the reply's share of the votes).

The instruction (with its input) is the conversation (``group``): the two replies of a pair, and every pair of one
instruction, go to one half of the dev/test split, in every file that holds it (LLMBar's GPTInst and
Neighbor share one). The sets:

* **PandaLM** (``pandalm/testset-v1.json``): ``idx``, ``cmp_key`` (the two systems, ``x_y``),
  ``instruction``, ``input``, ``response1``, ``response2``, ``annotator1..3`` (0 tie, 1 the first reply,
  2 the second).
* **LLMBar** (``llmbar/<subset>/dataset.json``): ``input``, ``output_1``, ``output_2``, ``label`` (1 or
  2: the better output); no system names, so the sides are named ``output_1`` and ``output_2``.

Odd but real data is kept and flagged: an empty reply (scored, ``empty_response``), two equal replies
(``same_reply`` in the pair row), and PandaLM's four replies stored as the JSON value ``true`` (a model
answered "True"; read as the text ``True``, noted in ``meta["odd"]``), and one PandaLM record whose instruction is
blank (its input alone is the prompt; noted too).
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..core.errors import InputError
from ..data.items import USER, Item, Turn
from ..data.pairs import LABEL_KEY, PAIR_KEY, PREFERRED
from ._common import check_unicode, get_field, parse_json, require_list

#: PandaLM's annotator fields and what their values mean for the first reply (1: it won, 0: it lost).
PANDALM_ANNOTATORS = ("annotator1", "annotator2", "annotator3")
_PANDALM_CREDIT = {0: 0.5, 1: 1.0, 2: 0.0}


def _instruction_group(text: str) -> str:
    """The conversation of a pair: its instruction, by text (whitespace at the ends ignored)."""
    return "conv:" + hashlib.sha1(text.strip().encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _reply(record: dict[str, Any], key: str, *, file: str, rec: str) -> tuple[str, str | None]:
    """A reply's text and, when the file stored it as a JSON boolean, the note that says so."""
    value = record.get(key)
    if isinstance(value, bool):
        return str(value), f"{key} is the JSON value {str(value).lower()}, read as the text '{value}'"
    return get_field(record, key, str, file=file, rec=rec), None


def _pair_items(*, dataset: str, index: int, context: str, group: str, replies: tuple[str, str],
                systems: tuple[str, str], credit: tuple[float, ...], label: str, odd: list[str]) -> list[Item]:
    """The two items of one pair record (see the module docstring)."""
    out = []
    for side, (reply, system) in enumerate(zip(replies, systems, strict=True)):
        mine = credit if side == 0 else tuple(1.0 - c for c in credit)
        meta: dict[str, str | int | float | bool | None] = {PAIR_KEY: index, LABEL_KEY: label}
        if odd:
            meta["odd"] = "; ".join(odd)
        out.append(Item(id=f"{dataset}_{index:04d}_{side + 1}", level="turn", context=(Turn(USER, context),),
                        response=reply, system=system, group=group, dataset=dataset,
                        annotations={PREFERRED: mine}, meta=meta))
    return out


def pandalm_from_text(text: str, file: str, dataset: str) -> list[Item]:
    """Items of the PandaLM test set: two per record, the annotators' votes on each (see the module doc)."""
    records = require_list(parse_json(text, file), file, "response pairs")
    items: list[Item] = []
    seen: dict[int, int] = {}
    for i, record in enumerate(records):
        rec = f"#{i}"
        check_unicode(record, file=file, rec=rec)
        idx = get_field(record, "idx", int, file=file, rec=rec)
        rec = f"#{i} (idx {idx})"
        if idx in seen:
            raise InputError(f"idx {idx} is also record #{seen[idx]}'s: each pair needs its own", file=file, record=rec,
                             field="idx")
        seen[idx] = i
        key = get_field(record, "cmp_key", str, file=file, rec=rec)
        systems = tuple(s.strip() for s in key.split("_"))
        if len(systems) != 2 or not all(systems) or systems[0] == systems[1]:
            raise InputError(f"expected the two systems compared as 'x_y', got {key!r}", file=file, record=rec,
                             field="cmp_key")
        instruction = get_field(record, "instruction", str, file=file, rec=rec)
        given = get_field(record, "input", str, file=file, rec=rec, required=False) or ""
        if not instruction.strip() and not given.strip():
            raise InputError("an empty instruction and no input: a pair compares two answers to one", file=file,
                             record=rec, field="instruction")
        first, odd1 = _reply(record, "response1", file=file, rec=rec)
        second, odd2 = _reply(record, "response2", file=file, rec=rec)
        credit = tuple(_vote(record, a, file=file, rec=rec) for a in PANDALM_ANNOTATORS)
        context = "\n\n".join(t.strip() for t in (instruction, given) if t.strip())
        blank = ["instruction is blank; the input alone is the prompt"] if not instruction.strip() else []
        items += _pair_items(dataset=dataset, index=idx, context=context, group=_instruction_group(context),
                             replies=(first, second), systems=(systems[0], systems[1]), credit=credit,
                             label="annotators", odd=[n for n in (*blank, odd1, odd2) if n])
    return items


def _vote(record: dict[str, Any], key: str, *, file: str, rec: str) -> float:
    value = get_field(record, key, int, file=file, rec=rec)
    if value not in _PANDALM_CREDIT:
        raise InputError(f"expected 0 (tie), 1 (the first reply) or 2 (the second), got {value}", file=file,
                         record=rec, field=key)
    return _PANDALM_CREDIT[value]


def llmbar_from_text(text: str, file: str, dataset: str) -> list[Item]:
    """Items of an LLMBar subset: two per record, the gold label on each (see the module doc)."""
    records = require_list(parse_json(text, file), file, "response pairs")
    items: list[Item] = []
    for i, record in enumerate(records):
        rec = f"#{i}"
        check_unicode(record, file=file, rec=rec)
        instruction = get_field(record, "input", str, file=file, rec=rec)
        if not instruction.strip():
            raise InputError("an empty instruction: a pair compares two answers to one", file=file, record=rec,
                             field="input")
        first = get_field(record, "output_1", str, file=file, rec=rec)
        second = get_field(record, "output_2", str, file=file, rec=rec)
        label = get_field(record, "label", int, file=file, rec=rec)
        if label not in (1, 2):
            raise InputError(f"expected 1 (output_1 is better) or 2 (output_2 is), got {label}", file=file, record=rec,
                             field="label")
        items += _pair_items(dataset=dataset, index=i, context=instruction.strip(), group=_instruction_group(instruction),
                             replies=(first, second), systems=("output_1", "output_2"),
                             credit=(1.0 if label == 1 else 0.0,), label="gold", odd=[])
    return items
