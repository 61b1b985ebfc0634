"""Loader for the USR original releases (``tc_usr_data.json``, ``pc_usr_data.json``): contexts with rated responses."""

from __future__ import annotations

from typing import Any

from ..core.errors import InputError
from ..data.items import Item
from ._common import (
    assign_groups,
    clean_fact,
    context_turns,
    get_field,
    non_blank,
    object_records,
    parse_annotations,
    parse_json,
    require_list,
    type_name,
)

#: The human reference response of each context; DSTC10 also uses it as the item's `reference`.
GROUND_TRUTH = "Original Ground Truth"
_NOT_QUALITIES = ("response", "model")


def set_name(records: list[Any]) -> str:
    """``persona-usr`` when every fact is PersonaChat persona lines, else ``topical-usr``."""
    facts = [r.get("fact") for r in records if isinstance(r, dict)]
    lines = [ln.strip() for f in facts if isinstance(f, str) for ln in f.split("\n") if ln.strip()]
    if lines and all(ln.startswith("your persona:") for ln in lines):
        return "persona-usr"
    return "topical-usr"


def from_text(text: str, file: str, dataset: str) -> list[Item]:
    """One item per rated response, ids ``topical-usr_%05d`` / ``persona-usr_%05d`` in DSTC10 order, so ids
    and order match ``topical-usr_eval.json`` / ``persona-usr_eval.json``.

    The DSTC10 copies list each context's responses in the original order except that the
    ``Original Ground Truth`` response is moved last; we do the same. Every item gets the
    ground-truth response as its reference, as in the DSTC10 copies.
    """
    records = require_list(parse_json(text, file), file, "USR contexts")
    prefix = set_name(records)
    items: list[Item] = []
    for rec, record in object_records(records, file, "USR contexts"):
        context = context_turns(get_field(record, "context", str, file=file, rec=rec), file=file, rec=rec)
        fact = clean_fact(get_field(record, "fact", str, file=file, rec=rec, required=False))
        responses = get_field(record, "responses", list, file=file, rec=rec)
        parsed = [_response(r, ri, file, rec) for ri, r in enumerate(responses)]
        references = tuple(reply for model, reply, _ in parsed if model == GROUND_TRUTH)
        ordered = [p for p in parsed if p[0] != GROUND_TRUTH] + [p for p in parsed if p[0] == GROUND_TRUTH]
        for model, reply, ratings in ordered:
            items.append(Item(id=f"{prefix}_{len(items):05d}", level="turn", context=context, response=reply,
                              references=references, fact=fact, system=model, dataset=dataset, annotations=ratings))
    assign_groups(items)
    return items


def _response(raw: Any, ri: int, file: str, rec: str) -> tuple[str | None, str, dict[str, tuple[float, ...]]]:
    where = f"responses[{ri}]"
    if not isinstance(raw, dict):
        raise InputError(f"expected an object, got {type_name(raw)}", file=file, record=rec, field=where)
    # An empty response is data (kept and flagged by Item.flags), not an error.
    text = get_field(raw, "response", str, file=file, rec=rec, prefix=where + ".").strip()
    model = non_blank(get_field(raw, "model", str, file=file, rec=rec, required=False, prefix=where + "."))
    scores = {k: v for k, v in raw.items() if k not in _NOT_QUALITIES}
    return model, text, parse_annotations(scores, file=file, rec=rec, field=where)

