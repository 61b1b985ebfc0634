"""What kind of method a spec is, from what it declares it reads.

A method is *reference-based* when it (or any ensemble member) reads the item's reference responses,
and *uses-future* when it reads the user's turn after the rated response (``next_user``) on
turn-level items, which a live judge never has. A *listwise* method reads the other replies to the
rated reply's context (``alternatives``); it stays reference-free, and reports say it compares. All
three come from the methods' own declarations
(``Scorer.reads``: a classic scorer's ``requires``, a template's ``reads`` metadata), never from
guessing, so reports can keep the kinds apart and ``judge serve`` can refuse a judge that would need
the future.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..alternatives import READ
from ..errors import InputError
from ..qualities import Quality
from .spec import MethodSpec

#: The input a reference-based method reads.
REFERENCE = "reference"
#: The input a uses-future method reads (turn level: the user's reply to the rated response).
FUTURE = "next_user"
#: The input a listwise method reads (the other systems' replies to the same context).
LISTWISE = READ


@dataclass(frozen=True)
class MethodKinds:
    """The declared reads of one method and the report labels that follow from them."""

    reads: frozenset[str]

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
        """``reference-free`` or ``reference-based``: the split every report keeps."""
        return "reference-based" if self.reference_based else "reference-free"

    @property
    def label(self) -> str:
        """The kind as reports print it, ``, uses-future`` added when it reads the next user turn and
        ``, listwise`` when it reads the other replies to the context."""
        return self.kind + (", uses-future" if self.uses_future else "") + (", listwise" if self.listwise else "")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "uses_future": self.uses_future, "reads": sorted(self.reads),
                **({"listwise": True} if self.listwise else {})}


def spec_reads(spec: MethodSpec, quality: Quality | None = None) -> frozenset[str]:
    """What ``spec`` reads, from its scorers' and templates' declarations (an ensemble: the union over
    all its members, including optional ones a set may leave out). Cheap: classic scorers are created
    without loading models, templates are parsed, nothing runs."""
    if spec.type == "ensemble":
        return frozenset().union(*(spec_reads(m, quality) for m in spec.members))
    if spec.type == "classic":
        from ..scorers.classic import create_classic

        return create_classic(str(spec.scorer), quality=quality, **dict(spec.options)).reads()
    if spec.type == "likelihood":
        from ..scorers.likelihood import READS

        return READS
    from ..prompts import PER_QUALITY_PROMPTS, builtin_prompts, get_prompt, load_template
    from .build import is_template_path

    if is_template_path(spec.prompt):
        return load_template(spec.prompt, quality=quality).reads
    if spec.prompt in PER_QUALITY_PROMPTS:  # one prompt per FED quality (fed-*, fedq-*): the union of them
        family = f"{spec.prompt}-"
        return frozenset().union(*(get_prompt(n).reads for n in builtin_prompts() if n.startswith(family)))
    return get_prompt(spec.prompt).reads


def method_kinds(spec: MethodSpec, quality: Quality | None = None) -> MethodKinds:
    return MethodKinds(spec_reads(spec, quality))


def check_future(spec: MethodSpec, kinds: MethodKinds, level: str | None) -> None:
    """Refuse a method that reads the user's turn after the rated response on turn-level items unless
    it opts in (``allow_future``): its figures describe a judge that sees the user's reaction, which
    no live judge has. Dialog-level items hold their user turns anyway; ``level`` None: unknown."""
    if kinds.uses_future and level != "dialog" and not spec.allow_future:
        raise InputError(
            f"method '{spec.name}' reads the user's turn after the rated response ('{FUTURE}'), which a live "
            "judge never has; opt in with allow_future = true (TOML) or --allow-future (CLI) to measure it "
            "anyway (reports label it uses-future)", field="allow_future")


def check_live(spec: MethodSpec, kinds: MethodKinds) -> None:
    """``judge serve`` answers live requests: a method that needs the next user turn cannot serve them,
    whatever ``allow_future`` says."""
    if kinds.uses_future:
        raise InputError(
            f"method '{spec.name}' reads the user's turn after the rated response ('{FUTURE}'); a served "
            "judge rates responses before the user replies, so judge serve refuses it (allow_future does not "
            "apply here)", field="allow_future")
