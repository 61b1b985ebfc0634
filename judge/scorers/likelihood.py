"""Reference-free likelihood signals read from the judge model itself (llama.cpp, one model load).

Each system utterance is scored as a continuation of a plain-text transcript: log p(reply | context)
and log p(reply | no context), per token, read through the backend's optional ``sequence_logprobs``.
Their difference is a pointwise mutual information: how much the context explains the reply, which
separates a fitting reply from a fluent one that belongs to another conversation. A dialog-level item
is the mean over its system turns.

The ``followup`` signal is the FED metric's (Mehri & Eskenazi 2020) with the judge model in place of
DialoGPT: after the transcript up to and including the rated reply (a dialog item: the whole dialog),
how likely the model finds a user's positive follow-ups ("Wow that is really interesting.") against
negative ones ("That's really boring."), each as the mean log-probability of its own tokens; the
FED qualities of the item's level are averaged (FED's Overall). The transcript is the prompts' shared
part, so all follow-ups of an item reuse its evaluation on llama.cpp.

These methods read neither references nor the turn after the rated response (``READS`` is empty):
they are reference-free and never use the future (a follow-up is a fixed sentence, not the user's turn).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from ..backends.base import Backend, Failure, Prompt, TokenLogprobs
from ..backends.requests import Answer, Request
from ..core.errors import InputError, MissingInputError
from ..data.items import SYSTEM, Item, Turn
from .base import ItemWork, Score, Scorer
from .classic.fed_metric import followups, quality_score
from .units import score_lane


@dataclass(frozen=True)
class Signal:
    """What one signal is and what it asks the model for."""

    #: The statistic in words.
    text: str
    #: Also read the reply after no context (log p(reply | no context)), which PMI signals subtract.
    prior: bool = False
    #: Read the level's FED follow-ups after the reply instead of the reply itself.
    followups: bool = False


#: Statistics a likelihood method reports, each from per-token log-probabilities of the reply.
SIGNALS = {
    "conditional": Signal("mean log p(token | context)"),
    "unconditional": Signal("mean log p(token | no context)", prior=True),
    "pmi": Signal("mean log p(token | context) - mean log p(token | no context)", prior=True),
    "conditional-min": Signal("min log p(token | context) (the least expected token)"),
    "pmi-min": Signal("min over tokens of log p(token | context) - log p(token | no context)", prior=True),
    "pmi-max": Signal("max over tokens of log p(token | context) - log p(token | no context)", prior=True),
    "followup": Signal("FED follow-ups: mean log p(positive follow-up) - mean log p(negative follow-up) after the "
                       "reply, averaged over the level's FED qualities", followups=True),
}
#: The transcript's first line; the no-context prompt is this line and the reply's speaker only.
HEADER = "A conversation between a user and a system."
_LABELS = {SYSTEM: "System"}
#: Inputs beyond the conversation a likelihood method reads (``Scorer.reads``; engine.kinds): none.
READS: frozenset[str] = frozenset()


def _line(turn: Turn) -> str:
    return f"{_LABELS.get(turn.speaker, 'User')}: {turn.text}"


def utterances(item: Item) -> list[tuple[tuple[Turn, ...], str]]:
    """(preceding turns, reply) for every system utterance the item is scored on."""
    if item.level == "turn":
        return [(item.context, item.response or "")]
    return [(item.dialog[:i], t.text) for i, t in enumerate(item.dialog) if t.speaker == SYSTEM]


def conditional_prompt(context: Sequence[Turn]) -> Prompt:
    return Prompt("\n".join([HEADER, *(_line(t) for t in context), "System:"]))


def unconditional_prompt() -> Prompt:
    return Prompt(f"{HEADER}\nSystem:")


def followup_prompt(item: Item) -> Prompt:
    """The transcript through the rated reply (a dialog item: the whole dialog), then the user's turn to
    come. The transcript and its line break are declared shared (the break included: a tokenizer may
    merge it with the reply's last character), so the item's follow-ups reuse them."""
    turns = (*item.context, Turn(SYSTEM, item.response or "")) if item.level == "turn" else item.dialog
    transcript = "\n".join([HEADER, *(_line(t) for t in turns)])
    return Prompt(f"{transcript}\nUser:", shared=len(transcript) + 1)


def followup_texts(level: str) -> list[str]:
    """The distinct follow-ups of every FED quality of ``level``, in a fixed order."""
    table = followups()[level]
    return sorted({u for q in table.values() for side in ("positive", "negative") for u in q[side]})


def followup_score(level: str, logprobs: dict[str, list[float]]) -> float:
    """FED's Overall from each follow-up's token log-probabilities: per quality, the mean over positive
    follow-ups of their mean token log-probability minus the same over negative ones (no positives: 0);
    then the mean over the level's qualities."""
    loss = {u: -math.fsum(lps) / len(lps) for u, lps in logprobs.items()}
    table = followups()[level]
    return math.fsum(quality_score(q, loss) for q in table.values()) / len(table)


def statistic(signal: str, cond: list[float], uncond: list[float] | None) -> float:
    """The signal's value for one reply from its per-token log-probabilities."""
    if signal == "conditional":
        return math.fsum(cond) / len(cond)
    if signal == "conditional-min":
        return min(cond)
    assert uncond is not None and len(uncond) == len(cond)
    if signal == "unconditional":
        return math.fsum(uncond) / len(uncond)
    pmi = [c - u for c, u in zip(cond, uncond, strict=True)]
    if signal == "pmi":
        return math.fsum(pmi) / len(pmi)
    return min(pmi) if signal == "pmi-min" else max(pmi)


class LikelihoodScorer(Scorer):
    """One likelihood signal (``SIGNALS``) of a backend that reads per-token log-probabilities."""

    def __init__(self, backend: Backend, signal: str = "pmi", *, name: str | None = None) -> None:
        if signal not in SIGNALS:
            raise InputError(f"must be one of {', '.join(SIGNALS)}, got {signal!r}", field="signal")
        if not backend.capabilities.sequence_logprobs:
            raise InputError(f"backend '{backend.name}' cannot read the log-probabilities of a reply; likelihood "
                             "methods need one that can (llamacpp)", field="backend")
        self.backend = backend
        self.signal = signal
        self.name = name or f"likelihood-{signal}|{backend.name}:{backend.model_id}"

    def describe(self) -> dict[str, object]:
        return {"method": "likelihood", "signal": self.signal, "backend": self.backend.name,
                "model": self.backend.model_id}

    def reads(self) -> frozenset[str]:
        """Nothing beyond the conversation: the reply is scored against its context and against none."""
        return READS

    @staticmethod
    def check(items: Sequence[Item]) -> None:
        """Refuse an item without a system turn (the method checks with it before a model loads)."""
        for it in items:
            if not utterances(it):
                raise MissingInputError("a likelihood method needs a system turn to score", record=it.id,
                                        field="dialog")

    def score(self, items: Iterable[Item]) -> Iterator[Score]:
        """Items one at a time (a kill loses at most one); the no-context prompt is shared by all."""
        return score_lane(self, items)

    #: A lane of one item per window, every request of the item in one backend call.
    window = 1
    batch_size = 1 << 16

    def lane(self) -> LikelihoodScorer:
        """A likelihood signal is a lane of ``sequence`` requests: per utterance the reply after its context
        (and after no context, for the signals that subtract it), or the follow-ups after the reply."""
        return self

    def needs_items(self) -> bool:
        return False

    def plan(self, items: Sequence[Item] | None) -> Callable[[Item], ItemWork]:
        return self.work

    def work(self, item: Item) -> ItemWork:
        """The requests of ``item`` and how their answers become its score."""
        signal = SIGNALS[self.signal]
        if signal.followups:
            prompt, texts = followup_prompt(item), followup_texts(item.level)
            return ItemWork(tuple(Request("sequence", prompt, continuation=" " + u) for u in texts),
                            lambda answers: self._followup_score(item, texts, answers))
        requests: list[Request] = []
        for context, reply in utterances(item):
            requests.append(Request("sequence", conditional_prompt(context), continuation=" " + reply))
            if signal.prior:
                requests.append(Request("sequence", unconditional_prompt(), continuation=" " + reply))
        return ItemWork(tuple(requests), lambda answers: self._to_score(item, answers, 2 if signal.prior else 1))

    def _followup_score(self, item: Item, texts: list[str], results: Sequence[Answer]) -> Score:
        failed = _failed(item, results)
        if failed is not None:
            return failed
        done = [r for r in results if isinstance(r, TokenLogprobs)]
        if len(done) != len(results):
            return Score(item.id, None, error="the backend answered a sequence request with another kind of answer")
        return Score(item.id, followup_score(item.level, {u: r.logprobs for u, r in zip(texts, done, strict=True)}),
                     n_prompt_tokens=sum(r.n_prompt_tokens for r in done),
                     n_evaluated_tokens=sum(r.n_evaluated_tokens for r in done))

    def _to_score(self, item: Item, results: Sequence[Answer], step: int) -> Score:
        failed = _failed(item, results)
        if failed is not None:
            return failed
        n_prompt = sum(r.n_prompt_tokens for r in results if isinstance(r, TokenLogprobs))
        values = []
        for j in range(0, len(results), step):
            cond = results[j]
            uncond = results[j + 1] if step == 2 else None
            assert isinstance(cond, TokenLogprobs) and (uncond is None or isinstance(uncond, TokenLogprobs))
            if not cond.logprobs:
                continue  # an empty reply has no token to score; the item is flagged empty_response
            values.append(statistic(self.signal, cond.logprobs, None if uncond is None else uncond.logprobs))
        if not values:
            return Score(item.id, None, error="no reply token to score", n_prompt_tokens=n_prompt)
        evaluated = sum(r.n_evaluated_tokens for r in results if isinstance(r, TokenLogprobs))
        return Score(item.id, math.fsum(values) / len(values), n_prompt_tokens=n_prompt,
                     n_evaluated_tokens=evaluated)


def _failed(item: Item, results: Sequence[Answer]) -> Score | None:
    """The item's failed score when any of its requests failed (the first failure's reason), else None:
    a signal needs every one of its log-probabilities."""
    failure = next((r for r in results if isinstance(r, Failure)), None)
    if failure is None:
        return None
    return Score(item.id, None, error=failure.reason, flags=(failure.flag,) if failure.flag else ())
