"""What kind of method a spec is, from what it declares it reads and how its weights are learned.

Every method is of exactly one of four kinds, and reports keep the kinds in separate tables (never
bolded or averaged against each other):

- *reference-free*: reads the conversation and the rated response only, as a live judge does;
- *reference-based*: it (or any ensemble member) reads the item's reference responses;
- *uses-future*: it reads the user's turn after the rated response (``next_user``) on turn-level
  items, which a live judge never has;
- *supervised* (on the scored set): an ensemble whose weights are learned from the human ratings of
  the set it scores (``fit = "cv"``, by cross-validation), which an unsupervised judge never reads.

A method that is several is reported under the strongest caveat, in this order: supervised,
uses-future, reference-based, reference-free (a supervised ensemble with a uses-future member is
supervised; a method reading both the reference and the next user turn is uses-future). Its other
reads stay on record (``reads``, ``uses_future``). A *listwise* method reads the other replies to the
rated reply's context (``alternatives``); it stays reference-free, and reports say it compares. The
reads come from the methods' own declarations (``Scorer.reads``: a classic scorer's ``requires``, a
template's ``reads`` metadata), never from guessing, so reports can keep the kinds apart and
``judge serve`` can refuse a judge that would need the future.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.errors import InputError
from ..data.alternatives import READ
from ..data.items import Item
from ..data.kinds import BY_NAME, KINDS
from ..data.qualities import Quality
from ..scorers.base import Scorer
from .spec import MethodSpec

#: The input a reference-based method reads.
REFERENCE = "reference"
#: The input a uses-future method reads (turn level: the user's reply to the rated response).
FUTURE = "next_user"
#: The input a listwise method reads (the other systems' replies to the same context).
LISTWISE = READ


@dataclass(frozen=True)
class MethodKinds:
    """The declared reads of one method (and whether it learns from the scored set's ratings) and the
    kind and report labels that follow from them."""

    reads: frozenset[str]
    #: An ensemble whose weights are learned on the scored set's ratings (``fit = "cv"``).
    supervised: bool = False

    @property
    def reference_based(self) -> bool:
        return REFERENCE in self.reads

    @property
    def uses_future(self) -> bool:
        return FUTURE in self.reads

    @property
    def listwise(self) -> bool:
        return LISTWISE in self.reads

    @property
    def kind(self) -> str:
        """One of :data:`KINDS`, the strongest caveat first: supervised, uses-future, reference-based,
        reference-free. Every report keeps the kinds apart."""
        if self.supervised:
            return "supervised"
        if self.uses_future:
            return "uses-future"
        return "reference-based" if self.reference_based else "reference-free"

    @property
    def label(self) -> str:
        """The kind as reports print it, followed by what else the method reads (``, reference-based``,
        ``, uses-future`` when its kind is a stronger one) and ``, listwise`` when it reads the other
        replies to the context."""
        kind = self.kind
        extra = [k for k, on in (("reference-based", self.reference_based), ("uses-future", self.uses_future))
                 if on and KINDS.index(k) < KINDS.index(kind)]
        return ", ".join([kind, *extra, *(["listwise"] if self.listwise else [])])

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "uses_future": self.uses_future, "reads": sorted(self.reads),
                **({"listwise": True} if self.listwise else {}), **({"supervised": True} if self.supervised else {})}


def kind_text(kind: dict[str, Any]) -> str:
    """A method's kind (``MethodKinds.to_dict``, as results record it) in words, for ``judge bench``:
    the kind, what it means, and what else the method reads (``reference`` under uses-future, ...)."""
    name = str(kind.get("kind", "unknown"))
    note = BY_NAME[name].note if name in BY_NAME else ""
    text = name + (f" ({note})" if note else "")
    also = [k for k, on in (("reference-based", "reference" in kind.get("reads", ())),
                            ("uses-future", bool(kind.get("uses_future"))))
            if on and name in KINDS and KINDS.index(k) < KINDS.index(name)]
    return text + (f"; also {' and '.join(also)}" if also else "")


def scorer_kinds(scorer: Scorer) -> MethodKinds:
    """The kinds of a built scorer (``judge score``'s meta, ``judge serve``'s ``/v1/info``): its reads,
    and supervised when it learns from the ratings of what it scores."""
    return MethodKinds(scorer.reads(), supervised=scorer.supervised())


def method_kinds(spec: MethodSpec, quality: Quality | None = None) -> MethodKinds:
    """The kinds of ``spec``: what it reads, from its type's declarations (an ensemble: the union over all its
    members, including optional ones a set may leave out; cheap: classic scorers are created without loading
    models, templates are parsed, nothing runs), and whether it (or an ensemble member) learns weights from the
    scored set's ratings (``cv``)."""
    return MethodKinds(spec.kind.reads(spec, quality), supervised=spec.kind.supervised(spec))


def check_future(spec: MethodSpec, kinds: MethodKinds, level: str | None) -> None:
    """Refuse a method that reads the user's turn after the rated response on turn-level items unless
    it opts in (``allow_future``): its figures describe a judge that sees the user's reaction, which
    no live judge has. Dialog-level items hold their user turns anyway; ``level`` None: unknown. A
    mixed file is turn level (:func:`items_level`): one turn-level item is enough to need the future."""
    if kinds.uses_future and level != "dialog" and not spec.allow_future:
        raise InputError(
            f"method '{spec.name}' reads the user's turn after the rated response ('{FUTURE}'), which a live "
            "judge never has; opt in with allow_future = true (TOML) or --allow-future (CLI) to measure it "
            "anyway (reports label it uses-future)", field="allow_future")


def items_level(items: Sequence[Item]) -> str | None:
    """``dialog`` when every item is dialog level, ``turn`` when any is turn level (None: no items), so a
    turn-level item anywhere in a file, not only on its first line, counts for ``check_future``."""
    if not items:
        return None
    return "turn" if any(it.level == "turn" for it in items) else "dialog"


def check_live(spec: MethodSpec, kinds: MethodKinds) -> None:
    """``judge serve`` answers live requests: a method that needs the next user turn cannot serve them,
    whatever ``allow_future`` says."""
    if kinds.uses_future:
        raise InputError(
            f"method '{spec.name}' reads the user's turn after the rated response ('{FUTURE}'); a served "
            "judge rates responses before the user replies, so judge serve refuses it (allow_future does not "
            "apply here)", field="allow_future")
