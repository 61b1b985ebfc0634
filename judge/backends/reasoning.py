"""What a judge that thinks before it answers wrote: where its answer line is, and what label it gives.

A method with ``reason = N`` asks the model for a rationale, then an answer line that begins with the
prompt's answer cue (``Answer:``, ``Rating:``; :meth:`judge.prompts.templates.PromptTemplate.render_reasoned`).
Every backend finds that line the same way, whether it reads the tokens it generates (llama.cpp: bytes, as
they come) or a completion's text (an API):

* the line begins with the cue, after optional markup (``**Answer:** Yes``, ``> Answer: Yes``), in any
  case (:func:`answer_line`);
* thinking a model shows (a ``<think>...</think>`` block) is never searched: only the text after the last
  closed block, and nothing while a block is open (:func:`visible_start`);
* the label is the first word after the cue, matched against the answer's label spellings
  (:func:`parse_label`).

Helpers take ``str`` or ``bytes`` (positions are then byte offsets, so that a backend can cut its tokens
exactly where the answer line begins).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import AnyStr

#: Tokens left for the answer line after a rationale's budget (the cue and the label): a completion asked for
#: a rationale of N tokens may run to N + ANSWER_LINE_TOKENS, and a prompt must leave room for them.
ANSWER_LINE_TOKENS = 8
#: How a model marks the thinking it shows before its answer.
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
#: Markup a model may put around the cue or the label (``**Answer:**``, ``"Yes"``).
_MARKUP = " \t*_`'\"[(>#-"
_WORD = re.compile(r"[A-Za-z0-9]+")


def _marker(text: str | bytes, marker: str) -> str | bytes:
    return marker.encode() if isinstance(text, bytes) else marker


def visible_start(text: AnyStr) -> int | None:
    """Where the text a model shows as its answer begins: after its last closed thinking block (0 without
    one); None while a block is still open (nothing it wrote is an answer yet)."""
    opened = text.rfind(_marker(text, THINK_OPEN))  # type: ignore[arg-type]
    closed = text.rfind(_marker(text, THINK_CLOSE))  # type: ignore[arg-type]
    if opened > closed:
        return None
    return closed + len(THINK_CLOSE) if closed >= 0 else 0


@lru_cache(maxsize=64)
def _cue_pattern(cue: str, binary: bool) -> re.Pattern[str] | re.Pattern[bytes]:
    """The answer line's beginning: the cue's words at a line start after optional markup, its colon (when
    it has one) after optional markup too, in any case."""
    cue = cue.strip()
    words, colon = (cue[:-1].rstrip(), True) if cue.endswith(":") else (cue, False)
    pattern = r"^[ \t>*_#-]*" + re.escape(words) + (r"[*_ \t]*:" if colon else "")
    flags = re.IGNORECASE | re.MULTILINE
    return re.compile(pattern.encode(), flags) if binary else re.compile(pattern, flags)


def answer_line(text: AnyStr, cue: str, *, last: bool = False) -> tuple[int, int] | None:
    """(where the answer line begins, where its cue ends) in ``text``, outside thinking: the first such line
    (``last``: the last one, a completion's final answer); None when there is none."""
    start = visible_start(text)
    if start is None:
        return None
    pattern = _cue_pattern(cue, isinstance(text, bytes))
    found = None
    for match in pattern.finditer(text[start:]):  # type: ignore[call-overload]
        found = (start + match.start(), start + match.end())
        if not last:
            break
    return found


def parse_label(after: str, candidates: Sequence[str]) -> str | None:
    """The label spelling (one of ``candidates``) that the text after an answer cue begins with: its first
    word after markup, matched exactly, else ignoring case; None when it is none of them."""
    word = _WORD.match(after.lstrip(_MARKUP))
    if word is None:
        return None
    found = word.group(0)
    plain = [c.strip() for c in candidates]
    if found in plain:
        return candidates[plain.index(found)]
    lower = [c.lower() for c in plain]
    return candidates[lower.index(found.lower())] if found.lower() in lower else None


def final_answer(text: str, cue: str, candidates: Sequence[str]) -> tuple[str, str | None]:
    """A completion read for its final answer: (the rationale, the text before its last answer line; the
    label that line gives, None when it has no answer line or no readable label). Thinking stays in the
    rationale, never in the answer."""
    where = answer_line(text, cue, last=True)
    if where is None:
        return text.strip(), None
    return text[: where[0]].strip(), parse_label(text[where[1]:], candidates)
