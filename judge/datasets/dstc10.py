"""Loader for the DSTC10 Track 5 evaluation files (``<set>_eval.json``): turn-level and dialog-level arrays."""

from __future__ import annotations

from typing import Any

from ..core.errors import InputError
from ..data.items import Item
from ._common import (
    assign_groups,
    check_unique_ids,
    clean_fact,
    context_turns,
    get_field,
    non_blank,
    object_records,
    parse_annotations,
    parse_json,
    parse_turns,
    record_label,
    string_list,
    strip_system_prefix,
)


def from_text(text: str, file: str, dataset: str) -> list[Item]:
    """Items of a DSTC10 ``*_eval.json`` file: each record is turn level unless it has a ``dialog`` (fed-dial)."""
    items: list[Item] = []
    labels: list[str] = []
    for rec, record in object_records(parse_json(text, file), file, "DSTC10 records", record_label):
        items.append(_item(record, file, rec, dataset))
        labels.append(rec)
    check_unique_ids(items, labels, file, field="dialogue_id")
    assign_groups(items)
    return items


def _system(record: dict[str, Any], file: str, rec: str) -> str | None:
    # GRADE sets (DGR, EG) name the generating system `model_name`, the others `model`.
    for key in ("model", "model_name"):
        value = get_field(record, key, str, file=file, rec=rec, required=False)
        if value is not None:
            return non_blank(value)
    return None


def _item(record: dict[str, Any], file: str, rec: str, dataset: str) -> Item:
    """A turn-level record, or a dialog-level one (with ``dialog``, as in fed-dial)."""
    item_id = get_field(record, "dialogue_id", str, file=file, rec=rec)
    fields: dict[str, Any]
    if "dialog" in record:
        turns = parse_turns(record.get("dialog"), file=file, rec=rec, field="dialog")
        if not turns:
            raise InputError("empty dialog", file=file, record=rec, field="dialog")
        fields = {"level": "dialog", "dialog": turns}
    else:
        context = get_field(record, "context", str, file=file, rec=rec)
        # An empty response is data (a chatbot said nothing and people rated it): kept, flagged by Item.flags.
        response = strip_system_prefix(get_field(record, "response", str, file=file, rec=rec))
        fields = {"level": "turn", "context": context_turns(context, file=file, rec=rec), "response": response,
                  "references": string_list(record.get("reference"), file=file, rec=rec, field="reference"),
                  "fact": clean_fact(get_field(record, "fact", str, file=file, rec=rec, required=False))}
    return Item(id=item_id, system=_system(record, file, rec), dataset=dataset, **fields,
                annotations=parse_annotations(get_field(record, "annotations", dict, file=file, rec=rec), file=file,
                                              rec=rec))
