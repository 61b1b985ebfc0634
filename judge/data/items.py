"""The data model every stage shares: turns, items (turn level or dialog level) and their human labels."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Literal

Level = Literal["turn", "dialog"]

#: Speaker roles after normalisation. The evaluated side of a conversation is always "system".
USER = "user"
SYSTEM = "system"

_SPEAKER_ALIASES = {"user": USER, "human": USER, "a": USER, "person a": USER, "speaker 1": USER, "customer": USER,
                    "system": SYSTEM, "model": SYSTEM, "bot": SYSTEM, "assistant": SYSTEM, "agent": SYSTEM, "b": SYSTEM,
                    "person b": SYSTEM, "speaker 2": SYSTEM}

KNOWN_SPEAKERS = tuple(sorted(_SPEAKER_ALIASES))


def normalize_speaker(name: str) -> str | None:
    """Map a speaker label ("User", "human", "bot", ...) to USER or SYSTEM; None if unknown."""
    return _SPEAKER_ALIASES.get(name.strip().lower())


@dataclass(frozen=True, slots=True)
class Turn:
    """One utterance: who said it (USER or SYSTEM) and what was said."""

    speaker: str
    text: str


@dataclass(slots=True)
class Item:
    """One thing to judge: a response in its context (turn level) or a whole dialog (dialog level).

    ``annotations`` keeps every rater's numeric value per quality (non-numeric answers such as
    FED's ``N/A`` are dropped at load time, as the dataset documentation prescribes).
    ``group`` names the conversation/context the item belongs to; selectors use it so that an
    item's own conversation never leaks into its in-context examples. ``scales`` holds the rating
    scales its file declared (quality -> (min, max); users' JSONL ``"scales"``), so that the
    scale of a user's quality is never guessed from a registered quality of the same name.
    """

    id: str
    level: Level
    context: tuple[Turn, ...] = ()
    response: str | None = None
    dialog: tuple[Turn, ...] = ()
    references: tuple[str, ...] = ()
    fact: str | None = None
    next_user: str | None = None
    system: str | None = None
    group: str | None = None
    dataset: str | None = None
    annotations: dict[str, tuple[float, ...]] = field(default_factory=dict)
    scales: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: The content fingerprint of the item's conversation, set when a file is loaded
    #: (:func:`judge.datasets.identity.identify`): the name a registered set's conversation has across every
    #: file that holds it (FED-Turn's turns share the FED-Dial dialog's), else a hash of its group's texts.
    #: The dev/test split and every guard that keeps a conversation on one side read it; None (items built
    #: in code) falls back to ``group``.
    conversation: str | None = None
    #: What the log said about the item beyond its text (conversation id, model, version, timestamp, a user's
    #: feedback): plain values a report can group by (``--by model,version``); for Reliable-Eval the run, HIT,
    #: worker and per-worker z-scores, for PredictiveEngagement the paper's automatic scores.
    meta: dict[str, str | int | float | bool | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.group is None:
            self.group = self.default_group()

    def default_group(self) -> str:
        """Items with identical context (turn level) or identical dialog count as one group."""
        turns = self.context if self.level == "turn" else self.dialog
        return "ctx:" + "\x1e".join(f"{t.speaker}\x1f{t.text}" for t in turns)

    def human(self, quality: str) -> float | None:
        """Mean human rating for ``quality`` (case-insensitive key), or None when nobody rated it."""
        values = self.annotations.get(quality)
        if values is None:
            lowered = {k.lower(): v for k, v in self.annotations.items()}
            values = lowered.get(quality.lower())
        if not values:
            return None
        return math.fsum(values) / len(values)

    @property
    def flags(self) -> tuple[str, ...]:
        """Notes on odd but valid data that output rows carry, e.g. ``("empty_response",)``.

        Real logs hold empty replies, blank messages, bots that speak twice in a row, pasted walls of
        text, emoji and other scripts. People rated such items, so they are scored like any other; the
        flags (docs/data-format.md, "Odd but real data") let readers of the results find them. They are
        a fixed function of the item, listed in the order of ``ITEM_FLAGS``.
        """
        return item_flags(self)

    @property
    def turns(self) -> tuple[Turn, ...]:
        """All turns shown for this item: context + response, or the whole dialog."""
        if self.level == "dialog":
            return self.dialog
        return self.context + ((Turn(SYSTEM, self.response),) if self.response is not None else ())

    def context_text(self) -> str:
        """Plain text of the context (turn level) or dialog (dialog level), one turn per line."""
        turns = self.context if self.level == "turn" else self.dialog
        return "\n".join(t.text for t in turns)

    def response_text(self) -> str:
        """The response (turn level) or the system's side of the dialog (dialog level)."""
        if self.level == "turn":
            return self.response or ""
        return "\n".join(t.text for t in self.dialog if t.speaker == SYSTEM)


def conversation_of(item: Item) -> str:
    """The name an item's conversation goes by: its fingerprint across sets, else its group, else its id
    (what the dev/test halves are drawn by and bootstraps resample)."""
    return item.conversation or item.group or f"item:{item.id}"


#: A turn (or response) longer than this many characters is flagged ``long_turn``: chat messages are
#: rarely longer, and a long one takes most of a small model's context window and attention.
LONG_TURN_CHARS = 1000

#: Every flag an item can carry, in the order rows list them (docs/data-format.md).
ITEM_FLAGS = ("empty_response", "empty_context", "empty_context_turn", "context_ends_with_system", "repeated_speaker",
              "response_repeats_context", "long_turn", "multiline_turn", "non_ascii", "non_text_part")


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def item_flags(item: Item) -> tuple[str, ...]:
    """The odd-but-real properties of ``item`` (see ``Item.flags``)."""
    turn = item.level == "turn"
    turns = item.context if turn else item.dialog
    texts = [t.text for t in turns] + ([item.response or ""] if turn else [])
    response = (item.response or "").strip()
    found = {
        "empty_response": turn and not response,
        "empty_context": turn and not item.context,
        "empty_context_turn": any(not t.text.strip() for t in turns),
        "context_ends_with_system": turn and bool(item.context) and item.context[-1].speaker == SYSTEM,
        "repeated_speaker": any(a.speaker == b.speaker for a, b in pairwise(turns)),
        "response_repeats_context": turn and bool(response)
        and any(_norm(t.text) == _norm(response) for t in item.context),
        "long_turn": any(len(t) > LONG_TURN_CHARS for t in texts),
        "multiline_turn": any("\n" in t.strip() for t in texts),
        "non_ascii": any(not t.isascii() for t in texts + [item.fact or ""]),
        # A chat log's image, audio or file, shown to the judge as a placeholder (docs/chat-logs.md).
        "non_text_part": bool(item.meta.get("non_text_parts")),
    }
    return tuple(f for f in ITEM_FLAGS if found[f])
