"""GLUE proxy indicators (Nedelchev 2023, ch. 6): outputs of sentence(-pair) classifiers fine-tuned on
GLUE tasks, min-max scaled and combined by a linear regression on human ratings of the quality.

The thesis fitted the regression in-sample; here it is fitted under group k-fold cross-validation,
so every item is scored by a regression that never saw it or its conversation (regression.py).

A classifier is given as ``MODEL[@INPUT][#LABEL]``: INPUT is ``response`` (the response alone),
``context`` (last context turn + response) or ``fact`` (knowledge fact + response), several joined by
``+``; LABEL is the index of the class whose probability is the feature (default 1; a model with one
output, e.g. STS-B, gives its raw value). Careful: for QNLI/RTE, GLUE's label 0 is "entailment".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core.errors import InputError
from ...data.items import Item
from ..base import Score
from . import hf
from .base import ClassicScorer
from .registry import check_inputs, register_classic
from .regression import FitHook, cross_validated_predictions

INPUTS = ("response", "context", "fact")

#: The thesis's classifiers (BERT-base fine-tuned on each GLUE task; hub ids of public fine-tunes).
DEFAULT_CLASSIFIERS = ("textattack/bert-base-uncased-CoLA@response#1", "textattack/bert-base-uncased-SST-2@response#1",
                       "textattack/bert-base-uncased-STS-B@context+fact",
                       "textattack/bert-base-uncased-MRPC@context+fact#1",
                       "textattack/bert-base-uncased-QQP@context+fact#1",
                       "textattack/bert-base-uncased-QNLI@context+fact#0",
                       "textattack/bert-base-uncased-RTE@context+fact#0")


@dataclass(frozen=True)
class Classifier:
    model: str
    inputs: tuple[str, ...]
    label: int

    @classmethod
    def parse(cls, spec: str) -> Classifier:
        rest, _, label = spec.partition("#")
        model, _, inputs = rest.partition("@")
        ins = tuple(inputs.split("+")) if inputs else ("response",)
        bad = [i for i in ins if i not in INPUTS]
        if bad or not model:
            raise InputError(f"bad classifier spec {spec!r}: expected MODEL[@{'|'.join(INPUTS)}][#LABEL]",
                             field="classifiers")
        try:
            return cls(model, ins, int(label) if label else 1)
        except ValueError as e:
            raise InputError(f"bad label index in classifier spec {spec!r}", field="classifiers") from e


def classifier_features(tok: Any, net: Any, firsts: Sequence[str | None], response: Sequence[str], label: int,
                        batch_size: int = 16) -> np.ndarray:
    """One feature per item: P(label) (or the raw output of a one-output model); NaN where the first text is missing."""
    import torch

    out = np.full(len(response), np.nan)
    rows = [i for i, f in enumerate(firsts) if f != ""]
    for start in range(0, len(rows), batch_size):
        idx = rows[start:start + batch_size]
        if firsts[idx[0]] is None:  # single-sentence task
            enc = tok([response[i] for i in idx], padding=True, truncation=True, max_length=512,
                      return_tensors="pt")
        else:
            enc = tok([firsts[i] for i in idx], [response[i] for i in idx], padding=True,
                      truncation="longest_first", max_length=512, return_tensors="pt")
        with torch.inference_mode():
            logits = net(**enc).logits.float()
        vals = logits[:, 0] if logits.shape[-1] == 1 else torch.softmax(logits, -1)[:, label]
        out[idx] = vals.numpy()
    return out


class GlueProxy(ClassicScorer):
    name = "glue-proxy"
    requires = ("context", "response", "labels")
    levels = ("turn",)

    def __init__(self, classifiers: Sequence[str], quality: str | None, folds: int = 5, seed: int = 0,
                 ridge: float = 0.0, batch_size: int = 16, on_fit: FitHook | None = None) -> None:
        self.classifiers = [Classifier.parse(c) for c in classifiers]
        if not self.classifiers:
            raise InputError("glue-proxy needs at least one classifier", field="classifiers")
        self.quality, self.folds, self.seed, self.ridge = quality, folds, seed, ridge
        self.batch_size, self.on_fit = batch_size, on_fit
        super().__init__(classifiers=list(classifiers), quality=quality, folds=folds, seed=seed, ridge=ridge,
                         fit="linear regression, group k-fold cross-validated; features min-max scaled")

    def check(self, items: Sequence[Item]) -> None:
        check_inputs(self.name, items, ("context", "response"), self.levels)
        if self.quality is None:
            raise InputError("scorer 'glue-proxy' fits a regression on human ratings: give the quality",
                             field="quality")
        if sum(it.human(self.quality) is not None for it in items) < 2 * self.folds:
            raise InputError(f"scorer 'glue-proxy' needs labels ('{self.quality}') on at least "
                             f"{2 * self.folds} items", field="labels")

    def features(self, items: Sequence[Item]) -> np.ndarray:
        cols = []
        responses = [it.response or "" for it in items]
        for c in self.classifiers:
            tok, net = hf.load(c.model, "seq-cls", "scorer 'glue-proxy'")
            for inp in c.inputs:
                if inp == "response":
                    firsts: list[str | None] = [None] * len(items)
                elif inp == "context":
                    firsts = [it.context[-1].text for it in items]
                else:
                    firsts = [it.fact or "" for it in items]  # "" = no fact: the feature is missing (NaN)
                cols.append(classifier_features(tok, net, firsts, responses, c.label, self.batch_size))
        return np.column_stack(cols)

    def compute(self, items: Sequence[Item]) -> list[Score]:
        x = self.features(items)
        labels = [it.human(self.quality) for it in items]  # type: ignore[arg-type]
        pred = cross_validated_predictions(x, labels, [it.group or it.id for it in items], k=self.folds,
                                           seed=self.seed, ridge=self.ridge, on_fit=self.on_fit)
        return [Score(it.id, float(p)) for it, p in zip(items, pred)]


@register_classic("glue-proxy")
def _glue_proxy(model: str | Sequence[str] | None = None, quality: Any = None,
                classifiers: Sequence[str] | None = None, **options: Any) -> GlueProxy:
    if classifiers is None:
        classifiers = model.split(",") if isinstance(model, str) else (model or DEFAULT_CLASSIFIERS)
    return GlueProxy(list(classifiers), getattr(quality, "name", quality), **options)
