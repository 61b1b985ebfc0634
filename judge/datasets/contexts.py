"""A turn item's context, compared across files: how an item whose own content no registered set holds (a new
reply, other labels in the texts) is still known as the registered conversation its context comes from.

Files that hold a registered set's conversations differ in more than case and punctuation: a transcript may
keep its speaker labels in the texts (``"User: Hi!"``, ``"A: ..."``, ``"Speaker 1: ..."``), number its turns
(``"3. ..."``, ``"[3]"``, ``"Turn 3:"``), paste a whole context as one turn with a line per utterance (or
utterances joined by ``__eou__``, ``</s>``, ``|``), or cut
the context to its last turns; and an item may rate a new reply to a registered context. The item's
content fingerprint then matches nothing, yet its context is the conversation's, and its ratings say what
the conversation's do. So an item is also compared by its context:

- **Pieces.** Each turn text is split at its line breaks (and tabs, bars and end-of-utterance marks such as
  ``__eou__`` or ``</s>``, which join utterances in some corpora's raw files); each line loses its leading turn number and
  speaker label (:func:`unlabelled`, up to :data:`MAX_PREFIXES` of them) and is reduced to lower-case
  letters and digits; empty pieces are dropped. A context's pieces are those of its turns in order (a
  dialog item's: its dialog's). The registered sets' texts go through the same steps, so a label or a
  number that a registered text itself opens with is dropped on both sides alike.
- **Known contexts.** Per registered conversation, the pieces of its items' contexts and dialogs, each
  kept as a sequence of piece hashes (``conversations.json``, key ``contexts``; a sequence that is a run
  of another of its conversation's is left out, as it adds nothing).
- **Match.** An item's context matches a conversation when its pieces are a run of consecutive pieces of
  one of the conversation's known contexts: the whole context, the context cut to its last turns (a
  suffix: the turns before were dropped), cut to its first turns (a prefix: FED-Turn's contexts are
  prefixes of the FED-Dial dialog they were cut from) or both. The run must hold :data:`MIN_CONTEXT`
  letters and digits or more: "Hi!" / "Hi there." opens many conversations and names none. A context
  that continues a registered one with turns of its own, or whose turns were edited, matches nothing.
- **Several matches.** A run that two registered conversations hold (FED's Mitsuku conversations share
  a few canned exchanges) names both; :func:`judge.datasets.identity.identify` chooses between them as
  between two conversations that hold one item's content: by the other items of its group.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from ..data.items import Item

#: A context matches a registered conversation only when the matched run holds this many letters and
#: digits: a short line ("hi", "how are you", "thank you") is said in many conversations; of the registered
#: sets' lines of 20 or more, fewer than 20 are said in two conversations or three, never more.
MIN_CONTEXT = 20
#: At most this many leading prefixes (a number, then a label, or the other way round) are dropped per line.
MAX_PREFIXES = 3

_NUMBER = r"(?:[\[(<]?\s*(?:turn\s*)?\#?\s*\d{1,3}\s*[\])>.:-]|\#\s*\d{1,3}\b)"
_ROLES = ("user|system|human|bot|chatbot|assistant|agent|model|ai|customer|client|speaker|person|participant|"
          "partner|persona|you|me|a|b|s|u")
_LABEL = rf"[\[(<]?\s*(?:{_ROLES})(?:\s*[-_#]?\s*(?:\d{{1,2}}|[a-z]))?\s*[\])>]?\s*[:\uff1a]"
_PREFIX = re.compile(rf"^\s*(?:{_NUMBER}|{_LABEL})\s*", re.IGNORECASE)
#: Where a text holding several utterances splits: line breaks, tabs, bars and the end-of-utterance marks of
#: corpora and tokenisers (DailyDialog's raw ``__eou__``, ``</s>``, ``[SEP]``, ``<eos>``); none is in a
#: registered set's turn.
_LINES = re.compile(r"(?:[\r\n\t\x0b\x0c\x1c-\x1e\x85\u2028\u2029|]|__eou__|</s>|\[SEP\]|<eos>|<eou>)+", re.IGNORECASE)
_NOT_TEXT = re.compile(r"[\W_]+")
#: Hex digits kept of a piece's sha256 (48 bits: no two of the registered sets' few thousand pieces meet).
KEY_LENGTH = 12


def unlabelled(line: str) -> str:
    """A line without its leading turn number and speaker label: ``"3. User: Hi!"`` -> ``"Hi!"``.
    Labels are role words ("User:", "System:", "Human:", "Bot:", "A:", "Speaker 1:", "Person B:", ...),
    numbers are ``3.``, ``3)``, ``[3]``, ``#3``, ``Turn 3:``; a name ("Alice:") is not a label."""
    for _ in range(MAX_PREFIXES):
        m = _PREFIX.match(line)
        if not m or not m.group():
            break
        line = line[m.end():]
    return line


def pieces(texts: Iterable[str]) -> tuple[str, ...]:
    """Turn texts as the comparison sees them: one piece per line, unlabelled, lower-case letters and digits
    only, empty pieces dropped."""
    return tuple(piece for text in texts for piece in text_pieces(text))


@lru_cache(maxsize=1 << 16)
def text_pieces(text: str) -> tuple[str, ...]:
    """One turn text's pieces (kept for reuse: the contexts of one file repeat their turns many times)."""
    out = (_NOT_TEXT.sub("", unlabelled(line).casefold()) for line in _LINES.split(text))
    return tuple(piece for piece in out if piece)


def context_texts(item: Item) -> tuple[str, ...]:
    """The texts an item's conversation shows before what is rated: a turn item's context, a dialog (also the
    turn sequence whose prefixes join items into groups, :mod:`judge.datasets.groups`)."""
    return tuple(t.text for t in (item.context if item.level == "turn" else item.dialog))


@lru_cache(maxsize=1 << 16)
def piece_key(piece: str) -> str:
    """A piece's key in the index (a short hash: the index holds no text of the sets)."""
    return hashlib.sha256(piece.encode("utf-8", "surrogatepass")).hexdigest()[:KEY_LENGTH]


def context_keys(item: Item) -> tuple[str, ...]:
    """The keys of an item's context pieces, in order."""
    return tuple(map(piece_key, pieces(context_texts(item))))


def known_sequences(items: Iterable[Item]) -> list[tuple[str, ...]]:
    """The context key sequences of one conversation's items, those that are a run of another left out,
    longest first (ties by key): what the index keeps of the conversation."""
    seqs = sorted({k for k in map(context_keys, items) if k}, key=lambda s: (-len(s), s))
    kept: list[tuple[str, ...]] = []
    for s in seqs:
        if not any(_is_run(s, k) for k in kept):
            kept.append(s)
    return kept


def _is_run(short: Sequence[str], long: Sequence[str]) -> bool:
    n = len(short)
    return any(tuple(long[i:i + n]) == tuple(short) for i in range(len(long) - n + 1))


@dataclass
class ContextIndex:
    """The registered conversations' known contexts, looked up by their last piece."""

    #: piece key -> (conversation, its sequence, the piece's position in it) for every piece of every sequence.
    by_piece: dict[str, list[tuple[str, tuple[str, ...], int]]] = field(default_factory=dict)

    @classmethod
    def from_index(cls, contexts: Mapping[str, Sequence[str]]) -> ContextIndex:
        """From the index's ``contexts``: conversation -> its sequences, each its keys joined by spaces."""
        out = cls()
        for name, seqs in contexts.items():
            for text in seqs:
                seq = tuple(text.split())
                for pos, key in enumerate(seq):
                    out.by_piece.setdefault(key, []).append((name, seq, pos))
        return out

    def matches(self, item: Item) -> tuple[str, ...]:
        """The registered conversations whose known contexts hold the item's context as a run (sorted;
        none when the context holds fewer than :data:`MIN_CONTEXT` letters and digits)."""
        ps = pieces(context_texts(item))
        if sum(map(len, ps)) < MIN_CONTEXT:
            return ()
        keys = tuple(map(piece_key, ps))
        n = len(keys)
        found = {name for name, seq, pos in self.by_piece.get(keys[-1], ())
                 if pos + 1 >= n and seq[pos + 1 - n:pos + 1] == keys}
        return tuple(sorted(found))


def index_entry(sequences: Sequence[Sequence[str]]) -> list[str]:
    """One conversation's sequences as the index file holds them: keys joined by spaces."""
    return [" ".join(s) for s in sequences]
