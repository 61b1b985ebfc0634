"""What a scorer asks of a backend, as data: a request names its kind and everything its answer depends on.

Every method that runs a model states its work as :class:`Request` values (an LLM judge one ``label``
request per item, a head the same prompt as a ``hidden`` request, a likelihood signal several
``sequence`` requests per item) and turns the answers back into scores itself
(:class:`judge.scorers.base.ItemWork`). A request holds no live object (a prompt, strings, numbers), so
it can be hashed into its cache key (:func:`judge.engine.cache.request_key`), sorted by prefix, pickled to
another process or machine, and answered there by a backend built from the same spec (:func:`ask`).

Kinds and what answers them (:data:`KINDS`):

* ``label``: the next-token log-probabilities of ``candidates`` after ``prompt``
  (``Backend.label_logprobs``; every backend) -> :class:`LabelDist`;
* ``hidden``: the same answer with the final hidden state at the answer position
  (``Backend.hidden_states``; ``capabilities.hidden_states``) -> :class:`HiddenState`;
* ``sequence``: the log-probability of every token of ``continuation`` after ``prompt``
  (``Backend.sequence_logprobs``; ``capabilities.sequence_logprobs``) -> :class:`TokenLogprobs`;
* ``reason``: the model writes a rationale after ``prompt`` as ``reasoning`` says (its budget, temperature,
  seed and answer cue), then the label distribution of ``candidates`` is read after the answer cue
  (``Backend.reason``; ``capabilities.reason``) -> :class:`Reasoned`. Any prompt can be asked this way (a
  judge's, a pairwise comparison's): what the answer is read after is the prompt's own cue.

A new kind is one more entry of :data:`KINDS`, a backend method and capability that answer it, and a cache
table and key; nothing that schedules or ships requests changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Literal

from .base import Backend, Failure, HiddenState, LabelDist, Prompt, Reasoned, Reasoning, TokenLogprobs

RequestKind = Literal["label", "hidden", "sequence", "reason"]
#: A backend's answer to one request (a ``Failure`` for a request it could not answer).
Answer = LabelDist | HiddenState | TokenLogprobs | Reasoned | Failure


@dataclass(frozen=True)
class Request:
    """One question to a backend. ``candidates`` and ``top_n`` apply to ``label``, ``hidden`` and ``reason``
    requests, ``continuation`` to ``sequence`` requests, ``reasoning`` to ``reason`` requests."""

    kind: RequestKind
    prompt: Prompt
    candidates: tuple[str, ...] = ()
    top_n: int = 20
    continuation: str = ""
    reasoning: Reasoning | None = None

    def __post_init__(self) -> None:
        if (self.kind == "reason") != (self.reasoning is not None):
            raise ValueError("a reason request, and only one, says how to reason (reasoning=Reasoning(...))")

    def order(self) -> tuple[bool, str]:
        """Where the request goes when a window's requests are sorted so that shared prefixes run back to
        back (for a backend with ``capabilities.prefix_reuse``): by its prompt."""
        return self.prompt.chat, self.prompt.text


def _label(backend: Backend, requests: Sequence[Request]) -> Sequence[Answer]:
    first = requests[0]
    return backend.label_logprobs([r.prompt for r in requests], first.candidates, first.top_n)


def _hidden(backend: Backend, requests: Sequence[Request]) -> Sequence[Answer]:
    first = requests[0]
    return backend.hidden_states([r.prompt for r in requests], first.candidates, first.top_n)


def _sequence(backend: Backend, requests: Sequence[Request]) -> Sequence[Answer]:
    return backend.sequence_logprobs([(r.prompt, r.continuation) for r in requests])


def _reason(backend: Backend, requests: Sequence[Request]) -> Sequence[Answer]:
    first = requests[0]
    assert first.reasoning is not None
    return backend.reason([r.prompt for r in requests], first.candidates, first.top_n, first.reasoning)


@dataclass(frozen=True)
class Kind:
    """How requests of one kind are answered: the backend call that takes a run of them (with the same
    candidates, ``top_n`` and reasoning), and the capability it needs (None: every backend answers it)."""

    answer: Callable[[Backend, Sequence[Request]], Sequence[Answer]]
    needs: str | None = None


#: Every request kind, and how it is answered.
KINDS: dict[str, Kind] = {
    "label": Kind(_label),
    "hidden": Kind(_hidden, "hidden_states"),
    "sequence": Kind(_sequence, "sequence_logprobs"),
    "reason": Kind(_reason, "reason"),
}


def ask(backend: Backend, requests: Sequence[Request]) -> list[Answer]:
    """The answers to ``requests``, in order: one backend call per run of consecutive requests of one kind
    (and one set of candidates, ``top_n`` and reasoning), so a lane's batch of label requests is one
    ``label_logprobs`` call, as it is when a judge asks directly."""
    out: list[Answer] = []
    for (kind, *_), run in groupby(requests, key=lambda r: (r.kind, r.candidates, r.top_n, r.reasoning)):
        batch = list(run)
        answers = KINDS[kind].answer(backend, batch)
        if len(answers) != len(batch):
            raise RuntimeError(f"backend '{backend.name}' returned {len(answers)} answers to {len(batch)} "
                               f"{kind} requests")
        out.extend(answers)
    return out
