"""Loader for users' own data: JSON Lines, one turn-level or dialog-level record per line.

Validation is strict (unknown keys, wrong types, blank texts, unknown speakers, duplicate ids,
non-finite scores are all errors) so that mistakes surface at load time with file, line and field,
not as odd scores later. The whole file is checked before anything is returned.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..data.items import Item
from ..data.qualities import Scale, annotated_name, check_scale_bounds
from ._common import (
    _where,
    assign_groups,
    check_unicode,
    check_unique_ids,
    dataset_name,
    get_field,
    non_blank,
    parse_json,
    parse_turns,
    string_list,
    to_number,
    type_name,
    unreadable,
)
from .contexts import context_texts
from .groups import GroupIndex

#: Every top-level key a record may have.
ALLOWED_KEYS = ("id", "context", "response", "dialog", "reference", "fact", "next_user", "system", "group", "scores",
                "scales")
_TURN_ONLY = ("context", "response", "reference", "next_user")


def from_text(text: str, file: str, dataset: str) -> list[Item]:
    """Items from JSONL text; blank lines are skipped; InputError(file, line, field) on any problem."""
    # Split on "\n" only: str.splitlines() would also split on U+2028, U+0085 etc., which JSON
    # allows unescaped inside strings.
    records = [(number, parse_json(line, file, line_offset=number - 1))
               for number, line in enumerate(text.split("\n"), start=1) if line.strip()]
    if not records:
        raise InputError("no records (the file is empty or has only blank lines)", file=file)
    return items_from_records(records, file, dataset)


def items_from_records(records: Sequence[tuple[int | str, Any]], file: str, dataset: str) -> list[Item]:
    """Items from already-parsed records, each with where it came from (a line number, or a label such as
    ``items[2]`` for a request body): the same checks and messages as a file, which is one call of this.

    Scale declarations, duplicate ids and automatic groups are resolved across ``records`` together,
    as across the lines of one file.
    """
    items: list[Item] = []
    lines: list[int | str] = []
    explicit_group: list[bool] = []
    declared: dict[str, tuple[Scale, int | str]] = {}  # lower-cased quality -> (scale, first record declaring it)
    for number, record in records:
        item, has_group = _item(record, file, number, dataset)
        _merge_scales(declared, _scales(record.get("scales"), file, number), file, number)
        items.append(item)
        lines.append(number)
        explicit_group.append(has_group)
    check_unique_ids(items, lines, file)
    # A declaration on any line holds for the whole file (scores of every line are checked against it).
    scales = {annotated_name(key, items): scale for key, (scale, _) in declared.items()}
    for item, number in zip(items, lines, strict=True):
        item.scales = dict(scales)
        _check_in_scale(item, declared, file, number)
    # Items without an explicit group get one from their text (see assign_groups).
    auto = [it for it, has in zip(items, explicit_group, strict=True) if not has]
    assign_groups(auto)
    return items


@dataclass
class JsonlScan:
    """What a first pass over a large JSONL file found, so that its items can stream from it again
    (:func:`stream`) with what the whole file decides: the scale declarations (any line's hold for all)
    and the group of every item that names none (:func:`judge.datasets._common.assign_groups`, found on
    hashes of the texts). Every record was checked as :func:`load` checks it."""

    path: Path
    file: str
    dataset: str
    count: int
    declared: dict[str, tuple[Scale, int | str]]
    scales: dict[str, Scale]
    #: Per record, the group it gets from its text (None: the record names its own).
    groups: list[str | None]
    #: The first item, then the first to spell each quality otherwise (what a quality is resolved from).
    samples: list[Item]

    def items(self) -> Iterator[Item]:
        """The file's items again (:func:`stream`)."""
        return stream(self)


def _records(path: str | Path, file: str) -> Iterator[tuple[int, Any]]:
    """(line number, parsed record) of every non-blank line, read one line at a time; the same errors as
    reading the whole text (a missing file, invalid UTF-8 with its line and column, invalid JSON)."""
    try:
        handle = Path(path).open("rb")  # noqa: SIM115 - opened apart so that its errors become InputErrors
    except OSError as e:
        raise unreadable(e, file) from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if raw.endswith(b"\n"):  # lines split on "\n" alone, as ``from_text`` splits them
                raw = raw[:-1]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InputError(f"invalid UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1}); save the file "
                                 "as UTF-8", file=file, record=number) from None
            if line.strip():
                yield number, parse_json(line, file, line_offset=number - 1)


def scan(path: str | Path, dataset: str | None = None) -> JsonlScan:
    """Check every record of a JSONL file as :func:`load` does, keeping only what the whole file decides
    (see :class:`JsonlScan`): memory grows by a few dozen bytes per item, not by the item."""
    file, name = str(path), dataset or dataset_name(path)
    declared: dict[str, tuple[Scale, int | str]] = {}
    ids: set[str] = set()
    index = GroupIndex()
    auto: list[int] = []
    samples: list[Item] = []
    spellings: set[str] = set()
    count = 0
    for number, record in _records(path, file):
        item, has_group = _item(record, file, number, name)
        _merge_scales(declared, _scales(record.get("scales"), file, number), file, number)
        if item.id in ids:
            first = next(n for n, r in _records(path, file) if isinstance(r, dict) and str(r.get("id", "")).strip() == item.id)
            raise InputError(f"duplicate id '{item.id}' (already used by {_where(first)})", file=file, record=number,
                             field="id")
        ids.add(item.id)
        if not has_group:
            index.add(item)
            auto.append(count)
        if not samples or not spellings.issuperset(item.annotations):
            samples.append(item)
            spellings.update(item.annotations)
        count += 1
    if not count:
        raise InputError("no records (the file is empty or has only blank lines)", file=file)
    del ids
    names = index.names(lambda idx: _sequences_at(path, file, name, [auto[i] for i in idx], idx))
    groups: list[str | None] = [None] * count
    for position, group in zip(auto, names, strict=True):
        groups[position] = group
    scales = {annotated_name(key, samples): scale for key, (scale, _) in declared.items()}
    for item in samples:
        item.scales = dict(scales)
    return JsonlScan(Path(path), file, name, count, declared, scales, groups, samples)


def _sequences_at(path: str | Path, file: str, dataset: str, positions: list[int], keys: Sequence[int]
                  ) -> dict[int, tuple[str, ...]]:
    """The turn sequences of the records at ``positions`` (0-based among the records), by ``keys``."""
    wanted = dict(zip(positions, keys, strict=True))
    out: dict[int, tuple[str, ...]] = {}
    for position, (number, record) in enumerate(_records(path, file)):
        if position in wanted:
            out[wanted[position]] = context_texts(_item(record, file, number, dataset)[0])
    return out


def stream(found: JsonlScan) -> Iterator[Item]:
    """The file's items again, in order, one at a time: the items :func:`load` gives (scales and groups
    included), each checked against the scales the whole file declares."""
    for position, (number, record) in enumerate(_records(found.path, found.file)):
        item, _ = _item(record, found.file, number, found.dataset)
        item.scales = dict(found.scales)
        _check_in_scale(item, found.declared, found.file, number)
        group = found.groups[position]
        if group is not None:
            item.group = group
        yield item


def _item(record: Any, file: str, line: int | str, dataset: str) -> tuple[Item, bool]:
    if not isinstance(record, dict):
        raise InputError(f"expected a JSON object per line, got {type_name(record)}", file=file, record=line)
    check_unicode(record, file=file, rec=line)
    unknown = [k for k in record if k not in ALLOWED_KEYS]
    if unknown:
        close = difflib.get_close_matches(unknown[0], ALLOWED_KEYS, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise InputError(f"unknown key{hint}; allowed keys: {', '.join(ALLOWED_KEYS)}", file=file, record=line,
                         field=unknown[0])

    def opt(key: str) -> str | None:
        return non_blank(get_field(record, key, str, file=file, rec=line, required=False))

    if "id" not in record:
        raise InputError("missing required field", file=file, record=line, field="id")
    item_id = get_field(record, "id", str, file=file, rec=line).strip()
    if not item_id:
        raise InputError("empty id", file=file, record=line, field="id")
    group = get_field(record, "group", str, file=file, rec=line, required=False)
    if group is not None and not group.strip():
        raise InputError("empty group (leave the key out to group by context)", file=file, record=line, field="group")
    scores = _scores(record.get("scores"), file, line)
    common: dict[str, Any] = {"id": item_id, "fact": opt("fact"), "system": opt("system"),
                              "group": group.strip() if group is not None else None, "dataset": dataset,
                              "annotations": scores}

    if "dialog" in record:
        both = [k for k in _TURN_ONLY if k in record]
        if both:
            raise InputError(f"a dialog-level record (with 'dialog') cannot have '{both[0]}'", file=file, record=line,
                             field=both[0])
        dialog = parse_turns(record["dialog"], file=file, rec=line, field="dialog", strict_keys=True)
        if not dialog:
            raise InputError("empty dialog", file=file, record=line, field="dialog")
        return Item(level="dialog", dialog=dialog, **common), group is not None

    for key in ("response", "context"):
        if key not in record:
            raise InputError("missing required field: a record needs 'context' and 'response' (turn level) or 'dialog' "
                             "(dialog level)", file=file, record=line, field=key)
    context = parse_turns(record["context"], file=file, rec=line, field="context", strict_keys=True)
    # An empty or blank response is data (a chatbot that said nothing, rated by people): it is
    # loaded as "" and scored; Item.flags reports it.
    response = get_field(record, "response", str, file=file, rec=line)
    return Item(level="turn", context=context, response=response.strip(), next_user=opt("next_user"),
                references=string_list(record.get("reference"), file=file, rec=line, field="reference"),
                **common), group is not None


def _by_quality(raw: Any, file: str, line: int | str, key: str, what: str) -> Iterator[tuple[str, Any, str]]:
    """Each ``(quality, value, field)`` of the object ``raw`` under ``key`` (``what``: what a value is); nothing
    when it is absent."""
    if raw is None:
        return
    if not isinstance(raw, dict):
        raise InputError(f"expected an object of quality -> {what}, got {type_name(raw)}", file=file, record=line,
                         field=key)
    for quality, value in raw.items():
        if not quality.strip():
            raise InputError("empty quality name", file=file, record=line, field=f"{key}.{quality}")
        yield quality, value, f"{key}.{quality}"


def _scores(raw: Any, file: str, line: int | str) -> dict[str, tuple[float, ...]]:
    """``scores``: quality -> number or list of numbers (finite; booleans and strings rejected)."""
    return {quality: tuple(to_number(v, file=file, rec=line, field=where)
                           for v in (value if isinstance(value, list) else [value]))
            for quality, value, where in _by_quality(raw, file, line, "scores", "number")}


def _scales(raw: Any, file: str, line: int | str) -> dict[str, Scale]:
    """``scales``: quality -> [min, max] (finite numbers, min < max)."""
    out: dict[str, Scale] = {}
    for quality, value, where in _by_quality(raw, file, line, "scales", "[min, max]"):
        if not isinstance(value, list) or len(value) != 2:
            raise InputError(f"expected [min, max], got {type_name(value)}", file=file, record=line, field=where)
        lo, hi = (to_number(v, file=file, rec=line, field=where) for v in value)
        out[quality] = check_scale_bounds(lo, hi, file=file, record=line, field=where)
    return out


def _merge_scales(declared: dict[str, tuple[Scale, int | str]], new: dict[str, Scale], file: str,
                  line: int | str) -> None:
    """Add one line's declarations; a line that contradicts an earlier one is an error naming both."""
    for quality, scale in new.items():
        seen = declared.setdefault(quality.lower(), (scale, line))
        if seen[0] != scale:
            raise InputError(f"scale [{scale[0]:g}, {scale[1]:g}] disagrees with [{seen[0][0]:g}, {seen[0][1]:g}] "
                             f"declared on {_where(seen[1])} (a file has one scale per quality)", file=file,
                             record=line, field=f"scales.{quality}")


def _check_in_scale(item: Item, declared: dict[str, tuple[Scale, int | str]], file: str, line: int | str) -> None:
    for name, values in item.annotations.items():
        if name.lower() not in declared:
            continue
        (lo, hi), where = declared[name.lower()]
        for value in values:
            if not lo <= value <= hi:
                raise InputError(f"score {value:g} is outside the declared {name} scale [{lo:g}, {hi:g}] "
                                 f"({_where(where)})", file=file, record=line, field=f"scores.{name}")
