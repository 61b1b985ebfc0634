"""The backend contract: next-token log-probabilities of candidate answer strings, one forward pass (and,
where a backend declares them, a reply's per-token log-probabilities, the hidden state, a rationale first)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from typing import ClassVar, Literal, Protocol, TypeVar, runtime_checkable

from ..core.errors import InputError


@dataclass(frozen=True)
class Prompt:
    """Text to continue. With ``chat=True`` the backend wraps it as one user message of the model's chat
    template and reads the first token of the assistant's answer."""

    text: str
    chat: bool = False
    #: How many leading characters of ``text`` the prompts of its family share (0: none declared; the
    #: template's ``shared_until``). A backend with ``split_shared`` evaluates that part as batches of its
    #: own, so the next prompt of the family can reuse it whatever ran before (see the llama.cpp backend).
    shared: int = 0
    #: How many leading characters of ``text`` no item changes (0: none): the template's instructions, and the
    #: examples when the selector shows every item the same (``PromptTemplate.instructions_chars``). Evaluated
    #: apart as ``shared`` is, so that the next item's prompt reuses them.
    instructions: int = 0


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do; scoring code branches on these, never on the backend's name."""

    #: True when any candidate's probability can be read (full vocabulary); False for top-N only.
    full_vocab: bool
    #: How many top tokens a backend returns per position (None: as many as asked).
    top_n: int | None = None
    #: The model has a chat template that ``Prompt(chat=True)`` uses.
    chat_template: bool = False
    #: Maximum tokens of prompt + answer.
    max_context: int = 2048
    #: The backend benefits from being handed many prompts at once.
    batching: bool = False
    #: Consecutive prompts reuse the previous prompt's shared prefix (so sending them sorted pays).
    prefix_reuse: bool = False
    #: A prompt's declared parts (``Prompt.shared``, ``Prompt.instructions``) are evaluated apart from the rest,
    #: which can move its answer slightly: the splits then join the prompt's cache key.
    split_shared: bool = False
    #: ``sequence_logprobs`` reads the log-probability of every token of a given text (likelihood methods).
    sequence_logprobs: bool = False
    #: ``hidden_states`` reads the model's final hidden state at the answer position along with the label
    #: distribution (supervised heads on the judge model's representation).
    hidden_states: bool = False
    #: ``reason`` has the model write a rationale before its answer is read (:class:`Reasoning`): a judge
    #: that thinks before it answers (``reason = N`` on a method).
    reason: bool = False
    #: The model answers in its first token, so a one-token read scores it. False for a reasoning model (it
    #: thinks before it answers: its first token is never the answer); a judge refuses a one-token read of
    #: it before the run, naming ``--reason``.
    answers_at_once: bool = True

    def lacks(self, needs: Iterable[str]) -> list[str]:
        """Which of the capabilities ``needs`` (field names of this class, what a method type asks of its
        backend) this backend does not have; an unknown name is a programming error."""
        known = {f.name: getattr(self, f.name) for f in fields(self)}
        unknown = [n for n in needs if n not in known]
        if unknown:
            raise ValueError(f"no such capability: {', '.join(unknown)} (known: {', '.join(known)})")
        return [n for n in needs if not known[n]]


@dataclass
class LabelDist:
    """Next-token distribution at the answer position.

    ``logprobs`` maps each candidate string that could be read to its log-probability; candidates
    that are several tokens long, or outside a top-N list, are absent. ``top`` holds the most
    probable tokens as (token text, logprob). ``estimated`` marks distributions estimated from
    sampled answers instead of read from log-probabilities.
    """

    logprobs: dict[str, float]
    top: list[tuple[str, float]] = field(default_factory=list)
    n_prompt_tokens: int = 0
    #: Tokens actually run through the model for this prompt (less than n_prompt_tokens with prefix reuse).
    n_evaluated_tokens: int = 0
    estimated: bool = False
    complete: bool = True


def uniform(candidates: Sequence[str], n_prompt_tokens: int = 0) -> LabelDist:
    """Every candidate equally likely: the placeholder answer of a backend that counts requests instead of
    answering them (``--check``'s replays, the batch pre-pass)."""
    lp = -math.log(max(1, len(candidates)))
    return LabelDist(dict.fromkeys(candidates, lp), [(c, lp) for c in candidates], n_prompt_tokens, complete=False)


@dataclass
class TokenLogprobs:
    """Log-probabilities of the tokens of a given continuation, each read after the prompt and the
    continuation's earlier tokens (what likelihood methods score, :mod:`judge.scorers.likelihood`)."""

    logprobs: list[float]
    n_prompt_tokens: int = 0
    #: Tokens actually run through the model (0 for an answer served from the cache).
    n_evaluated_tokens: int = 0


@dataclass
class HiddenState:
    """The model's final hidden state (after its last layer and final norm: what the output layer reads) at
    the answer position, the last prompt token, whose next-token distribution gives the label
    probabilities; with that distribution, from the same forward pass where the backend can, so a head
    on the vector costs no pass of its own. ``dist`` equals the prompt's ``label_logprobs`` answer."""

    vector: list[float]
    dist: LabelDist


@dataclass(frozen=True)
class Reasoning:
    """How a judge that thinks first is asked (``Backend.reason``): the model writes a rationale of at most
    ``tokens`` tokens (greedy at ``temperature`` 0, else sampled with ``seed``), then the answer line, which
    begins with ``cue`` (``Answer:``); the label distribution is read after the cue. Every field changes the
    answer, so every field is in its cache key."""

    tokens: int
    cue: str
    temperature: float = 0.0
    seed: int = 0

    def material(self) -> dict[str, object]:
        """What a cache key holds of it."""
        return {"tokens": self.tokens, "cue": self.cue, "temperature": self.temperature, "seed": self.seed}


@dataclass
class Reasoned:
    """A judge's answer after its rationale: the label distribution read after the answer cue, and what the
    model said before it. ``rationale`` is the text before the answer line (thinking a model shows, a
    ``<think>`` block or a ``reasoning_content`` field, kept in it, never read as the answer);
    ``n_generated`` the tokens the model generated for it (reasoning tokens and every sampled completion
    included); ``unparsed`` the sampled completions with no answer line that could be read (only when the
    distribution is ``estimated`` from samples)."""

    dist: LabelDist
    rationale: str
    n_generated: int = 0
    unparsed: int = 0


@dataclass
class Failure:
    """A prompt the backend could not answer; recorded per item, never dropped. ``flag`` names a
    property of the item behind the failure (``too_long``) that output rows carry in ``flags``."""

    reason: str
    flag: str | None = None


def too_long(n_tokens: int, window: int) -> Failure:
    """The failure of a prompt that does not fit the context window (nothing is ever cut)."""
    return Failure(f"prompt is {n_tokens} tokens; the context window holds {window} (nothing was cut)", "too_long")


#: How ``--check`` knows a backend's cost (``Backend.cost``).
Cost = Literal["replay", "free", "hosted", "unknown"]


@runtime_checkable
class Backend(Protocol):
    """Every backend: local (llama.cpp, transformers, vLLM) or hosted (OpenAI-compatible).

    Four methods are required. The others have defaults here (each method says which), so a backend that
    subclasses ``Backend`` gets them for free; an optional request kind it answers is declared in its
    ``capabilities``, whose fields stay False by default.
    """

    name: str
    model_id: str
    capabilities: Capabilities
    #: How ``judge run --check`` knows what this backend's work costs (:data:`Cost`), read from the class: ``replay``
    #: (its twin in :data:`judge.backends.registry.REPLAYS` counts what it would evaluate, timed at the rate the
    #: backend measures: such a backend is :class:`judge.accounting.rates.Timed`), ``free`` (no model), ``hosted``
    #: (its twin counts the requests it would send, priced from the price table), ``unknown`` (the default: the
    #: estimate says n/a rather than guess).
    cost: ClassVar[Cost] = "unknown"

    #: Options that change how requests are sent (pacing, spending caps), never an answer: a results folder
    #: resumed with other values of them is the same run (:func:`sending_options`). None by default.
    sending_options: ClassVar[frozenset[str]] = frozenset()

    def label_logprobs(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int = 20
    ) -> list[LabelDist | Failure]:
        """One result per prompt, in order: the next-token logprobs of ``candidates`` (+ the top tokens)."""
        ...

    def count_tokens(self, prompt: Prompt) -> int:
        """Tokens the prompt occupies (chat template included), for fitting the context window."""
        ...

    def settings(self) -> dict[str, object]:
        """Everything besides the prompt that changes the answer (for cache keys and provenance)."""
        ...

    def close(self) -> None:
        """Release the model / connections."""
        ...

    def iter_label_logprobs(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int = 20
    ) -> Iterator[tuple[int, LabelDist | Failure]]:
        """(index, result) pairs as results arrive, in any order. Default: one batch call when the
        backend batches, else one prompt per call, so a kill loses at most the prompt in progress."""
        if self.capabilities.batching:
            yield from enumerate(self.label_logprobs(prompts, candidates, top_n))
            return
        for i, p in enumerate(prompts):
            yield i, self.label_logprobs([p], candidates, top_n)[0]

    def sequence_logprobs(self, requests: Sequence[tuple[Prompt, str]]) -> list[TokenLogprobs | Failure]:
        """For each (prompt, continuation): the log-probability of every token of the continuation after
        the prompt. Optional (``capabilities.sequence_logprobs``); the default fails every request,
        because top-N APIs cannot read the probability of a token they did not rank."""
        return [Failure(cannot(self, "sequence_logprobs")) for _ in requests]

    def hidden_states(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int = 20
    ) -> list[HiddenState | Failure]:
        """One result per prompt, in order: the final hidden state at the answer position with the label
        distribution ``label_logprobs`` gives. Optional (``capabilities.hidden_states``); the default fails
        every prompt, naming the backend and the capability, because hosted APIs and engines that return
        log-probabilities only (vLLM) never show the hidden state."""
        return [Failure(cannot(self, "hidden_states")) for _ in prompts]

    def reason(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int, how: Reasoning
    ) -> list[Reasoned | Failure]:
        """One result per prompt, in order: the model writes a rationale (``how``), then the label distribution
        is read after the answer cue. Optional (``capabilities.reason``); the default fails every prompt,
        naming the backend and the capability."""
        return [Failure(cannot(self, "reason")) for _ in prompts]

    def reason_settings(self) -> dict[str, object]:
        """What besides ``settings()`` changes a ``reason`` answer (its cache key's extra part: how the
        rationale is generated and the answer read). Optional; none by default."""
        return {}

    def sequence_settings(self) -> dict[str, object]:
        """What besides ``settings()`` changes a ``sequence_logprobs`` answer (its cache key's extra part).
        Optional; none by default. Label answers never read it, so their keys stay as they were."""
        return {}

    def counters(self) -> dict[str, int]:
        """Usage so far (cache hits and misses, API requests and tokens, ...); default none."""
        return {}

    def single_token(self, text: str) -> bool | None:
        """Whether ``text`` is exactly one token of the model (answer labels must be); None when the
        backend cannot tell (hosted APIs: no tokenizer), the default."""
        return None

    def wrapping(self, chat: bool) -> tuple[str, str] | None:
        """The text the model reads before and after a prompt's own text, as text: the chat template's
        parts around the user message (``chat``) and the BOS token the tokenizer adds. Results record it,
        so that ``judge view`` shows a prompt as the model read it without loading the model. None when
        the backend cannot say (a server applies its template; the mock has none), the default."""
        return None


#: An optional capability a method may need (a field of ``Capabilities``).
Optional = Literal["sequence_logprobs", "hidden_states", "reason"]
#: What each optional capability reads, for the messages of the backends that lack it.
_CAPABILITY_READS: dict[Optional, str] = {
    "sequence_logprobs": "read the log-probabilities of a given text",
    "hidden_states": "read the hidden state at the answer position",
    "reason": "have the model write a rationale before it answers",
}


def cannot(backend: Backend, capability: Optional) -> str:
    """Why ``backend`` cannot answer a request of an optional ``capability`` (a field of ``Capabilities``)."""
    return (f"backend '{backend.name}' cannot {_CAPABILITY_READS[capability]} "
            f"(capabilities.{capability} is False)")


def require(backend: Backend, capability: Optional, needed_by: str) -> None:
    """Refuse, before anything is scored, a method that needs an optional capability the backend lacks:
    an InputError naming the backend, the capability and the method."""
    if backend.capabilities.lacks([capability]):
        raise InputError(f"{cannot(backend, capability)}; {needed_by} needs a backend that can", field="backend")


#: An answer of any kind (what :func:`gather` puts back in order).
A = TypeVar("A")


def gather(results: Iterable[tuple[int, A]], n: int) -> list[A]:
    """Put (index, result) pairs that arrive in any order back into prompt order."""
    out: list[A | None] = [None] * n
    for i, res in results:
        out[i] = res
    missing = [i for i, r in enumerate(out) if r is None]
    if missing:
        raise RuntimeError(f"backend returned no result for prompts {missing[:5]}")
    return out  # type: ignore[return-value]
