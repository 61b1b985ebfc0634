"""Loader for FED's original release (``fed_data.json``): turn- and dialog-level records in one array."""

from __future__ import annotations

from ..core.errors import InputError
from ..data.items import Item
from ._common import (
    assign_groups,
    get_field,
    non_blank,
    object_records,
    parse_annotations,
    parse_json,
    prefixed_turns,
    split_lines,
    strip_system_prefix,
)


def from_text(text: str, file: str, dataset: str) -> list[Item]:
    """Items of ``fed_data.json`` in file order: records with a ``response`` are turn level, the others dialog
    level; ids ``fed-turn_%05d`` / ``fed-dial_%05d`` count each level separately.

    Numbering turn and dialog records separately in file order reproduces the ids of the
    DSTC10 copies (fed-turn_eval.json / fed-dial_eval.json), which keep the original order.
    """
    items: list[Item] = []
    n_turn = n_dial = 0
    for rec, record in object_records(parse_json(text, file), file, "FED records"):
        context = get_field(record, "context", str, file=file, rec=rec)
        turns = prefixed_turns(split_lines(context), file=file, rec=rec, field="context")
        system = non_blank(get_field(record, "system", str, file=file, rec=rec, required=False))
        # N/A free-text answers are dropped here, as the DSTC10 copy and the FED docs do.
        annotations = parse_annotations(get_field(record, "annotations", dict, file=file, rec=rec), file=file, rec=rec)
        if "response" in record:
            # An empty response is data (kept and flagged by Item.flags), not an error.
            response = strip_system_prefix(get_field(record, "response", str, file=file, rec=rec))
            items.append(Item(id=f"fed-turn_{n_turn:05d}", level="turn", context=turns, response=response,
                              system=system, dataset=dataset, annotations=annotations))
            n_turn += 1
        else:
            if not turns:
                raise InputError("empty dialog", file=file, record=rec, field="context")
            items.append(Item(id=f"fed-dial_{n_dial:05d}", level="dialog", dialog=turns, system=system,
                              dataset=dataset, annotations=annotations))
            n_dial += 1
    # Groups (see assign_groups): FED cuts 3 turn items from each of its 125 conversations, and a
    # later turn's context extends an earlier one's, so "one context is a prefix of the other"
    # joins them; each dialog record (the whole conversation) joins its own turns too. We do not
    # key on the first two turns: many Mitsuku conversations open with the same canned
    # "Hi!" / "Hi there." exchange, which would merge 29 conversations (87 turn items) into one
    # group. Result: 123 groups of 3 turns, plus one of 6 where two Mitsuku conversations share
    # an identical 3-turn context (identical context = same group, as for USR).
    assign_groups(items)
    return items

