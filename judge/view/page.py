"""The view as one self-contained HTML file: the page's script and style (package data, ours, no
library), and the data embedded as JSON, with each cell's prompts gzip-compressed apart.

The data is laid out for a browser that opens it without waiting: each cell's rows are columns (one
array per field), item texts are stored once per set whatever the number of methods, and the prompts,
by far the largest part and read one item at a time, are one gzip stream per cell, inflated by the
browser's own ``DecompressionStream`` when an item of that cell is first opened. Identical inputs give
byte-identical files (gzip without a timestamp, sorted keys where order is not meaningful).

The page draws its sections from a list (``SECTIONS`` in ``view.js``) and the data keeps an open
``sections`` table, so that another kind of result (``judge estimate``'s answers: ``estimate``) adds a section and its data
without changing the others.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from collections.abc import Iterator
from html import escape
from importlib import resources
from typing import Any

from ..data.items import SYSTEM, USER, Item
from ..harness.summary import paired_comparison
from ..stats import correlation as stats
from ..stats.floor import too_few_text
from .data import View, ViewCell

#: Version of the embedded data's layout (``format`` in it); a page reads only its own.
FORMAT = 1
_SPEAKERS = {USER: "u", SYSTEM: "s"}


def page_data(view: View) -> dict[str, Any]:
    """Everything the page shows, as JSON-ready data (prompts apart: :func:`prompt_blobs`)."""
    return {
        "format": FORMAT,
        "title": view.title,
        "runs": [{"name": r.name, "path": r.path, "description": r.description, "split": r.split, "notes": r.notes}
                 for r in view.runs],
        "items": {key: _items(table) for key, table in sorted(view.items.items())},
        "cells": [_cell(c, i) for i, c in enumerate(view.cells)],
        "pairs": list(_pairs(view)),
        # Further sections' data, by section name (the page lists a section only when its data is here).
        "sections": view.sections,
    }


def _items(table: dict[str, Item]) -> dict[str, Any]:
    """One set's items as columns: what the conversation, the rated reply and the ratings show."""
    items = [table[k] for k in sorted(table)]

    def turns(it: Item) -> list[list[str]]:
        shown = it.context if it.level == "turn" else it.dialog
        return [[_SPEAKERS.get(t.speaker, t.speaker), t.text] for t in shown]

    return {
        "id": [it.id for it in items],
        "level": [it.level for it in items],
        "turns": [turns(it) for it in items],
        "response": [it.response for it in items],
        "references": [list(it.references) for it in items],
        "next_user": [it.next_user for it in items],
        "fact": [it.fact for it in items],
        "ratings": [{q: list(v) for q, v in sorted(it.annotations.items())} for it in items],
        "system": [it.system for it in items],
    }


def _cell(c: ViewCell, index: int) -> dict[str, Any]:
    rows = c.rows
    labels = list(dict.fromkeys(label for r in rows for label in (r.label_probs or {})))
    # The row records' fields as columns (``tokens``: ``n_prompt_tokens``; ``drift``: the view's own check).
    cols: dict[str, Any] = {
        "id": [r.id for r in rows], "score": [r.score for r in rows], "human": [r.human for r in rows],
        "examples": [list(r.examples) for r in rows], "flags": [list(r.flags) for r in rows],
        "estimated": [1 if r.estimated else 0 for r in rows], "complete": [1 if r.complete else 0 for r in rows],
        "error": [r.error for r in rows], "system": [r.system for r in rows],
        "tokens": [r.n_prompt_tokens for r in rows], "prompt_sha": [r.prompt_sha for r in rows],
        "template_sha": [r.template_sha for r in rows],
        "probs": [None if r.label_probs is None else [r.label_probs.get(k) for k in labels] for r in rows],
        "gap": [None if g is None else round(g, 4) for g in stats.rank_gap([r.score for r in rows],
                                                                           [r.human for r in rows])]}
    if any(r.rationale for r in rows):  # the judge's own words, when its method asks for them
        cols["rationale"] = [r.rationale for r in rows]
    cols["drift"] = c.drift if c.drift is not None else [None] * len(rows)
    return {
        "run": c.run, "method": c.method, "dataset": c.dataset, "quality": c.quality, "seed": c.seed,
        "kind": c.kind, "settings": c.settings, "stats": c.stats, "table": c.table, "labels": labels,
        "chat": c.chat, "wrapping": c.wrapping, "prompt_note": c.prompt_note,
        "prompts": f"prompts-{index}" if c.prompts is not None else None, "rows": cols,
    }


def _pairs(view: View) -> Iterator[dict[str, Any]]:
    """Two cells on the same set and quality (each (run, method)'s first seed): every two methods of a run,
    and each method with itself in the other runs. Each with its paired comparison as summary.json
    computes it, and each shared item's rank gap between the two."""
    first: dict[tuple[int, str, str, str | None], int] = {}
    for i, c in enumerate(view.cells):
        first.setdefault((c.run, c.method, c.dataset, c.quality), i)
    chosen = sorted(first.values())
    for x, a in enumerate(chosen):
        for b in chosen[x + 1:]:
            ca, cb = view.cells[a], view.cells[b]
            if (ca.dataset, ca.quality) != (cb.dataset, cb.quality) or ca.table != cb.table:
                continue
            if ca.run != cb.run and ca.method != cb.method:
                continue  # across runs, a method is compared with itself (the pairs would grow as runs squared)
            by_id = {r.id: r for r in cb.rows}
            shared = [r for r in ca.rows if r.id in by_id]
            if not shared:
                continue
            gaps = stats.rank_gap([r.score for r in shared], [by_id[r.id].score for r in shared])
            pair = paired_comparison(ca.rows, cb.rows, view.n_boot, view.seed)
            if pair.get("too_few"):  # below the floor: the page prints this instead of an interval and a p
                pair["too_few_text"] = too_few_text(pair["n_units"])
            yield {"a": a, "b": b, **pair,
                   "ids": [r.id for r in shared], "gap": [None if g is None else round(g, 4) for g in gaps]}


def prompt_blobs(view: View) -> dict[str, str]:
    """Each cell's prompts (one JSON list of texts, row order) gzip-compressed and base64-encoded, by the
    id its cell names; gzip without a file name or time, so equal prompts give equal bytes."""
    out = {}
    for i, c in enumerate(view.cells):
        if c.prompts is not None:
            raw = json.dumps(c.prompts, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            out[f"prompts-{i}"] = base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")
    return out


def script_json(data: Any) -> str:
    """JSON that is safe inside a <script> element: no '<' at all (so neither '</script' nor '<!--')."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


def asset(name: str) -> str:
    """A file of the pages' own assets (package data): script, style, HTML skeleton."""
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


def fill(template: str, parts: dict[str, str]) -> str:
    """``template`` with each marker (a key of ``parts``) replaced by its text, in one pass, so that no part's
    text (a conversation quoting a marker) is ever read as a marker."""
    return re.sub("|".join(map(re.escape, parts)), lambda m: parts[m.group(0)], template)


def render_page(view: View) -> str:
    """The whole page: style, script and data in one file that reads nothing from the network."""
    blobs = "".join(f'<script type="application/octet-stream" id="{k}">{v}</script>\n'
                    for k, v in prompt_blobs(view).items())
    parts = {
        "/*STYLE*/": asset("view.css"),
        "<!--TITLE-->": escape(view.title),
        "<!--DATA-->": f'<script type="application/json" id="judge-data">{script_json(page_data(view))}</script>\n'
                       f"{blobs}",
        "/*SCRIPT*/": asset("view.js"),
    }
    return fill(asset("view.html"), parts)
