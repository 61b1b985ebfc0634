"""Prompt tokenization shared by the backends that use a Hugging Face tokenizer (transformers, vLLM).

Kept free of torch so that vLLM (which brings its own tokenizer object) can use it too. The rules
match the llama.cpp backend: the user's text is tokenized apart from the chat template's markup and
never parsed for special tokens, so a conversation that contains ``<|im_end|>`` cannot end the turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.errors import BackendError
from .base import Failure, Prompt, too_long
from .chat import SENTINEL, chat_tokens


class HFPromptTokenizer:
    """Token ids of a :class:`Prompt` and of candidate answers for one Hugging Face tokenizer."""

    def __init__(self, tokenizer: Any, model_id: str) -> None:
        self.tok = tokenizer
        self.model_id = model_id
        self._cand_cache: dict[str, int | None] = {}
        self._chat: tuple[list[int], list[int]] | None = None
        self._chat_text: tuple[str, str] | None = None  # the same parts as text, for ``wrapping``
        if getattr(tokenizer, "chat_template", None):
            # The tokenizer's own template engine renders the markup around a sentinel; the markup is
            # tokenized with special tokens parsed, the user's text later without.
            rendered = tokenizer.apply_chat_template(
                [{"role": "user", "content": SENTINEL}], tokenize=False, add_generation_prompt=True
            )
            if rendered.count(SENTINEL) != 1:
                raise BackendError(f"{model_id}: chat template did not place the user message exactly once")
            before, after = rendered.split(SENTINEL)
            self._chat = (self._encode(before, special=True), self._encode(after, special=True))
            self._chat_text = (before, after)
        # Whether this tokenizer adds special tokens (BOS, or T5's trailing </s>) to plain text.
        empty = list(tokenizer("", add_special_tokens=True)["input_ids"])
        self._bos = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None and tokenizer.bos_token_id in empty else []

    @property
    def has_chat_template(self) -> bool:
        return self._chat is not None

    def _encode(self, text: str, special: bool = False, add_special_tokens: bool = False) -> list[int]:
        if not text:
            return list(self.tok("", add_special_tokens=add_special_tokens)["input_ids"]) if add_special_tokens else []
        return list(
            self.tok(text, add_special_tokens=add_special_tokens, split_special_tokens=not special)["input_ids"]
        )

    def tokens(self, prompt: Prompt) -> list[int]:
        """Token ids of a prompt as the model sees it (BOS / EOS and chat template included)."""
        if prompt.chat:
            return chat_tokens(self.model_id, self._chat, lambda: self._encode(prompt.text), self._bos)
        return self._encode(prompt.text, add_special_tokens=True)

    def wrapping(self, chat: bool) -> tuple[str, str] | None:
        """The text around a prompt's own as ``tokens`` puts it: the chat template's parts and the BOS
        token the tokenizer adds (chat), or the special tokens it adds around plain text (BOS, T5's </s>)."""
        if chat:
            if self._chat is None or self._chat_text is None:
                return None
            before, after = self._chat_text
            if self._bos and self._chat[0][:1] != self._bos:
                before = self.piece(self._bos[0]) + before
            return before, after
        plain, marked = self._encode("x"), self._encode("x", add_special_tokens=True)
        at = next((i for i in range(len(marked) - len(plain) + 1) if marked[i:i + len(plain)] == plain), None)
        if at is None:
            return None
        return "".join(map(self.piece, marked[:at])), "".join(map(self.piece, marked[at + len(plain):]))

    def candidate_ids(self, candidates: Sequence[str]) -> dict[str, int]:
        """Candidates that are exactly one token, mapped to that token.

        Two spellings that tokenize to the same token (SentencePiece vocabularies turn "yes" and
        " yes" into the same piece) would count that token twice; only the first spelling is kept.
        """
        out: dict[str, int] = {}
        seen: set[int] = set()
        for cand in candidates:
            if cand not in self._cand_cache:
                ids = self._encode(cand)
                self._cand_cache[cand] = ids[0] if len(ids) == 1 else None
            tid = self._cand_cache[cand]
            if tid is not None and tid not in seen:
                out[cand] = tid
                seen.add(tid)
        return out

    def text_tokens(self, text: str) -> list[int]:
        """Token ids of plain text appended to a sequence (an answer cue): no special tokens added or parsed."""
        return self._encode(text)

    def text(self, ids: Sequence[int]) -> str:
        """The text of generated tokens (special tokens such as ``<think>`` spelled)."""
        return str(self.tok.decode(list(ids), skip_special_tokens=False))

    def piece(self, token_id: int) -> str:
        """Display text of one token (special tokens included)."""
        return self.tok.decode([token_id], skip_special_tokens=False)


class HFTokenCounting:
    """The token-counting part of the backend contract for a backend whose prompts go through an
    :class:`HFPromptTokenizer` (``self.prompts``): the transformers and vLLM backends share it."""

    prompts: HFPromptTokenizer

    def tokens(self, prompt: Prompt) -> list[int]:
        """Token ids of a prompt as the model sees it (special tokens and chat template included)."""
        return self.prompts.tokens(prompt)

    def single_token(self, text: str) -> bool | None:
        """Whether ``text`` is exactly one token of this model (answer labels must be; see answers.check_labels)."""
        return bool(self.prompts.candidate_ids([text]))

    def count_tokens(self, prompt: Prompt) -> int:
        return len(self.tokens(prompt))

    def fitting(self, prompts: Sequence[Prompt], window: int) -> tuple[list[Failure | None], dict[int, list[int]]]:
        """What goes to the model: a slot per prompt holding the Failure of one that cannot go (it cannot be
        tokenized, or does not fit in ``window``), and the tokens of the others by their index."""
        failed: list[Failure | None] = [None] * len(prompts)
        seqs: dict[int, list[int]] = {}
        for i, prompt in enumerate(prompts):
            try:
                toks = self.tokens(prompt)
            except BackendError as exc:
                failed[i] = Failure(str(exc))
                continue
            if len(toks) >= window:
                failed[i] = too_long(len(toks), window)
            else:
                seqs[i] = toks
        return failed, seqs

    def wrapping(self, chat: bool) -> tuple[str, str] | None:
        return self.prompts.wrapping(chat)
