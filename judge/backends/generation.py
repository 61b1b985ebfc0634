"""A rationale generated token by token on a local backend (llama.cpp, transformers), the same way on each.

The backend supplies its steps: the logits after the prompt, ``step`` (run one token, return the next
logits), ``ends_turn`` (a token that ends the model's turn) and ``text`` (the text of the tokens so far);
:func:`think` chooses tokens (greedy, or sampled from an RNG seeded by the request alone:
:func:`request_rng`) until the model ends its turn, writes the answer line (a line beginning with the cue,
outside thinking: :func:`judge.backends.reasoning.answer_line`), or spends the budget, and says which tokens the
rationale keeps. The backend then appends the cue after the kept tokens and reads the label distribution
there, from the state the generation left.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import AnyStr, Generic

import numpy as np

from .base import Failure, Prompt, Reasoning
from .reasoning import answer_line


@dataclass(frozen=True)
class Thought(Generic[AnyStr]):
    """A generated rationale: the tokens chosen, how many of them the rationale keeps (those before an answer
    line the model began), how many a step ran (the last token chosen has not run when the budget or the
    answer line ended the rationale), and the kept tokens' text."""

    chosen: list[int]
    keep: int
    ran: int
    text: AnyStr


def no_room(n_prompt: int, how: Reasoning, n_cue: int, window: int) -> Failure | None:
    """The failure of a prompt of ``n_prompt`` tokens whose rationale's budget and answer cue (``n_cue``
    tokens) would not fit the context window (nothing is ever cut); None when they fit."""
    if n_prompt + how.tokens + n_cue < window:
        return None
    return Failure(f"prompt is {n_prompt} tokens and its rationale may take {how.tokens} more; the context window "
                   f"holds {window} (nothing was cut)", "too_long")


def request_rng(prompt: Prompt, how: Reasoning) -> np.random.Generator:
    """The random numbers of one sampled rationale: seeded by the request alone (its seed and prompt), so its
    tokens never depend on what ran before."""
    material = f"{how.seed}\x1f{int(prompt.chat)}\x1f{prompt.text}".encode()
    return np.random.default_rng(int.from_bytes(hashlib.sha256(material).digest()[:8], "big"))


def choose(logits: np.ndarray, how: Reasoning, rng: np.random.Generator) -> int:
    """The next token: the most probable (temperature 0; the lowest id of a tie), else one drawn from the
    distribution at ``how.temperature``."""
    if not how.temperature:
        return int(np.argmax(logits))
    z = np.asarray(logits, dtype=np.float64) / how.temperature
    cdf = np.cumsum(np.exp(z - z.max()))
    return int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"))


def think(logits: np.ndarray, how: Reasoning, *, pick: Callable[[np.ndarray], int], step: Callable[[int], np.ndarray],
          ends_turn: Callable[[int], bool], text: Callable[[list[int]], AnyStr]) -> Thought[AnyStr]:
    """The rationale after ``logits`` (see the module docstring): ``pick`` chooses a token from logits
    (:func:`choose` with the request's settings and RNG)."""
    chosen: list[int] = []
    ran = 0
    while True:
        token = pick(logits)
        if ends_turn(token):
            break
        chosen.append(token)
        said = text(chosen)
        found = answer_line(said, how.cue)
        if found is not None:  # keep the tokens whose text ends before the answer line begins
            keep = len(chosen) - 1
            while keep and len(text(chosen[:keep])) > found[0]:
                keep -= 1
            return Thought(chosen, keep, ran, text(chosen[:keep]))
        if len(chosen) == how.tokens:
            break
        logits = step(token)
        ran += 1
    return Thought(chosen, len(chosen), ran, text(chosen))
