"""Prompt families on a set: how much of their prompts the methods of one family share (``judge run --check``).

Methods of one model that score the same items run in one pass, their requests ordered by prefix across
the methods (:mod:`judge.scorers.units`, which cuts the pass into units of work). Prompts of one family
share everything but their last line (``prompts/_criteria.j2``, the ``fedq`` family), so in that pass the
prompts of one item follow each other and only each one's last line is evaluated; this module measures
that share from the templates alone, before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..data.alternatives import alternatives_for, lists_for
from ..data.items import Item
from ..prompts.context_views import in_view
from .build import backend_key
from .spec import MethodSpec, Prepared

#: Items per family and set whose prefixes ``judge run --check`` measures, spread evenly over the set
#: (tokenizing every prompt of a leaderboard takes longer than all the rest of the check).
FAMILY_SAMPLE = 50


@dataclass(frozen=True)
class FamilyShare:
    """How much of their prompts the methods of one prompt family share on one set (``judge run
    --check``): per item scored by two of the family's prompts or more, the longest prefix all its
    prompts have in common, in tokens of the model (characters where no tokenizer is at hand), averaged
    over ``measured`` of those ``items``, spread evenly over them."""

    family: str
    dataset: str
    model: str
    prompts: tuple[str, ...]
    items: int
    measured: int
    shared: float
    length: float
    unit: str

    def describe(self) -> str:
        share = self.shared / self.length if self.length else 0.0
        over = f" ({self.measured} measured)" if self.measured < self.items else ""
        return (f"family {self.family} on {self.dataset}, {self.model}: {len(self.prompts)} prompts "
                f"({', '.join(self.prompts)}), {self.items} items{over}: shared prefix {self.shared:.1f} of "
                f"{self.length:.1f} {self.unit} per prompt ({share:.0%}), zero-shot text")


def common_prefix(seqs: Sequence[Sequence[Any]]) -> int:
    """Length of the longest prefix every sequence starts with."""
    if not seqs:
        return 0
    n = min(len(s) for s in seqs)
    for i in range(n):
        first = seqs[0][i]
        if any(s[i] != first for s in seqs[1:]):
            return i
    return n


def family_shares(
    cells: Sequence[tuple[str, Prepared, Sequence[Item]]],
    tokenizer: Callable[[MethodSpec], Callable[[str], list[int]] | None] = lambda spec: None,
    *,
    sample: int = FAMILY_SAMPLE,
) -> list[FamilyShare]:
    """The shared prefix of each prompt family (templates that declare ``family``) per set and model,
    for cells given as (set name, prepared method, items; those without a prompt are passed over), measured on ``sample`` of the items that
    two of the family's prompts score or more, spread evenly over them (in order). Prompts are rendered without examples, as the family's
    zero-shot methods send them; ``tokenizer(spec)`` gives the model's tokenizer (None: count
    characters). The chat template, when one is used, adds the same tokens to every prompt."""
    groups: dict[tuple[str, str, str], list[tuple[Prepared, Sequence[Item]]]] = {}
    for dataset, prep, items in cells:
        if prep.prompt is None or prep.prompt.family is None:
            continue
        # The reply-alone prompts (context = "none") share among themselves, not with the given ones.
        shown = prep.spec.kind.context_view(prep.spec)
        view = "" if shown == "given" else f" (context {shown})"
        groups.setdefault((backend_key(prep.spec), dataset, prep.prompt.family + view), []).append((prep, items))
    out = []
    for (_, dataset, family), members in groups.items():
        names = tuple(dict.fromkeys(p.prompt.name for p, _ in members if p.prompt is not None))
        if len(names) < 2:
            continue
        # Per item, one (prepared method, item, the replies it lists) per prompt of the family that scores it.
        per_item: dict[str, dict[str, tuple[Prepared, Item, tuple[str, ...]]]] = {}
        for prep, items in members:
            assert prep.prompt is not None
            listed = lists_for(prep.prompt.reads, prep.population if prep.population is not None else items)
            for item in items:
                per_item.setdefault(item.id, {}).setdefault(prep.prompt.name, (prep, item, alternatives_for(item, listed)))
        shared_items = [pairs for pairs in per_item.values() if len(pairs) > 1]
        if not shared_items:
            continue
        spec = members[0][0].spec
        tok = tokenizer(spec)
        unit = "tokens" if tok is not None else "characters"
        shared = []
        n = len(shared_items)
        picked = shared_items if n <= sample else [shared_items[i * n // sample] for i in range(sample)]
        for pairs in picked:
            texts = [p.prompt.render(in_view(item, p.spec.kind.context_view(p.spec)), [], p.quality, replies)
                     for p, item, replies in pairs.values() if p.prompt is not None]
            seqs: list[Sequence[Any]] = [tok(t) for t in texts] if tok is not None else list(texts)
            shared.append((common_prefix(seqs), sum(len(s) for s in seqs) / len(seqs)))
        out.append(FamilyShare(family, dataset, f"{spec.backend} {spec.model or '(default model)'}", names,
                               len(shared_items), len(shared), sum(s for s, _ in shared) / len(shared),
                               sum(n for _, n in shared) / len(shared), unit))
    return out
