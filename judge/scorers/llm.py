"""An LLM judge: prompt template + example selector + backend + scoring rule."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from ..backends.base import Backend, Failure, HiddenState, Prompt, Reasoned, Reasoning, TokenLogprobs, require
from ..backends.reasoning import ANSWER_LINE_TOKENS
from ..backends.requests import Answer, Request
from ..core.errors import InputError
from ..data.alternatives import READ, Alternatives, alternatives_for, lists_for
from ..data.items import SYSTEM, USER, Item, Turn
from ..data.qualities import Quality
from ..prompts.answers import candidates, check_labels
from ..prompts.context_views import in_view
from ..prompts.templates import PromptTemplate, short_sha
from ..selectors import Selector, ZeroShot
from .base import ItemWork, Said, Score, Scorer
from .rules import ScoringError, score_distribution
from .units import score_lane


def render_prompt(template: PromptTemplate, item: Item, examples: Sequence[tuple[Item, str]], quality: Quality | None,
                  replies: Sequence[str] = (), *, context: str, chat: bool, fixed_examples: bool = False,
                  reason: int = 0) -> tuple[Prompt, str]:
    """The prompt a judge sends for ``item`` showing ``examples`` (each with the label it shows, in display
    order) and the other ``replies`` to its context, and its answer cue ("" without ``reason``: the answer
    is the next token): the one place a judge's prompt text is made, so that a prompt rebuilt later from a
    run's records (``MethodType.prompts``, ``judge view``) is the one sent. ``fixed_examples`` (the
    selector's): every item shows the same examples, so they belong to the text no item changes, which the
    backend evaluates apart (``Prompt.instructions``). ``reason``: the judge writes a rationale of at most
    that many tokens first, and the template's request for it replaces its cue line."""
    examples = list(examples)
    text, cue = render_text(template, in_view(item, context), examples, quality, replies, reason)
    # The text no item changes: the instructions, and the examples when every item shows the same.
    fixed = template.instructions_chars(text, quality, level=item.level,
                                        examples=examples if not examples or fixed_examples else None)
    return Prompt(text, chat=chat, shared=template.shared_chars(text), instructions=fixed), cue


def render_text(template: PromptTemplate, item: Item, examples: Sequence[tuple[Item, str]], quality: Quality | None,
                replies: Sequence[str], reason: int) -> tuple[str, str]:
    """The prompt text for ``item`` (already in its context view) and its answer cue ("" without ``reason``)."""
    if reason:
        return template.render_reasoned(item, examples, quality, replies, tokens=reason)
    return template.render(item, examples, quality, replies), ""


def check_reasoning(backend: Backend, reason: int) -> None:
    """Refuse, before anything is scored, a judge its backend cannot answer: a rationale from a backend that
    cannot have its model write one (``capabilities.reason``), or a one-token read of a model that thinks
    before it answers (``capabilities.answers_at_once`` False: its first token is never the answer)."""
    if reason:
        require(backend, "reason", "a judge that reasons first (reason = N)")
    elif not backend.capabilities.answers_at_once:
        raise InputError(f"model {backend.model_id} thinks before it answers, so a one-token read cannot score it: "
                         "let it reason first with --reason N (TOML: reason = N), e.g. --reason 1024")


class LLMJudge(Scorer):
    """Scores items by reading the backend's next-token distribution over the prompt's answer labels.

    ``pool`` is where in-context examples come from (default: the rated items being scored, with the
    selector's leakage guard keeping each item's own conversation out of its examples). ``context``
    is what of the rated item the prompt shows (:mod:`judge.prompts.context_views`); examples are shown as given.
    ``population`` is where a template that reads ``alternatives`` finds the other replies to an item's
    context (default: the items being scored; ``()``: none, each reply is shown alone, as a served judge
    must, so that one client's replies never reach another's prompt). ``hidden`` asks the backend for the
    hidden state at the answer position with each answer (``Backend.hidden_states``, the same forward
    pass): each Score then carries its ``vector``, and the answer is the one ``label_logprobs`` gives.
    """

    #: The method spec (:class:`judge.engine.spec.MethodSpec`) this judge was built from, when it came
    #: through ``make_judge`` (provenance). Typed loosely: scorers sit below the specs that build them.
    spec: Any = None

    def __init__(
        self,
        prompt: PromptTemplate,
        backend: Backend,
        *,
        quality: Quality | None = None,
        selector: Selector | None = None,
        k: int = 0,
        pool: Sequence[Item] | None = None,
        top_k: int = 3,
        rule: str = "topk",
        chat: bool | None = None,
        top_n: int = 20,
        batch_size: int = 16,
        window: int | None = None,
        context: str = "given",
        population: Sequence[Item] | None = None,
        hidden: bool = False,
        reason: int = 0,
        reason_temperature: float = 0.0,
        reason_seed: int = 0,
    ) -> None:
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        if reason < 0 or reason_temperature < 0:
            raise ValueError(f"reason and reason_temperature must be >= 0, got {reason} and {reason_temperature}")
        if reason and hidden:
            raise ValueError("a hidden state is read at a one-token answer's position, not after a rationale")
        self.prompt = prompt
        self.backend = backend
        self.quality = quality or prompt.quality
        self.selector = selector or ZeroShot()
        self.k = k
        self.pool = pool
        self.top_k = top_k
        self.rule = rule
        self.chat = backend.capabilities.chat_template if chat is None else chat
        self.top_n = top_n
        self.batch_size = batch_size
        self.context = context
        self.population = population
        self.hidden = hidden
        self.reason = reason
        self.reason_temperature = reason_temperature
        self.reason_seed = reason_seed
        check_reasoning(backend, reason)
        # Items whose prompts are built and reordered together (memory is bounded by it). batch_size 1
        # asks for strict item-by-item results (the harness saves each item as it comes): no reordering.
        self.window = window if window is not None else (max(256, batch_size) if batch_size > 1 else 1)
        check_labels(prompt.answer, backend, template=prompt.name)  # before any scoring
        self.candidates = tuple(candidates(prompt.answer))
        view = "" if context == "given" else f"|context={context}"
        view += f"|reason={reason}" if reason else ""
        self.name = f"{prompt.name}|{self.selector.name}|k={k}{view}|{backend.name}:{backend.model_id}"

    def describe(self) -> dict[str, object]:
        return {
            "method": "llm",
            "prompt": self.prompt.name,
            "quality": self.quality.name if self.quality else None,
            "k": self.k,
            "top_k": self.top_k,
            "rule": self.rule,
            "chat": self.chat,
            **({"context": self.context} if self.context != "given" else {}),
            **({"reason": self.reason, "reason_temperature": self.reason_temperature} if self.reason else {}),
            "backend": self.backend.name,
            "model": self.backend.model_id,
            **self.selector.describe(),
        }

    def reads(self) -> frozenset[str]:
        """What the template declares it reads beyond the conversation (its ``reads`` metadata)."""
        return self.prompt.reads

    def check(self, items: Sequence[Item]) -> None:
        """Render every item once (no examples): template errors are bad input, found before scoring."""
        alternatives = self.call_alternatives(items)
        for item in items:
            self.render(in_view(item, self.context), [], alternatives_for(item, alternatives))

    def render(self, item: Item, examples: Sequence[tuple[Item, str]], replies: Sequence[str]) -> tuple[str, str]:
        """The prompt text for ``item`` and its answer cue ("" without ``reason``: the answer is the next
        token): with ``reason``, the template's request for a rationale in place of its cue line."""
        return render_text(self.prompt, item, examples, self.quality, replies, self.reason)

    # -- prompts ------------------------------------------------------------------------------------
    def build_prompt(self, item: Item, pool: Sequence[Item] | None = None,
                     alternatives: Alternatives | None = None) -> tuple[Prompt, list[Item]]:
        """The prompt for ``item`` and the examples it shows, fitted to the context window.

        When examples do not fit, the least relevant are dropped first whatever the display order
        (the selector's ``rank`` says which those are); the test item itself is never cut (a prompt
        too long without examples fails the item). The examples returned are those actually shown.
        """
        prompt, shown, _ = self.build_reasoned(item, pool, alternatives)
        return prompt, shown

    def build_reasoned(self, item: Item, pool: Sequence[Item] | None = None,
                       alternatives: Alternatives | None = None) -> tuple[Prompt, list[Item], str]:
        """:meth:`build_prompt` with the prompt's answer cue ("" without ``reason``)."""
        pool = self.pool if pool is None else pool
        ranked = self.selector.rank(item, pool or [], self.k, self.quality) if self.k else []
        if ranked and self.quality is None:
            raise ValueError("in-context examples need a quality to read their human labels from")
        labels = {ex.id: self.prompt.example_label(ex, self.quality) for ex in ranked}  # type: ignore[arg-type]
        if alternatives is None:
            alternatives = self.call_alternatives([item])
        replies = alternatives_for(item, alternatives)

        def render(kept: list[Item]) -> tuple[Prompt, list[Item], str]:
            shown = self.selector.arrange(kept)
            prompt, cue = render_prompt(self.prompt, item, [(ex, labels[ex.id]) for ex in shown], self.quality,
                                        replies, context=self.context, chat=self.chat,
                                        fixed_examples=self.selector.fixed_examples, reason=self.reason)
            return prompt, shown, cue

        prompt, shown, cue = render(ranked)
        # A rationale needs room too: its budget and the answer line come after the prompt.
        limit = self.backend.capabilities.max_context - 1 - (self.reason + ANSWER_LINE_TOKENS if self.reason else 0)
        while ranked and self.backend.count_tokens(prompt) > limit:
            ranked = ranked[:-1]
            prompt, shown, cue = render(ranked)
        return prompt, shown, cue

    # -- scoring ------------------------------------------------------------------------------------
    def score(self, items: Iterable[Item]) -> Iterator[Score]:
        """Score items, yielding Scores in input order; failures become error Scores.

        Items are taken ``window`` at a time, ``batch_size`` prompts per backend call. For a backend
        that reuses the KV cache of the previous prompt (``capabilities.prefix_reuse``: llama.cpp) the window's
        prompts are sent sorted by text, so prompts that share a prefix (instruction, examples) run
        one after another and only what follows the shared part is evaluated; other backends get
        them in input order (:mod:`judge.scorers.units`, which runs every lane).
        Scores are yielded as soon as every earlier item of the window is done, so memory stays
        bounded by the window however many items stream through (unless the documented defaults need
        every item of the call up front: :meth:`needs_items`).
        """
        return score_lane(self, items)

    def lane(self) -> LLMJudge:
        """A judge is a lane: one ``label`` request per item (``hidden`` with ``hidden``)."""
        return self

    def needs_items(self) -> bool:
        """Examples drawn from the call's own rated items (no pool given), or the other replies of each
        context drawn from them (no population given): the documented defaults need every item up front."""
        return bool(self.k and self.pool is None) or (self.reads_alternatives and self.population is None)

    def plan(self, items: Sequence[Item] | None) -> Callable[[Item], ItemWork]:
        """Each item's request: its prompt (with the examples of this call's pool) and its answer labels."""
        pool = self.call_pool(items) if items is not None else self.pool
        alternatives = self.call_alternatives(items if items is not None else ())
        return lambda item: self.work(item, pool, alternatives)

    def work(self, item: Item, pool: Sequence[Item] | None, alternatives: Alternatives | None) -> ItemWork:
        """The request of ``item`` and how its answer becomes the item's score."""
        prompt, shown, cue = self.build_reasoned(item, pool, alternatives)
        if self.reason:
            how = Reasoning(self.reason, cue, self.reason_temperature, self.reason_seed)
            request = Request("reason", prompt, self.candidates, self.top_n, reasoning=how)
        else:
            request = answer_request(prompt, self.candidates, self.top_n, hidden=self.hidden)
        sha = short_sha(prompt.text)
        return ItemWork((request,), lambda answers: replace(self.to_score(item, shown, answers[0]), prompt_sha=sha,
                                                            template_sha=self.prompt.sha))

    def call_pool(self, items: Sequence[Item]) -> Sequence[Item] | None:
        """Where one call's examples come from: the given pool, or without one the rated items of that
        call (all of them, fixed before the first prompt is built). Kept per call, never stored, so a
        later call draws its examples from its own items."""
        if self.k and self.pool is None:
            return [it for it in items if self.quality and it.human(self.quality.name) is not None]
        return self.pool

    @property
    def reads_alternatives(self) -> bool:
        """Whether the template shows the other replies to an item's context (``reads = ["alternatives"]``)."""
        return READ in self.prompt.reads

    def call_alternatives(self, items: Sequence[Item]) -> Alternatives | None:
        """The replies of each context one call's prompts show (None: the template shows none): from the
        given population, or without one from the items of that call, kept per call like its pool."""
        return lists_for(self.prompt.reads, self.population if self.population is not None else items)

    def to_score(self, item: Item, examples: list[Item], dist: Answer) -> Score:
        """The score of ``item`` from the backend's answer to its prompt (which showed ``examples``)."""
        if isinstance(dist, TokenLogprobs):
            raise TypeError("a judge reads a label answer, not the log-probabilities of a text")
        if isinstance(dist, HiddenState):
            score = self.to_score(item, examples, dist.dist)
            score.vector = dist.vector
            return score
        if isinstance(dist, Reasoned):
            score = self.to_score(item, examples, dist.dist)
            score.said = Said(dist.rationale, dist.n_generated, dist.unparsed)
            return score
        ids = [ex.id for ex in examples]
        if isinstance(dist, Failure):
            return Score(item.id, None, examples=ids, error=dist.reason, flags=(dist.flag,) if dist.flag else (),
                         said=Said("", 0, 0) if self.reason else None)
        top = [(tok, round(math.exp(lp), 6)) for tok, lp in dist.top[:5]]
        try:
            value, probs = score_distribution(dist.logprobs, self.prompt.answer, self.top_k, self.rule)
        except ScoringError as exc:
            return Score(item.id, None, examples=ids, error=f"unparsable output: {exc}", top=top,
                         n_prompt_tokens=dist.n_prompt_tokens)
        return Score(
            item.id,
            value,
            label_probs=probs,
            examples=ids,
            estimated=dist.estimated,
            complete=dist.complete,
            n_prompt_tokens=dist.n_prompt_tokens,
            n_evaluated_tokens=dist.n_evaluated_tokens,
            top=top,
        )

    def prompt_settings(self) -> dict[str, object]:
        """How this judge's prompts reach its model: as one chat message or as plain text, and the text the
        backend puts around a prompt's own (``Backend.wrapping``; None when the backend cannot say)."""
        wrapping = self.backend.wrapping(self.chat)
        return {"chat": self.chat, "wrapping": None if wrapping is None else list(wrapping)}

    def score_text(self, context: Sequence[str | Turn], response: str) -> Score:
        """Score one response to a context given as plain strings (alternating, last one the user's)."""
        turns = []
        for i, t in enumerate(context):
            if isinstance(t, Turn):
                turns.append(t)
            else:
                turns.append(Turn(USER if (len(context) - 1 - i) % 2 == 0 else SYSTEM, str(t)))
        item = Item(id="text", level="turn", context=tuple(turns), response=response)
        return next(self.score([item]))


def answer_request(prompt: Prompt, labels: Sequence[str], top_n: int, *, hidden: bool = False) -> Request:
    """The request that reads a prompt's answer: the next-token log-probabilities of its answer ``labels``
    (``hidden``: with the hidden state at the answer position). Every judge that reads a template's answer
    asks through here, the pointwise ones (:class:`LLMJudge`, heads) and the pairwise one
    (:mod:`judge.scorers.pairwise`, one request per order shown), so that a new way of reading an answer
    (a rationale generated before the label, say) is one change here for all of them."""
    return Request("hidden" if hidden else "label", prompt, tuple(labels), top_n)
