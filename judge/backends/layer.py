"""A layer: a backend in front of another, answering its requests its own way (the SQLite cache, the batch
pre-pass's recorder, a Ray cluster's driver).

A :class:`Layer` is the inner backend to everything that reads it (name, model, capabilities, settings,
tokenizer, chat wrapping), so prompts are fitted and cache keys made as for the inner one; what it changes is
how requests are answered, written once in :meth:`Layer.answer` for every request kind
(:mod:`judge.backends.requests`). The kind methods of the contract turn their arguments into requests and call
it. Closing a layer closes the inner backend.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .base import Backend, Capabilities, Failure, HiddenState, LabelDist, Prompt, Reasoned, Reasoning, TokenLogprobs
from .requests import Answer, Request, ask


class Answering(Backend):
    """A backend that answers every request kind in one method, :meth:`answer`; the contract's kind methods
    turn their arguments into requests and call it."""

    def answer(self, requests: Sequence[Request]) -> Iterator[tuple[int, Answer]]:
        """(index, answer) of ``requests`` (one kind, candidates, ``top_n`` and reasoning) as they are answered, in
        any order."""
        raise NotImplementedError

    def _all(self, requests: Sequence[Request]) -> list[Any]:
        got = dict(self.answer(requests))
        if len(got) != len(requests):
            raise RuntimeError(f"backend returned {len(got)} results for {len(requests)} prompts")
        return [got[i] for i in range(len(requests))]

    def iter_label_logprobs(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int = 20
    ) -> Iterator[tuple[int, LabelDist | Failure]]:
        return self.answer([Request("label", p, tuple(candidates), top_n) for p in prompts])  # type: ignore[return-value]

    def label_logprobs(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int = 20
    ) -> list[LabelDist | Failure]:
        return self._all([Request("label", p, tuple(candidates), top_n) for p in prompts])

    def hidden_states(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int = 20
    ) -> list[HiddenState | Failure]:
        return self._all([Request("hidden", p, tuple(candidates), top_n) for p in prompts])

    def sequence_logprobs(self, requests: Sequence[tuple[Prompt, str]]) -> list[TokenLogprobs | Failure]:
        return self._all([Request("sequence", p, continuation=text) for p, text in requests])

    def reason(
        self, prompts: Sequence[Prompt], candidates: Sequence[str], top_n: int, how: Reasoning
    ) -> list[Reasoned | Failure]:
        return self._all([Request("reason", p, tuple(candidates), top_n, reasoning=how) for p in prompts])



class Layer(Answering):
    """A backend in front of ``inner`` (see the module's doc); subclasses override :meth:`answer`."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.inner.name

    @property
    def model_id(self) -> str:  # type: ignore[override]
        return self.inner.model_id

    @property
    def capabilities(self) -> Capabilities:  # type: ignore[override]
        return self.inner.capabilities

    def count_tokens(self, prompt: Prompt) -> int:
        return self.inner.count_tokens(prompt)

    def settings(self) -> dict[str, object]:
        return self.inner.settings()

    def sequence_settings(self) -> dict[str, object]:
        return self.inner.sequence_settings()

    def reason_settings(self) -> dict[str, object]:
        return self.inner.reason_settings()

    def single_token(self, text: str) -> bool | None:
        return self.inner.single_token(text)

    def wrapping(self, chat: bool) -> tuple[str, str] | None:
        return self.inner.wrapping(chat)

    def close(self) -> None:
        self.inner.close()

    def answer(self, requests: Sequence[Request]) -> Iterator[tuple[int, Answer]]:
        """The inner backend's answers, in order (a subclass answers its own way)."""
        yield from enumerate(ask(self.inner, requests))


def innermost(backend: Backend) -> Backend:
    """The backend that answers, behind the layers in front of it."""
    while isinstance(backend, Layer):
        backend = backend.inner
    return backend


__all__ = ["Answering", "Layer", "innermost"]
