"""The llama.cpp backend without its forward pass: what ``judge run --check`` counts a run's cost with.

:class:`LlamaCppReplay` is the backend with the same model identity and settings (so the same cache keys),
the same tokens (chat template, BOS, a prompt's declared splits) and the same KV bookkeeping: its own
``_eval`` decides which batches a prompt keeps from the one before, as the real evaluation does, so its
``tokens_evaluated`` and ``decodes`` counters read what the real backend's would after the same calls. A
rationale (``reason``) is counted at its whole budget, the most it can take (the model may end it sooner):
``tokens_generated`` is an upper bound.
It loads the model's vocabulary only (no weights), and every answer is a uniform distribution. It is the
backend's declared replay (``LlamaCppBackend.cost = "replay"``, :data:`judge.backends.registry.REPLAYS`); a driver
that must name cache keys and fit prompts to the window without running the model can use it too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.config import GenerateConfig
from ..core.errors import BackendError
from .base import Failure, HiddenState, Prompt, Reasoning
from .llamacpp import LlamaCppBackend, load_vocabulary


class _VocabLlama:
    """Stands in for ``llama_cpp.Llama`` inside :class:`LlamaCppReplay`: the tokenizer of a ``vocab_only``
    load, and the token buffer (``input_ids``, ``n_tokens``) that ``_eval`` reads to decide what it keeps.
    ``eval`` records the tokens as evaluated without computing anything."""

    def __init__(self, vocab: Any, n_ctx: int) -> None:
        self._vocab = vocab
        self.metadata = vocab.metadata
        self.input_ids = np.zeros(n_ctx, dtype=np.intc)
        self.n_tokens = 0

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return list(self._vocab.tokenize(text, add_bos=add_bos, special=special))

    def detokenize(self, tokens: list[int], special: bool = False) -> bytes:
        return bytes(self._vocab.detokenize(tokens, special=special))

    def token_bos(self) -> int:
        return int(self._vocab.token_bos())

    def token_eos(self) -> int:
        return int(self._vocab.token_eos())

    def n_vocab(self) -> int:
        return int(self._vocab.n_vocab())

    def n_ctx(self) -> int:
        return len(self.input_ids)

    def eval(self, tokens: Sequence[int]) -> None:
        self.input_ids[self.n_tokens:self.n_tokens + len(tokens)] = tokens
        self.n_tokens += len(tokens)

    def reset(self) -> None:
        self.n_tokens = 0

    def close(self) -> None:
        self._vocab.close()


def _trained_context(metadata: dict[str, str], path: Path) -> int:
    """The training context a GGUF declares (``<architecture>.context_length``)."""
    try:
        return int(metadata[f"{metadata['general.architecture']}.context_length"])
    except (KeyError, ValueError):
        raise BackendError(f"{path}: the file declares no training context (<architecture>.context_length); "
                           "give generate.max_context") from None


class LlamaCppReplay(LlamaCppBackend):
    """The llama.cpp backend without its forward pass: same model identity and settings (so the same cache
    keys), same tokens, same prefix-reuse rule; every answer is a uniform distribution. Its
    ``tokens_evaluated`` counter is what the real backend's would read after the same calls."""

    def __init__(self, model: str | None, config: GenerateConfig, *, reuse_prefix: bool = True, n_batch: int = 512,
                 **llama_kwargs: Any) -> None:
        llama_cpp = self._identify(model, config, reuse_prefix, n_batch, llama_kwargs)
        self.record_rate = False  # its counts are a replay, not a measurement
        vocab = load_vocabulary(llama_cpp, self.path)
        # The real backend's window: the asked context, else the model's training context (``_window``),
        # which a vocabulary-only load reads as 0: it is taken from the file's metadata instead.
        self.llm = _VocabLlama(vocab, config.max_context or _trained_context(vocab.metadata, self.path))
        self._ready()

    def _logits_at(self, i: int) -> np.ndarray:
        return np.zeros(self.n_vocab)

    def hidden_states(self, prompts: Sequence[Prompt], candidates: Sequence[str],
                      top_n: int = 20) -> list[HiddenState | Failure]:
        """The real backend reads the hidden state in the decode of its label answer: counted as that."""
        return [d if isinstance(d, Failure) else HiddenState([], d) for d in self.label_logprobs(prompts, candidates, top_n)]

    # A rationale runs the real backend's steps with a placeholder token that never ends the turn nor writes an
    # answer line (its text, "x", holds no cue and no line break, as most rationales end): the budget ends it,
    # as it would end the longest rationale.
    def _choose(self, logits: np.ndarray, how: Reasoning, rng: np.random.Generator) -> int:
        return 0

    def _ends_turn(self, token: int) -> bool:
        return False

    def _token_bytes(self, token: int) -> bytes:
        return b"x"

    def _logits_view(self) -> np.ndarray:
        return np.zeros(self.n_vocab, dtype=np.float32)

    def _extend_all(self, tokens: list[int]) -> np.ndarray:
        """The bookkeeping of :meth:`LlamaCppBackend._extend_all` (a batch start per ``n_batch`` tokens)."""
        marks = self._marks[:-1]
        for i in range(0, len(tokens), self.n_batch):
            marks.append(self.llm.n_tokens)
            self.llm.eval(tokens[i:i + self.n_batch])
            self.decodes += 1
        self._marks = [*marks, self.llm.n_tokens]
        return np.broadcast_to(np.zeros(self.n_vocab), (len(tokens), self.n_vocab))
