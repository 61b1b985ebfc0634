"""Correlation statistics between judge scores and human ratings."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats as _st


@dataclass(frozen=True)
class Correlation:
    """A correlation coefficient with its p-value and the number of paired items."""

    method: str
    value: float
    p_value: float
    n: int

    @property
    def significant(self) -> bool:
        return bool(self.p_value < 0.05)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _clean(pred: Sequence[float | None], human: Sequence[float | None]) -> tuple[np.ndarray, np.ndarray]:
    if len(pred) != len(human):
        raise ValueError(f"{len(pred)} predictions vs {len(human)} human scores")
    pairs = [(p, h) for p, h in zip(pred, human) if p is not None and h is not None and math.isfinite(p)]
    a = np.array([p for p, _ in pairs], dtype=float)
    b = np.array([h for _, h in pairs], dtype=float)
    return a, b


def correlate(pred: Sequence[float | None], human: Sequence[float | None], method: str = "spearman") -> Correlation:
    """Spearman, Pearson or Kendall (tau-b) over the items where both values exist."""
    a, b = _clean(pred, human)
    n = len(a)
    if n < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return Correlation(method, float("nan"), float("nan"), n)
    if method == "spearman":
        res = _st.spearmanr(a, b)
    elif method == "pearson":
        res = _st.pearsonr(a, b)
    elif method == "kendall":
        res = _st.kendalltau(a, b)
    else:
        raise ValueError(f"unknown correlation method {method!r}")
    return Correlation(method, float(res.statistic), float(res.pvalue), n)


def correlations(pred: Sequence[float | None], human: Sequence[float | None]) -> dict[str, Correlation]:
    """Spearman, Pearson and Kendall at once."""
    return {m: correlate(pred, human, m) for m in ("spearman", "pearson", "kendall")}
