"""Helpers shared by the dataset loaders: reading files, parsing turns and annotations, groups, scale checks."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..data.items import KNOWN_SPEAKERS, SYSTEM, USER, Item, Turn, normalize_speaker
from ..data.qualities import Quality
from .contexts import context_texts
from .groups import GroupIndex


def csv_rows(text: str, file: str, header_problem: Callable[[list[str]], str | None]
             ) -> tuple[list[str], list[dict[str, str]]]:
    """The header and rows of a CSV file, every row as wide as the header (InputError: a problem
    ``header_problem`` finds in the header, invalid CSV, no data rows, a row of another width)."""
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = list(reader.fieldnames or [])
        problem = header_problem(header)
        if problem:
            raise InputError(problem, file=file, record=1)
        rows = list(reader)
    except csv.Error as e:
        raise InputError(f"invalid CSV: {e}", file=file, record=reader.line_num or None) from None
    if not rows:
        raise InputError("no data rows", file=file)
    for i, row in enumerate(rows):
        if None in row or any(v is None for v in row.values()):
            raise InputError(f"expected {len(header)} columns", file=file, record=f"row {i + 1}")
    return header, rows


def cell_number(text: str, file: str, rec: str, field: str) -> float:
    """A CSV cell read as a finite number (InputError naming the row and column otherwise)."""
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"expected a number, got {text!r}", file=file, record=rec, field=field) from None
    if not math.isfinite(value):
        raise InputError(f"expected a finite number, got {text!r}", file=file, record=rec, field=field)
    return value


def dataset_name(path: str | Path) -> str:
    """Default Item.dataset for a file: its stem without a trailing ``_eval`` (DSTC10 naming)."""
    stem = Path(path).stem
    return stem[: -len("_eval")] if stem.endswith("_eval") else stem


def read_text(path: str | Path) -> str:
    """The file's text (UTF-8, an optional BOM dropped); InputError when missing or not valid UTF-8."""
    file = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise unreadable(e, file) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise InputError(f"invalid UTF-8 (byte 0x{data[e.start]:02x} at column {column}); save the file as UTF-8",
                         file=file, record=line) from None


def unreadable(exc: OSError, file: str) -> InputError:
    """The InputError of a data file that cannot be opened or read."""
    if isinstance(exc, FileNotFoundError):
        return InputError("file not found", file=file)
    if isinstance(exc, IsADirectoryError):
        return InputError("is a directory, expected a data file", file=file)
    return InputError(f"cannot read file: {exc.strerror or exc}", file=file)


def parse_json(text: str, file: str, line_offset: int = 0) -> Any:
    """json.loads with every failure (syntax, huge numbers, deep nesting) turned into an InputError."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"invalid JSON: {e.msg} (column {e.colno})", file=file, record=e.lineno + line_offset) from None
    except (ValueError, RecursionError) as e:
        # ValueError: integers longer than Python's digit limit; RecursionError: absurd nesting.
        raise InputError(f"invalid JSON: {type(e).__name__}: {e}", file=file, record=1 + line_offset) from None


def find_bad_unicode(value: Any, path: str = "") -> str | None:
    """Path of the first string (key or value) holding a lone surrogate (JSON ``"\\ud800"``), else None.

    Python accepts such strings, but they cannot be written back as UTF-8 (prompts, reports),
    so loaders reject them up front with the field's name.
    """
    if isinstance(value, str):
        return path if _has_surrogate(value) else None
    if isinstance(value, list):
        for i, v in enumerate(value):
            found = find_bad_unicode(v, f"{path}[{i}]")
            if found is not None:
                return found
    elif isinstance(value, Mapping):
        for k, v in value.items():
            sub = f"{path}.{k}" if path else str(k)
            if _has_surrogate(str(k)):
                return sub
            found = find_bad_unicode(v, sub)
            if found is not None:
                return found
    return None


def check_unicode(record: Any, *, file: str, rec: str | int) -> None:
    """InputError naming the field when ``record`` holds a lone surrogate (see find_bad_unicode)."""
    bad = find_bad_unicode(record)
    if bad is not None:
        raise InputError("invalid Unicode: a lone surrogate escape such as \\ud800 (text must be valid UTF-8)",
                         file=file, record=rec, field=bad.encode("utf-8", "backslashreplace").decode("utf-8") or None)


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def record_label(index: int, record: Any, id_key: str = "dialogue_id") -> str:
    """How errors name a record of a JSON array: ``#index`` plus its id when it has one."""
    if isinstance(record, Mapping) and isinstance(record.get(id_key), str):
        shown = record[id_key].encode("utf-8", "backslashreplace").decode("utf-8")
        return f"#{index} ({shown})"
    return f"#{index}"


def require_list(data: Any, file: str, what: str) -> list[Any]:
    """The top level of a benchmark file must be a non-empty JSON array."""
    if not isinstance(data, list):
        raise InputError(f"expected a JSON array of {what}, got {type_name(data)}", file=file)
    if not data:
        raise InputError(f"no records (empty array of {what})", file=file)
    return data


def object_records(data: Any, file: str, what: str, label: Callable[[int, Any], str] = lambda i, _: f"#{i}"
                   ) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each record of a benchmark file's non-empty JSON array (``what``: of what), as ``(how errors name it,
    record)``, once it is checked to be an object of valid Unicode."""
    for index, record in enumerate(require_list(data, file, what)):
        rec = label(index, record)
        if not isinstance(record, dict):
            raise InputError(f"expected an object, got {type_name(record)}", file=file, record=rec)
        check_unicode(record, file=file, rec=rec)
        yield rec, record


def type_name(value: Any) -> str:
    """JSON-ish name of a value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def get_field(record: Any, key: str, kind: type | tuple[type, ...], *, file: str, rec: str | int, required: bool = True,
              prefix: str = "") -> Any:
    """``record[key]`` checked against ``kind``; None when optional and absent (or null)."""
    if not isinstance(record, Mapping):
        raise InputError(f"expected an object, got {type_name(record)}", file=file, record=rec)
    value = record.get(key)
    if value is None:
        if required:
            raise InputError("missing required field", file=file, record=rec, field=prefix + key)
        return None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        want = " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)
        raise InputError(f"expected {want}, got {type_name(value)}", file=file, record=rec, field=prefix + key)
    return value


_KIND_NAMES = {str: "string", list: "array", dict: "object", int: "number", float: "number"}


def to_number(value: Any, *, file: str, rec: str | int, field: str) -> float:
    """A finite float from a JSON number; InputError for strings, booleans, NaN, infinity, overflow."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"expected a number, got {type_name(value)} {_short(value)}", file=file, record=rec, field=field)
    try:
        number = float(value)
    except OverflowError:
        raise InputError("number too large", file=file, record=rec, field=field) from None
    if not math.isfinite(number):
        raise InputError(f"expected a finite number, got {number}", file=file, record=rec, field=field)
    return number


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def parse_annotations(
    value: Any, *, file: str, rec: str | int, field: str = "annotations"
) -> dict[str, tuple[float, ...]]:
    """Benchmark annotations ``{quality: [score, ...]}`` -> ``{quality: (float, ...)}``.

    Free-text answers starting with ``N/A`` (FED original) and booleans are dropped, as the dataset
    documentation prescribes; a bare number counts as a one-rater list. Anything else that is not a
    finite number is an InputError naming ``annotations.<quality>``.
    """
    if not isinstance(value, Mapping):
        raise InputError(f"expected an object of quality -> scores, got {type_name(value)}", file=file, record=rec, field=field)
    out: dict[str, tuple[float, ...]] = {}
    for quality, scores in value.items():
        where = f"{field}.{quality}"
        if not isinstance(scores, list):
            scores = [scores]
        kept: list[float] = []
        for score in scores:
            if isinstance(score, bool):
                continue
            if isinstance(score, str) and score.strip().upper().startswith("N/A"):
                continue
            kept.append(to_number(score, file=file, rec=rec, field=where))
        out[str(quality)] = tuple(kept)
    return out


def split_lines(text: str) -> list[str]:
    """Utterances of a newline-joined context: each stripped, blank ones dropped.

    Stripping also handles TopicalChat's ``" \\n "`` joins; the USR originals end contexts with
    blank lines that the DSTC10 copies do not have.
    """
    return [line.strip() for line in text.split("\n") if line.strip()]


def alternate(texts: Sequence[str]) -> tuple[Turn, ...]:
    """Speakers for unlabelled contexts: turns alternate and the LAST one is the user's.

    The evaluated response follows the context and is by definition the system's, so the
    speaker before it is the user; assign backwards from there.
    """
    n = len(texts)
    return tuple(Turn(USER if (n - 1 - i) % 2 == 0 else SYSTEM, t) for i, t in enumerate(texts))


_PREFIX = re.compile(r"^\s*(User|System)\s*:\s?(.*)$", re.DOTALL)


def has_speaker_prefixes(lines: Sequence[str]) -> bool:
    """True when every line carries a FED-style ``User:`` / ``System:`` label."""
    return bool(lines) and all(_PREFIX.match(line) for line in lines)


def prefixed_turns(lines: Sequence[str], *, file: str, rec: str | int, field: str) -> tuple[Turn, ...]:
    """Turns from FED-style lines ``"User: ..."`` / ``"System: ..."`` (the label becomes Turn.speaker)."""
    turns = []
    for i, line in enumerate(lines):
        m = _PREFIX.match(line)
        if not m:
            raise InputError(f"line {i + 1} of the text has no 'User: ' or 'System: ' label: {_short(line)}", file=file,
                             record=rec, field=field)
        speaker = normalize_speaker(m.group(1))
        text = m.group(2).strip()
        if speaker is None or not text:
            raise InputError(f"line {i + 1} of the text is empty after its label", file=file, record=rec, field=field)
        turns.append(Turn(speaker, text))
    return tuple(turns)


def strip_system_prefix(response: str) -> str:
    """FED responses repeat the ``"System: "`` label; drop it (the response is always the system's)."""
    m = _PREFIX.match(response)
    if m and normalize_speaker(m.group(1)) == SYSTEM:
        return m.group(2).strip()
    return response.strip()


def context_turns(text: str, *, file: str, rec: str | int, field: str = "context") -> tuple[Turn, ...]:
    """Context turns from a newline-joined string: labelled (FED) or alternating with the user last."""
    lines = split_lines(text)
    if has_speaker_prefixes(lines):
        return prefixed_turns(lines, file=file, rec=rec, field=field)
    return alternate(lines)


def string_list(value: Any, *, file: str, rec: str | int, field: str) -> tuple[str, ...]:
    """A string or a list of strings -> tuple of stripped strings (blank entries dropped)."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        raise InputError(f"expected a string or an array of strings, got {type_name(value)}", file=file, record=rec, field=field)
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise InputError(f"expected a string, got {type_name(item)}", file=file, record=rec, field=f"{field}[{i}]")
        if item.strip():
            out.append(item.strip())
    return tuple(out)


def non_blank(value: str | None) -> str | None:
    """Stripped text, or None when absent or blank."""
    return None if value is None else value.strip() or None


# --- groups -------------------------------------------------------------------------------------------


def assign_groups(items: Sequence[Item], links: Mapping[int, str] | None = None) -> None:
    """Set Item.group for ``items`` (in place): one group per conversation, as far as text can tell.

    Rule 1: two items share a group when their contexts are identical OR one context is a turn-wise
    prefix of the other's context (or of a dialog-level item's dialog). Several responses rated
    for the same context (USR, Gupta) thus share a group, and so do FED turns cut from one
    conversation (a later turn's context extends an earlier one's). This also catches real
    overlaps across "contexts": e.g. in TopicalChat-USR one context is the first 5 turns of
    another, whose 6th turn is the first one's reference response -- showing one as an example
    while judging the other would leak. Speakers are ignored (for unlabelled data they are
    inferred, so the same text can get different labels). Items with an empty context never link
    by prefix (an empty prefix would join everything). ``links`` optionally maps an item index
    to an extra key (e.g. Gupta's DailyDialog dialog id); equal keys also join groups.

    Rule 2 (sliding windows): two items also share a group when their turn sequences -- context
    followed by the response, and context followed by each reference -- have two consecutive
    turns in common at different distances from their starts. Rule 1 alone misses sets whose
    contexts are a fixed-size window of the history: in DailyDialog-Zhao one conversation is cut
    into two items whose 5-turn windows start at different turns, so neither context is a prefix
    of the other, yet the first item's last turn and ground-truth response are the second item's
    first two turns (items _00045-_00053 and _00297-_00305). A pair of consecutive turns is
    required (one shared utterance such as "thank you ." or a negative sample drawn from another
    dialogue is common text, not a shared conversation), and a pair at the same position in both
    does not join: either rule 1 already joined them (one history growing) or two conversations
    merely start alike (FED's Mitsuku conversations open with the same canned "Hi!" / "Hi there." /
    "how are you?" exchange; joining those would merge unrelated conversations).

    The group name is ``conv:`` + a hash of the component's shortest sequence (ties: smallest
    text), so it depends only on the texts, not on file order: the DSTC10 copy and the original
    release of a set get the same group names. The matching runs on hashes of the texts
    (:class:`judge.datasets.groups.GroupIndex`), so a large file is grouped in little memory.
    """
    index = GroupIndex()
    for i, item in enumerate(items):
        index.add(item, (links or {}).get(i))
    for item, name in zip(items, index.names(lambda idx: {i: context_texts(items[i]) for i in idx}), strict=True):
        item.group = name


# --- scale check --------------------------------------------------------------------------------------


def check_scale(items: Iterable[Item], quality: Quality, *, file: str | None = None) -> None:
    """Raise InputError for the first human score of ``quality`` outside its [min, max] scale.

    The key is matched case-insensitively (as Item.human does). Loaders do not range-check,
    because the scale depends on which quality a run evaluates; call this once it is known.
    """
    try:
        lo, hi = quality.scale("checking the human scores' range")
    except InputError as exc:
        raise InputError(exc.reason, file=file, field=exc.field) from None
    key = quality.name.lower()
    for item in items:
        for name, values in item.annotations.items():
            if name.lower() != key:
                continue
            for value in values:
                if not lo <= value <= hi:
                    raise InputError(f"score {value:g} is outside the {quality.name} scale [{lo:g}, {hi:g}]",
                                     file=file if file is not None else item.dataset, record=item.id,
                                     field=f"scores.{name}")


# --- small shared rules -------------------------------------------------------------------------------


def clean_fact(text: str | None) -> str | None:
    """Knowledge/persona text, stripped; TopicalChat's ``_nofact`` placeholder means no knowledge."""
    text = non_blank(text)
    return None if text == "_nofact" else text


def check_unique_ids(items: Sequence[Item], labels: Sequence[str | int], file: str, field: str = "id") -> None:
    """InputError naming both records when two items share an id."""
    seen: dict[str, str | int] = {}
    for item, label in zip(items, labels):
        if item.id in seen:
            raise InputError(f"duplicate id '{item.id}' (already used by {_where(seen[item.id])})", file=file,
                             record=label, field=field)
        seen[item.id] = label


def _where(label: str | int) -> str:
    return f"line {label}" if isinstance(label, int) else f"record {label}"


_TURN_KEYS = ("speaker", "text")


def parse_turns(raw: Any, *, file: str, rec: str | int, field: str, strict_keys: bool = False) -> tuple[Turn, ...]:
    """A JSON array of ``{"speaker": ..., "text": ...}`` -> Turns with normalised speakers (texts stripped;
    a blank text becomes "", which the item's flags report).

    ``strict_keys`` rejects other keys in a turn object (users' JSONL: catches typos).
    """
    if not isinstance(raw, list):
        raise InputError(f"expected an array of turns, got {type_name(raw)}", file=file, record=rec, field=field)
    turns = []
    for i, turn in enumerate(raw):
        where = f"{field}[{i}]"
        if not isinstance(turn, Mapping):
            raise InputError(f'expected a turn object {{"speaker": ..., "text": ...}}, got {type_name(turn)}',
                             file=file, record=rec, field=where)
        if strict_keys:
            extra = sorted(str(k) for k in turn if k not in _TURN_KEYS)
            if extra:
                raise InputError(f"unknown key '{extra[0]}' in a turn; allowed: {', '.join(_TURN_KEYS)}", file=file,
                                 record=rec, field=f"{where}.{extra[0]}")
        speaker = get_field(turn, "speaker", str, file=file, rec=rec, prefix=where + ".")
        text = get_field(turn, "text", str, file=file, rec=rec, prefix=where + ".")
        role = normalize_speaker(speaker)
        if role is None:
            raise InputError(f"unknown speaker {_short(speaker)}; known speakers: {', '.join(KNOWN_SPEAKERS)}",
                             file=file, record=rec, field=where + ".speaker")
        # An empty or blank turn is data (a real log's bot that said nothing, an empty message): it is
        # kept as "" and the item is flagged (Item.flags: empty_context_turn), never refused.
        turns.append(Turn(role, text.strip()))
    return tuple(turns)
