"""What every chat-log format is read into: messages with their roles and rendered text, and conversations
with what the log said about them (:class:`Conversation`); the renderings the formats share (content parts,
tool calls, tool results) and a user's own feedback.

Rendering rules (docs/chat-logs.md):

- Content is a string or a list of parts. Text parts are joined with a newline; any other part (image,
  audio, file, ...) becomes a named placeholder such as ``[image]`` or ``[file: report.pdf]``, counted so
  that its items are flagged ``non_text_part``.
- A tool call is written ``[tool call] NAME(ARGUMENTS)`` and a tool's result ``[tool result] NAME: TEXT``,
  one per line: compact, and the tool's name kept.
- A user's feedback becomes a rating: ``user_thumbs`` (0 = down, 1 = up) or ``user_stars`` (1 to 5).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ...core.errors import InputError
from .._common import type_name

Role = Literal["system", "user", "assistant", "tool"]

#: A log's roles and the role each is read as (``developer`` instructions are the bot's instructions too).
ROLES: dict[str, Role] = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
                          "tool": "tool", "function": "tool"}

#: The ratings a user's own feedback becomes, with their scales.
FEEDBACK_SCALES: dict[str, tuple[float, float]] = {"user_thumbs": (0.0, 1.0), "user_stars": (1.0, 5.0)}

_THUMBS = {"up": 1.0, "thumbs_up": 1.0, "thumbsup": 1.0, "positive": 1.0, "like": 1.0, "good": 1.0, "+1": 1.0,
           "\N{THUMBS UP SIGN}": 1.0, "down": 0.0, "thumbs_down": 0.0, "thumbsdown": 0.0, "negative": 0.0,
           "dislike": 0.0, "bad": 0.0, "-1": 0.0, "\N{THUMBS DOWN SIGN}": 0.0}

#: Part types whose text is the message's text.
_TEXT_PARTS = {"text": "text", "input_text": "text", "output_text": "text", "refusal": "refusal"}
#: Part types shown as a placeholder named for what they hold.
_PLACEHOLDERS = {"image_url": "image", "input_image": "image", "image": "image", "input_audio": "audio",
                 "audio": "audio", "file": "file", "input_file": "file", "video": "video", "video_url": "video"}

Meta = dict[str, str | int | float | bool | None]


@dataclass(frozen=True)
class Message:
    """One message as judge reads it: its role, its rendered text and what it holds besides text.

    ``step`` marks the bot's work that is not a reply: an assistant message that only calls tools, and a
    tool's result. ``non_text`` counts the placeholders in ``text``; ``feedback`` is the user's rating of
    this reply (quality -> value), ``meta`` what the log says about this message alone (a span id)."""

    role: Role
    text: str
    step: bool = False
    non_text: int = 0
    feedback: Mapping[str, float] = field(default_factory=dict)
    meta: Mapping[str, str | int | float | bool | None] = field(default_factory=dict)


@dataclass
class Conversation:
    """One conversation of a log: an id (the items' group and the stem of their ids), its messages, what the
    log said about it (``meta``: model, version, timestamp and its other keys), the model that answered
    (``system``), the user's feedback on it as a whole, and where it was read (``record``)."""

    id: str
    messages: list[Message]
    record: int | str
    meta: Meta = field(default_factory=dict)
    system: str | None = None
    feedback: dict[str, float] = field(default_factory=dict)


@dataclass
class Where:
    """Where a value was read, for errors: the file, the record (line number or label) and a field path."""

    file: str
    record: int | str

    def error(self, message: str, field_path: str | None = None) -> InputError:
        return InputError(message, file=self.file, record=self.record, field=field_path)


def content_text(content: Any, where: Where, path: str) -> tuple[str, int]:
    """A message's content (a string, a list of parts, or null) as text, and how many placeholders it holds."""
    if content is None:
        return "", 0
    if isinstance(content, str):
        return content.strip(), 0
    if not isinstance(content, list):
        raise where.error(f"expected a string or an array of parts, got {type_name(content)}", path)
    texts: list[str] = []
    placeholders = 0
    for i, part in enumerate(content):
        text, is_placeholder = _part(part, where, f"{path}[{i}]")
        placeholders += is_placeholder
        if text:
            texts.append(text)
    return "\n".join(texts), placeholders


def _part(part: Any, where: Where, path: str) -> tuple[str, bool]:
    """One content part: its text, or a named placeholder (True)."""
    if isinstance(part, str):
        return part.strip(), False
    if not isinstance(part, dict):
        raise where.error(f"expected a content part object, got {type_name(part)}", path)
    kind = part.get("type")
    if not isinstance(kind, str) or not kind:
        raise where.error("a content part needs a 'type' (text, image_url, input_audio, file, ...)", f"{path}.type")
    if kind in _TEXT_PARTS:
        key = _TEXT_PARTS[kind]
        text = part.get(key)
        if not isinstance(text, str):
            raise where.error(f"expected a string, got {type_name(text)}", f"{path}.{key}")
        return text.strip(), False
    return placeholder(_PLACEHOLDERS.get(kind, kind), part), True


def placeholder(kind: str, part: Mapping[str, Any]) -> str:
    """``[image]``, ``[file: NAME]``: what a non-text part is, named by its file name where it has one."""
    name = part.get("filename")
    inner = part.get("file")
    if not name and isinstance(inner, dict):
        name = inner.get("filename")
    return f"[{kind}: {name}]" if isinstance(name, str) and name else f"[{kind}]"


def arguments_text(arguments: Any) -> str:
    """A tool call's arguments, compact: a JSON string as given (re-dumped without spaces when it parses)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return arguments.strip()
    if arguments is None:
        return ""
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


def tool_call_line(name: str, arguments: Any) -> str:
    return f"[tool call] {name}({arguments_text(arguments)})"


def tool_result_line(name: str, text: str) -> str:
    return f"[tool result] {name}: {text}"


def feedback(value: Any, where: Where, path: str) -> dict[str, float]:
    """A user's feedback as ratings: ``"up"``/``"down"``/true/false -> ``user_thumbs``; a number from 1 to 5
    -> ``user_stars``; an object may hold ``thumbs`` and ``stars`` (or ``rating``, ``score``)."""
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"user_thumbs": 1.0 if value else 0.0}
    if isinstance(value, str):
        thumbs = _THUMBS.get(value.strip().lower())
        if thumbs is None:
            raise where.error(f"unknown feedback {value!r}: expected up/down (thumbs), true/false or a number of "
                              "stars from 1 to 5", path)
        return {"user_thumbs": thumbs}
    if isinstance(value, int | float):
        return {"user_stars": _stars(value, where, path)}
    if isinstance(value, dict):
        out: dict[str, float] = {}
        for key, sub in value.items():
            if key in ("thumbs", "thumb", "vote"):
                out.update(feedback(bool(sub) if isinstance(sub, int) and not isinstance(sub, bool) else sub,
                                    where, f"{path}.{key}"))
            elif key in ("stars", "rating", "score"):
                if not isinstance(sub, int | float) or isinstance(sub, bool):
                    raise where.error(f"expected a number of stars from 1 to 5, got {type_name(sub)}", f"{path}.{key}")
                out["user_stars"] = _stars(sub, where, f"{path}.{key}")
        return out
    raise where.error(f"expected up/down, true/false, a number of stars or an object, got {type_name(value)}", path)


def _stars(value: float, where: Where, path: str) -> float:
    lo, hi = FEEDBACK_SCALES["user_stars"]
    if not lo <= float(value) <= hi:
        raise where.error(f"stars {value:g} are outside the scale [{lo:g}, {hi:g}]", path)
    return float(value)


def plain(value: Any) -> str | int | float | bool | None:
    """A metadata value as a plain value: scalars as they are, anything else as compact JSON."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
