"""Group k-fold cross-validated linear regression: every item is predicted by a model fitted without it.

Folds are built from item groups (a conversation never straddles training and test). Features are
min-max scaled on the training fold; a feature missing for an item (NaN, e.g. no knowledge fact) takes
the training fold's mean; a feature with no value in the training fold is dropped for that fold.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import numpy as np

from ...core.errors import InputError

#: Called once per fold with (training row indices, test row indices) before fitting: the instrument
#: tests use to check that no test row is ever trained on.
FitHook = Callable[[list[int], list[int]], None]


def group_folds(groups: Sequence[str], k: int, seed: int = 0) -> list[list[int]]:
    """Row indices of each of ``k`` folds; all rows of a group fall in one fold."""
    unique = sorted(set(groups))
    if len(unique) < k:
        raise InputError(f"cross-validation needs at least {k} groups (conversations), got {len(unique)}",
                         field="folds")
    random.Random(seed).shuffle(unique)
    fold_of = {g: i % k for i, g in enumerate(unique)}
    folds: list[list[int]] = [[] for _ in range(k)]
    for row, g in enumerate(groups):
        folds[fold_of[g]].append(row)
    return folds


def fit_linear(x: np.ndarray, y: np.ndarray, ridge: float = 0.0) -> np.ndarray:
    """Least-squares weights with the intercept last (ridge > 0 shrinks the non-intercept weights)."""
    a = np.hstack([x, np.ones((len(x), 1))])
    if ridge > 0:
        reg = np.sqrt(ridge) * np.eye(a.shape[1])[:-1]
        a = np.vstack([a, reg])
        y = np.concatenate([y, np.zeros(len(reg))])
    w, *_ = np.linalg.lstsq(a, y, rcond=None)
    return w


def cross_validated_predictions(features: np.ndarray, labels: Sequence[float | None], groups: Sequence[str],
                                k: int = 5, seed: int = 0, ridge: float = 0.0,
                                on_fit: FitHook | None = None) -> np.ndarray:
    """Out-of-fold predictions for every row (rows without a label are predicted, never trained on)."""
    x = np.asarray(features, dtype=float)
    y = np.array([np.nan if v is None else v for v in labels], dtype=float)
    pred = np.full(len(x), np.nan)
    for test in group_folds(groups, k, seed):
        test_set = set(test)
        train = [i for i in range(len(x)) if i not in test_set and not np.isnan(y[i])]
        if on_fit is not None:
            on_fit(list(train), list(test))
        if len(train) < 2:
            raise InputError("a cross-validation fold has fewer than 2 labelled training items", field="labels")
        xt = x[train]
        cols = [j for j in range(x.shape[1]) if np.isfinite(xt[:, j]).any()]
        xt = xt[:, cols]
        mean = np.nanmean(xt, axis=0)
        lo, hi = np.nanmin(xt, axis=0), np.nanmax(xt, axis=0)
        span = np.where(hi > lo, hi - lo, 1.0)

        def prep(m: np.ndarray, mean: np.ndarray = mean, lo: np.ndarray = lo, span: np.ndarray = span) -> np.ndarray:
            m = np.where(np.isnan(m), mean, m)
            return (m - lo) / span

        w = fit_linear(prep(xt), y[train], ridge)
        xs = prep(x[test][:, cols])
        pred[test] = xs @ w[:-1] + w[-1]
    return pred
