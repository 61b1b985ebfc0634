"""Scheduling by prefix: several LLM methods of one model score their items in one pass.

Methods of one model that score the same items (``judge run`` cells of one model and set, the LLM
members of an ensemble) used to run one after the other, each computing its prompts from scratch.
Prompts of one family share everything but their last line (``prompts/_criteria.j2``, the ``fedq``
family), so here every method's prompts for a window of items are built together and, for a
backend that reuses the previous prompt's KV prefix (``capabilities.prefix_reuse``: llama.cpp),
sent sorted by text: the prompts of one item follow each other and only each one's last line is
evaluated. Backends without prefix reuse get each method's prompts in input order, as before.

Each method still gets exactly what it got alone: the same prompts (built by its own
:class:`LLMJudge`), the same backend calls one method at a time (so cache keys and per-method
counters are unchanged), and its scores in its own item order. A backend call only ever holds
prompts of one method, so time and cache counters can be charged to the method that caused them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

from ..alternatives import alternatives_for, lists_for
from ..context_views import in_view
from ..items import Item
from ..scorers.base import Score
from ..scorers.llm import LLMJudge
from .build import backend_key
from .spec import MethodSpec, Prepared


@dataclass
class LaneCost:
    """What one method's share of a scheduled pass cost: seconds in its prompt building and backend
    calls, and the backend's counters (cache hits, misses, ...) that moved during its calls."""

    seconds: float = 0.0
    counters: dict[str, int] = field(default_factory=dict)

    def add(self, seconds: float, before: Mapping[str, int], after: Mapping[str, int]) -> None:
        self.seconds += seconds
        for key in after:
            self.counters[key] = self.counters.get(key, 0) + after[key] - before.get(key, 0)


def _window_of(judges: Sequence[LLMJudge]) -> int:
    return max(1, min(j.window for j in judges))


def score_together(
    judges: Sequence[LLMJudge],
    items: Sequence[Sequence[Item]],
    *,
    costs: Sequence[LaneCost] | None = None,
    window: int | None = None,
) -> Iterator[tuple[int, Score]]:
    """Score ``items[i]`` with ``judges[i]`` for every i, sharing one backend; yields ``(i, score)``.

    Each method's scores come in its own items' order, as soon as they and every earlier one of that
    method are done (scores of different methods interleave). All judges must hold the same backend
    object. Items are taken ``window`` distinct ids at a time (default: the smallest window of the
    judges), in order of first appearance over the methods, so each window holds the same items for
    every method that scores them. ``costs`` (one per method) receive the time and counters of that
    method's share.
    """
    if len(judges) != len(items):
        raise ValueError(f"{len(judges)} judges for {len(items)} item lists")
    if not judges:
        return
    backend = judges[0].backend
    if any(j.backend is not backend for j in judges):
        raise ValueError("methods scheduled together must share one backend")
    lanes = [list(its) for its in items]
    pools = [judge.call_pool(its) for judge, its in zip(judges, lanes, strict=True)]
    alternatives = [judge.call_alternatives(its) for judge, its in zip(judges, lanes, strict=True)]
    rank: dict[str, int] = {}
    for its in lanes:
        for it in its:
            rank.setdefault(it.id, len(rank))
    size = window or _window_of(judges)
    reuse = backend.capabilities.prefix_reuse
    counters = backend.counters
    pos = [0] * len(lanes)  # next position of each lane to take into a window
    nxt = [0] * len(lanes)  # next position of each lane to yield
    done: list[dict[int, Score]] = [{} for _ in lanes]
    for start in range(0, len(rank), size):
        end = start + size
        # (lane, position, prompt, examples) of every method's items that fall in this window
        jobs = []
        for lane, (judge, its) in enumerate(zip(judges, lanes, strict=True)):
            t0, c0 = perf_counter(), counters()
            while pos[lane] < len(its) and rank[its[pos[lane]].id] < end:
                prompt, shown = judge.build_prompt(its[pos[lane]], pools[lane], alternatives[lane])
                jobs.append((lane, pos[lane], prompt, shown))
                pos[lane] += 1
            if costs is not None:
                costs[lane].add(perf_counter() - t0, c0, counters())
        if reuse:
            # Prompts sharing a prefix run back to back; ties (one prompt, several methods) keep method order.
            jobs.sort(key=lambda j: (j[2].chat, j[2].text, j[0]))
        k = 0
        while k < len(jobs):
            lane = jobs[k][0]
            judge = judges[lane]
            run = [jobs[k]]
            while (k + len(run) < len(jobs) and len(run) < judge.batch_size and jobs[k + len(run)][0] == lane):
                run.append(jobs[k + len(run)])
            k += len(run)
            t0, c0 = perf_counter(), counters()
            dists = judge.ask([j[2] for j in run])
            for (_, p, _, shown), dist in zip(run, dists, strict=True):
                done[lane][p] = judge.to_score(lanes[lane][p], shown, dist)
            if costs is not None:
                costs[lane].add(perf_counter() - t0, c0, counters())
            while nxt[lane] in done[lane]:
                yield lane, done[lane].pop(nxt[lane])
                nxt[lane] += 1


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
        view = "" if prep.spec.context == "given" else f" (context {prep.spec.context})"
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
            texts = [p.prompt.render(in_view(item, p.spec.context), [], p.quality, replies)
                     for p, item, replies in pairs.values() if p.prompt is not None]
            seqs: list[Sequence[Any]] = [tok(t) for t in texts] if tok is not None else list(texts)
            shared.append((common_prefix(seqs), sum(len(s) for s in seqs) / len(seqs)))
        out.append(FamilyShare(family, dataset, f"{spec.backend} {spec.model or '(default model)'}", names,
                               len(shared_items), len(shared), sum(s for s, _ in shared) / len(shared),
                               sum(n for _, n in shared) / len(shared), unit))
    return out
