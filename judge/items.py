"""The data model every stage shares: turns, items (turn level or dialog level) and their human labels."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

Level = Literal["turn", "dialog"]

#: Speaker roles after normalisation. The evaluated side of a conversation is always "system".
USER = "user"
SYSTEM = "system"

_SPEAKER_ALIASES = {
    "user": USER,
    "human": USER,
    "a": USER,
    "person a": USER,
    "speaker 1": USER,
    "customer": USER,
    "system": SYSTEM,
    "model": SYSTEM,
    "bot": SYSTEM,
    "assistant": SYSTEM,
    "agent": SYSTEM,
    "b": SYSTEM,
    "person b": SYSTEM,
    "speaker 2": SYSTEM,
}

KNOWN_SPEAKERS = tuple(sorted(_SPEAKER_ALIASES))


def normalize_speaker(name: str) -> str | None:
    """Map a speaker label ("User", "human", "bot", ...) to USER or SYSTEM; None if unknown."""
    return _SPEAKER_ALIASES.get(name.strip().lower())


@dataclass(frozen=True)
class Turn:
    """One utterance: who said it (USER or SYSTEM) and what was said."""

    speaker: str
    text: str


@dataclass
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

        An empty reply is a real (bad) chatbot output that people rated, so it is scored like any
        other response; the flag lets readers of the results find such items.
        """
        if self.level == "turn" and not (self.response or "").strip():
            return ("empty_response",)
        return ()

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
