"""A pairwise judge: which of two replies to one context is better, read as the probability of each label.

A pairwise template (``answer = "pairwise"``, :mod:`judge.prompts.templates`) shows the two replies as ``response_a``
(first) and ``response_b`` (second) and names a label for each, and optionally one for a tie. The judge reads
the next-token probability of every label from the backend (the full vocabulary on llama.cpp, the top-N on
hosted APIs, marked ``complete = false`` there; estimated from sampled answers with the sampling fallback,
marked ``estimated``) and renormalises them over the labels.

A small judge prefers whichever reply it is shown first (or second), so by default each pair is read in
**both orders**: the replies of systems a and b as (a, b) and as (b, a), one :class:`ItemWork` with two
requests. The pair's **preference** for a is the mean over the orders of p(a better), a tie counting half
for each side; its verdict (``winner``) is the label both orders agree on, and a pair whose two orders
disagree counts as a tie, as MT-Bench and Arena-Hard count it. ``orders = "one"`` reads one order per pair
instead, chosen by a seeded hash of the pair (half the cost; position bias then goes into the verdicts).

Both orders share their instructions and the conversation: the prompts are cut where their texts part
(:func:`judge.prompts.templates.common_head` of the two renderings, before the first reply), so on llama.cpp the
conversation is evaluated once per context and each order costs its two replies and the question after them.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace

from ..backends.base import Backend, Failure, HiddenState, LabelDist, Prompt
from ..backends.requests import Answer
from ..data.items import Item
from ..data.pairs import Pair
from ..data.qualities import Quality
from ..prompts.answers import Pairwise, candidates, check_labels
from ..prompts.templates import PromptTemplate, common_head, short_sha
from .base import ItemWork, OrderAnswer, PairScore, Score, Scorer
from .llm import answer_request
from .rules import ScoringError, label_probs

#: How many orders each pair is read in: ``both`` (default) or ``one`` (seeded per pair).
ORDERS = ("both", "one")
#: The two orders: ``ab`` shows system a's reply first, ``ba`` second.
AB, BA = "ab", "ba"


class PairwiseJudge(Scorer):
    """Compares the two replies of each :class:`Pair` with a pairwise template (see the module docstring).

    It is a lane of the unit of work whose items are pairs: :meth:`plan` gives each pair its requests (one
    per order, through :func:`judge.scorers.llm.answer_request`, as every judge that reads a template's
    answer) and how their answers become its :class:`PairScore`; :func:`judge.engine.compare.compare_rows`
    runs it. It scores no item alone: :meth:`score` refuses (entry points that score items refuse a
    pairwise method before anything loads)."""

    spec: object = None

    def __init__(self, prompt: PromptTemplate, backend: Backend, *, quality: Quality | None = None,
                 orders: str = "both", seed: int = 0, chat: bool | None = None, top_n: int = 20,
                 batch_size: int = 16, window: int | None = None) -> None:
        if not isinstance(prompt.answer, Pairwise):
            raise ValueError(f"{prompt.name} is not a pairwise template (answer = \"pairwise\")")
        if orders not in ORDERS:
            raise ValueError(f"orders must be one of {', '.join(ORDERS)}, got {orders!r}")
        self.prompt = prompt
        self.answer: Pairwise = prompt.answer
        self._backend = backend
        self.quality = quality or prompt.quality
        self.orders = orders
        self.seed = seed
        self.chat = backend.capabilities.chat_template if chat is None else chat
        self.top_n = top_n
        self._batch_size = batch_size
        self._window = window if window is not None else (max(256, batch_size) if batch_size > 1 else 1)
        check_labels(prompt.answer, backend, template=prompt.name)
        self.candidates = tuple(candidates(prompt.answer))
        self.name = f"{prompt.name}|orders={orders}|{backend.name}:{backend.model_id}"

    # -- the Scorer contract ------------------------------------------------------------------------
    def describe(self) -> dict[str, object]:
        return {"method": "pairwise", "prompt": self.prompt.name,
                "quality": self.quality.name if self.quality else None, "orders": self.orders,
                **({"seed": self.seed} if self.orders == "one" else {}), "chat": self.chat,
                "labels": list(self.answer.labels), "backend": self._backend.name, "model": self._backend.model_id}

    def reads(self) -> frozenset[str]:
        return self.prompt.reads

    def check(self, items: Sequence[Item]) -> None:
        """Render the template for each item's context (with its own reply on both sides): template errors
        are bad input, found before anything is compared."""
        for item in items:
            self.prompt.render(item, [], self.quality, (), (item.response or "", item.response or ""))

    def score(self, items: Iterable[Item]) -> Iterator[Score]:
        raise TypeError("a pairwise judge compares pairs of replies (judge.engine.compare.compare_rows), "
                        "not items one at a time")

    def lane(self) -> PairwiseJudge:
        return self

    # -- the lane -----------------------------------------------------------------------------------
    @property
    def backend(self) -> Backend:
        return self._backend

    @property
    def window(self) -> int:
        return self._window

    @property
    def batch_size(self) -> int:
        return self._batch_size

    def needs_items(self) -> bool:
        return False

    def plan(self, items: Sequence[Pair] | None) -> Callable[[Pair], ItemWork]:
        return self.work

    def orders_of(self, pair: Pair) -> tuple[str, ...]:
        """The orders ``pair`` is read in: both, or one drawn by a seeded hash of the pair's items (the same
        pair gets the same order in every run, whatever else is compared)."""
        if self.orders == "both":
            return (AB, BA)
        digest = hashlib.sha256(f"{self.seed}\x1f{pair.a.id}\x1f{pair.b.id}".encode("utf-8", "surrogatepass"))
        return (AB,) if digest.digest()[0] < 128 else (BA,)

    def render(self, pair: Pair, order: str) -> str:
        """The prompt text of ``pair`` in ``order``: the reply shown first is ``response_a`` (and the
        template's ``item`` is its item; both answer one context)."""
        first, second = (pair.a, pair.b) if order == AB else (pair.b, pair.a)
        return self.prompt.render(first, [], self.quality, (), (first.response or "", second.response or ""))

    def prompts(self, pair: Pair) -> dict[str, Prompt]:
        """The prompt of each order read. Both orders' texts are rendered (whichever are read), so that a
        pair's prompt in one order is the same text, cut at the same places, whether the run reads one
        order or both: the cut where the two orders part (``shared``) and where the template's
        item-independent text ends (``instructions``)."""
        texts = {order: self.render(pair, order) for order in (AB, BA)}
        shared = len(common_head(list(texts.values())))
        out = {}
        for order in self.orders_of(pair):
            text = texts[order]
            fixed = self.prompt.instructions_chars(text, self.quality, level="turn")
            out[order] = Prompt(text, chat=self.chat, shared=shared, instructions=fixed)
        return out

    def work(self, pair: Pair) -> ItemWork:
        """The requests of ``pair`` (one per order) and how their answers become its score."""
        prompts = self.prompts(pair)
        orders = tuple(prompts)
        requests = tuple(answer_request(prompts[o], self.candidates, self.top_n) for o in orders)
        sha = short_sha("\x1f".join(prompts[o].text for o in orders))
        return ItemWork(requests, lambda answers: replace(self.to_score(pair, orders, answers), prompt_sha=sha,
                                                          template_sha=self.prompt.sha))

    # -- answers into a score -----------------------------------------------------------------------
    def to_score(self, pair: Pair, orders: Sequence[str], answers: Sequence[Answer]) -> PairScore:
        """The pair's score from the answer of each order (a failure of either fails the pair, with its reason)."""
        read: list[OrderAnswer] = []
        dists: list[LabelDist] = []
        for order, answer in zip(orders, answers, strict=True):
            if isinstance(answer, Failure):
                return PairScore(pair.id, None, error=f"order {order}: {answer.reason}",
                                 flags=(answer.flag,) if answer.flag else ())
            dist = answer.dist if isinstance(answer, HiddenState) else answer
            if not isinstance(dist, LabelDist):
                raise TypeError("a pairwise judge reads label answers, not the log-probabilities of a text")
            try:
                read.append(self.read_order(order, dist))
            except ScoringError as exc:
                return PairScore(pair.id, None, error=f"unparsable output (order {order}): {exc}",
                                 top=[(t, round(math.exp(lp), 6)) for t, lp in dist.top[:5]])
            dists.append(dist)
        preference = math.fsum(o.p_a for o in read) / len(read)
        winners = {o.winner for o in read}
        tie = self.answer.tie
        return PairScore(
            pair.id, preference, orders=tuple(read),
            winner=winners.pop() if len(winners) == 1 else "tie",
            consistent=None if len(read) < 2 else len({o.winner for o in read}) == 1,
            tie=None if tie is None else math.fsum(_normalised(o.label_probs)[tie] for o in read) / len(read),
            estimated=any(d.estimated for d in dists), complete=all(d.complete for d in dists),
            n_prompt_tokens=sum(d.n_prompt_tokens for d in dists),
            n_evaluated_tokens=sum(d.n_evaluated_tokens for d in dists),
            top=[(t, round(math.exp(lp), 6)) for t, lp in dists[0].top[:5]],
        )

    def read_order(self, order: str, dist: LabelDist) -> OrderAnswer:
        """One order's label probabilities, p(a better) and verdict (ScoringError: no mass on any label)."""
        probs = label_probs(dist.logprobs, self.answer)
        norm = _normalised(probs)
        first, tie = self.answer.first, self.answer.tie
        p_first = norm[first] + (norm[tie] / 2 if tie else 0.0)
        p_a = p_first if order == AB else 1.0 - p_first
        top = max(norm.values())
        best = [label for label, p in norm.items() if p == top]
        if len(best) > 1 or best[0] == tie:
            winner = "tie"
        else:
            winner = "a" if (best[0] == first) == (order == AB) else "b"
        return OrderAnswer(order, probs, p_a, winner)


def _normalised(probs: dict[str, float]) -> dict[str, float]:
    total = math.fsum(probs.values())
    if total <= 0:
        raise ScoringError("no probability on any label")
    return {label: p / total for label, p in probs.items()}

