"""The FED metric (Mehri & Eskenazi 2020): how much likelier a dialog model finds positive follow-ups
("Wow that is really interesting.") than negative ones ("That's really boring.") after the conversation.

score(quality) = mean loss(conversation <eos> negative) - mean loss(conversation <eos> positive)
(no positives: the positive term is 0). Loss ``whole`` is the public release's: mean token NLL over the
whole text (conversation and follow-up); loss ``followup`` scores the follow-up's tokens only, as the
paper's description suggests. Overall (not defined by the public release) is the mean of the
level's per-quality scores.

Cost: the conversation is run through the model once; its key/value cache is then shared by all
follow-ups, which run in batches (one forward pass per batch of follow-ups, never one per token).
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ...core.errors import InputError, MissingInputError, UnknownNameError
from ...data.items import Item
from ..base import Score
from . import hf
from .base import ClassicScorer
from .registry import register_classic

FOLLOWUPS_FILE = Path(__file__).with_name("fed_followups.toml")


@lru_cache(maxsize=1)
def followups() -> dict[str, dict[str, dict[str, list[str]]]]:
    """{level: {quality: {"positive": [...], "negative": [...]}}} from fed_followups.toml."""
    with open(FOLLOWUPS_FILE, "rb") as f:
        return tomllib.load(f)


def conversation_text(turns: Sequence[str], eos: str) -> str:
    """The public release's format: ``<eos> turn1 <eos> turn2 ...``."""
    return eos + " " + f" {eos} ".join(turns)


class FedMetric(ClassicScorer):
    """FED follow-up likelihood scores for one quality (or Overall = mean over the level's qualities)."""

    name = "fed-metric"
    requires = ()

    def __init__(self, model: str, quality: str | None = None, loss: str = "whole", batch_size: int = 64,
                 max_tokens: int | None = None, threads: int | None = None) -> None:
        if loss not in ("whole", "followup"):
            raise InputError(f"loss must be 'whole' or 'followup', not {loss!r}", field="loss")
        self.quality = (quality or "overall").lower()
        table = followups()
        known = {q for level in table.values() for q in level}
        if self.quality != "overall" and self.quality not in known:
            raise UnknownNameError("FED metric quality", self.quality, sorted(known | {"overall"}))
        super().__init__(model=model, quality=self.quality, loss=loss,
                         loss_description=("mean token NLL of conversation + follow-up (public release)"
                                           if loss == "whole" else "mean token NLL of the follow-up only"))
        self.model, self.loss, self.batch_size, self.max_tokens = model, loss, batch_size, max_tokens
        self.threads = threads

    def qualities_for(self, level: str) -> list[str]:
        table = followups()[level]
        return list(table) if self.quality == "overall" else [self.quality]

    def check(self, items: Sequence[Item]) -> None:
        for it in items:
            if it.level == "turn" and it.response is None:
                raise MissingInputError("scorer 'fed-metric' needs 'response'", record=it.id, field="response")
            if it.level == "dialog" and not it.dialog:
                raise MissingInputError("scorer 'fed-metric' needs 'dialog'", record=it.id, field="dialog")
            if self.quality not in ("overall", *followups()[it.level]):
                raise InputError(f"FED quality '{self.quality}' is not a {it.level}-level quality",
                                 record=it.id, field="level")

    def compute(self, items: Sequence[Item]) -> list[Score]:
        tok, net = hf.load(self.model, "causal-lm", "scorer 'fed-metric'")
        hf.set_threads(self.threads)
        eos = hf.separator_token(tok)
        out = []
        for it in items:
            turns = [t.text for t in it.turns]
            table = followups()[it.level]
            names = self.qualities_for(it.level)
            texts = sorted({u for q in names for side in ("positive", "negative") for u in table[q][side]})
            try:
                losses = followup_losses(tok, net, conversation_text(turns, eos), [f" {eos} {u}" for u in texts],
                                         loss=self.loss, batch_size=self.batch_size, max_tokens=self.max_tokens)
            except RuntimeError as e:  # e.g. out of memory on one very long dialog: record it, keep going
                out.append(Score(it.id, None, error=f"model failed: {e}"))
                continue
            by_text = dict(zip(texts, losses))
            per_quality = [quality_score(table[q], by_text) for q in names]
            out.append(Score(it.id, float(np.mean(per_quality))))
        return out


def quality_score(utts: dict[str, list[str]], loss: dict[str, float]) -> float:
    """mean loss(negatives) - mean loss(positives); the positive term is 0 when there are none."""
    high = float(np.mean([loss[u] for u in utts["positive"]])) if utts["positive"] else 0.0
    low = float(np.mean([loss[u] for u in utts["negative"]])) if utts["negative"] else 0.0
    return low - high


def followup_losses(tok: Any, net: Any, conversation: str, suffixes: Sequence[str], *, loss: str = "whole",
                    batch_size: int = 8, max_tokens: int | None = None) -> list[float]:
    """Mean token NLL of ``conversation + suffix`` (whole text, or the suffix's tokens only) for each suffix."""
    import torch

    limit = max_tokens or hf.max_positions(net)
    conv_ids = tok(conversation, add_special_tokens=False)["input_ids"]
    tails: list[list[int] | None] = []
    for s in suffixes:
        full = tok(conversation + s, add_special_tokens=False)["input_ids"]
        # Reusing the conversation's cache is exact only when its tokens are a prefix of the full text's.
        tails.append(full[len(conv_ids):] if full[:len(conv_ids)] == conv_ids else None)
    longest = max((len(t) for t in tails if t is not None), default=0)
    ctx = conv_ids[-max(limit - longest, 2):]  # very long dialogs: keep the most recent tokens
    results: list[float | None] = [None] * len(suffixes)
    with torch.inference_mode():
        first = net(input_ids=torch.tensor([ctx]), use_cache=True)
        conv_lp = torch.log_softmax(first.logits[0].float(), -1)
        conv_nll = -float(conv_lp[:-1].gather(-1, torch.tensor(ctx[1:])[:, None]).sum())
        last = conv_lp[-1]
        todo = [i for i, t in enumerate(tails) if t]
        for start in range(0, len(todo), batch_size):
            idx = todo[start:start + batch_size]
            width = max(len(tails[i]) for i in idx)  # type: ignore[arg-type]
            ids = torch.zeros((len(idx), width), dtype=torch.long)
            mask = torch.zeros((len(idx), len(ctx) + width), dtype=torch.long)
            mask[:, :len(ctx)] = 1
            for row, i in enumerate(idx):
                t = tails[i]
                ids[row, :len(t)] = torch.tensor(t)  # type: ignore[arg-type]
                mask[row, len(ctx):len(ctx) + len(t)] = 1  # type: ignore[arg-type]
            cache = copy.deepcopy(first.past_key_values)
            cache.batch_repeat_interleave(len(idx))
            pos = torch.arange(len(ctx), len(ctx) + width)[None].expand(len(idx), -1)
            lp = torch.log_softmax(net(input_ids=ids, attention_mask=mask, position_ids=pos,
                                       past_key_values=cache).logits.float(), -1)
            for row, i in enumerate(idx):
                tail = torch.tensor(tails[i])
                nll = -float(last[tail[0]]) - float(lp[row, : len(tail) - 1].gather(-1, tail[1:, None]).sum())
                results[i] = (nll / len(tail) if loss == "followup"
                              else (conv_nll + nll) / (len(ctx) - 1 + len(tail)))
        for i in range(len(tails)):
            if results[i] is None:  # tokenisation merged across the boundary: score the text on its own
                results[i] = _plain_loss(tok, net, conversation + suffixes[i], len(conv_ids), loss, limit)
    return [float(r) for r in results]  # type: ignore[arg-type]


def _plain_loss(tok: Any, net: Any, text: str, n_conv: int, loss: str, limit: int) -> float:
    import torch

    ids = tok(text, add_special_tokens=False)["input_ids"]
    n_tail = max(len(ids) - n_conv, 1)
    ids = ids[-limit:]
    lp = torch.log_softmax(net(input_ids=torch.tensor([ids])).logits[0].float(), -1)
    nll = -lp[:-1].gather(-1, torch.tensor(ids[1:])[:, None])[:, 0]
    return float(nll[-n_tail:].mean() if loss == "followup" else nll.mean())


@register_classic("fed-metric")
def _fed_metric(model: str | None = None, quality: Any = None, **options: Any) -> FedMetric:
    """``quality``: a FED quality name (strict: typos are errors), or the harness's Quality object of the
    rated set; a rated quality the FED metric has no follow-ups for (DailyDialog's "appropriateness",
    USR's "Overall" 1-5 ...) is scored with the FED Overall, as the generic quality score."""
    name = getattr(quality, "name", quality)
    if not isinstance(quality, str) and name is not None:
        known = {q for level in followups().values() for q in level}
        if name.lower() not in known:
            name = "overall"
    return FedMetric(model or "microsoft/DialoGPT-large", quality=name, **options)
