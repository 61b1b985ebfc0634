"""Batched per-token statistics of a causal LM: P(actual token) and max P(any token) at each target position.

Shared by the likelihood scorers (thesis ch. 5, 7, 8). A request is (prefix, target) text; the target's
tokens are scored given everything before them. Requests are run in left-padded batches with explicit
position ids, and only the logits of target positions are kept (vocabularies are large).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import hf


@dataclass
class TokenStats:
    """Per target token: natural-log probability of the actual token, and the largest probability of any token."""

    logp: np.ndarray
    maxprob: np.ndarray

    @property
    def prob(self) -> np.ndarray:
        return np.exp(self.logp)


def join_turns(texts: Sequence[str], sep: str) -> str:
    """The prefix for the next utterance: every turn followed by the separator."""
    return "".join(t + sep for t in texts)


def resolve_separator(separator: str, tokenizer: Any) -> str:
    return hf.separator_token(tokenizer) if separator == "eos" else separator


def _start_id(tokenizer: Any) -> int:
    for tid in (tokenizer.bos_token_id, tokenizer.eos_token_id):
        if tid is not None:
            return int(tid)
    return 0


def encode_pair(tokenizer: Any, prefix: str, target: str, max_tokens: int) -> tuple[list[int], int]:
    """Token ids of prefix + target (prefix cut from the left to fit) and the number of target tokens."""
    p = tokenizer(prefix, add_special_tokens=False)["input_ids"] if prefix else []
    t = tokenizer(target, add_special_tokens=False)["input_ids"]
    if not p:
        p = [_start_id(tokenizer)]  # the first target token needs something to be predicted from
    t = t[: max_tokens - 1]
    p = p[-(max_tokens - len(t)):]
    return list(p) + list(t), len(t)


def token_stats(tokenizer: Any, net: Any, pairs: Sequence[tuple[str, str]], *, batch_size: int = 8,
                max_tokens: int | None = None) -> list[TokenStats]:
    """TokenStats of each (prefix, target) pair, in input order."""
    import torch

    limit = max_tokens or hf.max_positions(net)
    encoded = [encode_pair(tokenizer, p, t, limit) for p, t in pairs]
    out: list[TokenStats | None] = [None] * len(encoded)
    # Similar lengths share a batch, so little compute is spent on padding.
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][0]))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else _start_id(tokenizer)
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        seqs = [encoded[i][0] for i in idx]
        width = max(len(s) for s in seqs)
        keep = max(encoded[i][1] for i in idx) + 1
        ids = torch.full((len(seqs), width), pad, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for row, s in enumerate(seqs):
            ids[row, width - len(s):] = torch.tensor(s)
            mask[row, width - len(s):] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        with torch.inference_mode():
            logits = forward_logits(net, ids, mask, positions, keep)
            logprobs = torch.log_softmax(logits.float(), dim=-1)
        for row, i in enumerate(idx):
            n = encoded[i][1]
            if n == 0:
                out[i] = TokenStats(np.zeros(0), np.zeros(0))
                continue
            # The logits at position j predict token j+1: the last `n` targets come from logits[-n-1:-1].
            lp = logprobs[row, keep - n - 1: keep - 1]
            target = ids[row, width - n:]
            actual = lp.gather(-1, target[:, None])[:, 0]
            out[i] = TokenStats(actual.double().numpy(), lp.max(-1).values.exp().double().numpy())
    return [s for s in out if s is not None]


def forward_logits(net: Any, ids: Any, mask: Any, positions: Any, keep: int) -> Any:
    """Logits of the last ``keep`` positions (models that accept ``logits_to_keep`` never build the rest)."""
    try:
        return net(input_ids=ids, attention_mask=mask, position_ids=positions, logits_to_keep=keep).logits[:, -keep:]
    except TypeError:
        return net(input_ids=ids, attention_mask=mask, position_ids=positions).logits[:, -keep:]
