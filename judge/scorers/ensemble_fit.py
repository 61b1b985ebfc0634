"""Ensemble weights learned by cross-validation, never on the items they score.

With ``fit = "cv"`` an ensemble's weights are not given but learned from the human ratings of the
set being scored, in folds that never split a conversation: each item's conversation group is put
in one of ``FOLDS`` folds by a hash of its name, and the items of a fold are scored with weights
fitted on the other folds only. The fit is a grid search over the weight simplex (steps of
1/``GRID_STEPS``) for the highest Spearman of the weighted mean of member percentiles with the
human ratings; ties go to the weights closest to equal, so a fold that cannot tell members apart
keeps the plain rank mean.

With ``fit = "lodo"`` (leave one dataset out, in a ``judge run`` experiment) the weights of a set are
the ones with the highest mean Spearman over the experiment's *other* sets, each ranked on its own:
the scored set's ratings are not used at all, so the method is as unsupervised on that set as a
prompt is.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator, Sequence

import numpy as np

from ..stats.correlation import spearman_rows

#: Folds of the cross-validation (by conversation group).
FOLDS = 5
#: Weight grid resolution: every weight is a multiple of 1 / GRID_STEPS.
GRID_STEPS = 10
#: Fewer training items than this (or constant ratings): the fold keeps equal weights.
MIN_TRAIN = 8


def fold_of(group: str, folds: int = FOLDS) -> int:
    """The fold of a conversation group: stable across runs, machines and item orders."""
    return int.from_bytes(hashlib.sha256(f"fold:{group}".encode()).digest()[:4], "big") % folds


def simplex_grid(n_members: int, steps: int = GRID_STEPS) -> np.ndarray:
    """Every weight vector with components in multiples of 1/steps summing to 1, the ones closest to
    equal weights first (the tie-break of ``fit_weights``)."""
    grid = np.array(list(compositions(steps, n_members)), dtype=float).reshape(-1, n_members) / steps
    order = np.lexsort((np.arange(len(grid)), np.round(((grid - 1 / n_members) ** 2).sum(axis=1), 12)))
    return grid[order]


def compositions(total: int, parts: int) -> Iterator[tuple[int, ...]]:
    """Every way to write ``total`` as ``parts`` non-negative integers, in lexicographic order.

    Built from the positions of ``parts - 1`` bars among ``total + parts - 1`` slots (stars and bars),
    so the cost is the number of compositions, not the ``(total + 1) ** parts`` tuples a filtered
    product walks through (a 9-member grid at steps of 1/10 is 43,758 points out of 2.4 billion)."""
    for bars in itertools.combinations(range(total + parts - 1), parts - 1):
        edges = (-1, *bars, total + parts - 1)
        yield tuple(edges[i + 1] - edges[i] - 1 for i in range(parts))


def fit_weights(values: np.ndarray, human: np.ndarray, steps: int = GRID_STEPS) -> tuple[float, ...]:
    """The simplex-grid weights whose weighted mean of ``values`` (items x members, no NaN) ranks the
    items most like ``human``; equal weights when there is too little to fit on."""
    return fit_weights_sets([(values, human)], values.shape[1], steps)


def fit_weights_sets(sets: Sequence[tuple[np.ndarray, np.ndarray]], n_members: int,
                     steps: int = GRID_STEPS) -> tuple[float, ...]:
    """The simplex-grid weights with the highest mean Spearman over ``sets`` ((items x members values,
    human ratings) each, no NaN), every set ranked on its own; a set with fewer than ``MIN_TRAIN``
    items or constant ratings is left out, and equal weights come back when none is left."""
    return fit_weights_report(sets, n_members, steps)[0]


def fit_weights_report(sets: Sequence[tuple[np.ndarray, np.ndarray]], n_members: int, steps: int = GRID_STEPS
                       ) -> tuple[tuple[float, ...], dict[int, str]]:
    """``fit_weights_sets``'s weights and the sets it could not learn from (index into ``sets`` -> why),
    so that results never list a set as trained on when its ratings weighed nothing."""
    grid = simplex_grid(n_members, steps)
    dropped: dict[int, str] = {}
    finite = []
    for i, (x, y) in enumerate(sets):
        reason = unusable(y)
        if reason is None:
            rho = spearman_rows(grid @ x.T, y)
            if np.isfinite(rho).any():
                finite.append(rho)
                continue
            reason = "no weighting of the members correlates with the ratings (constant scores)"
        dropped[i] = reason
    if not finite:
        return tuple([1.0 / n_members] * n_members), dropped
    mean = np.nanmean(np.vstack(finite), axis=0)
    return tuple(float(w) for w in grid[int(np.nanargmax(mean))]), dropped


def unusable(human: np.ndarray) -> str | None:
    """Why a training set's ratings cannot rank weights (too few complete items, all ratings equal)."""
    if len(human) < MIN_TRAIN:
        return f"{len(human)} items every member scored (fewer than {MIN_TRAIN})"
    if np.ptp(human) == 0:
        return "constant human ratings"
    return None


def complete_rows(values: Sequence[Sequence[float | None]], human: Sequence[float | None], n_members: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The items every member scored and a human rated, as (items x members array, ratings array)."""
    keep = [i for i, row in enumerate(values) if human[i] is not None and all(v is not None for v in row)]
    x = np.array([[values[i][j] for j in range(n_members)] for i in keep], dtype=float)
    return x.reshape(len(keep), n_members), np.array([human[i] for i in keep], dtype=float)


def cv_weights(values: Sequence[Sequence[float | None]], human: Sequence[float | None], groups: Sequence[str],
               n_members: int) -> tuple[list[tuple[float, ...]], list[int], tuple[float, ...]]:
    """Per fold, the weights fitted on the other folds' complete items (every member scored, a human
    rating present); each item's fold (item ``i`` is scored with ``weights[folds[i]]``); and the
    weights fitted on all the complete items, for items outside the set (they are not among them)."""
    folds = [fold_of(g) for g in groups]

    def fit(keep: list[int]) -> tuple[float, ...]:
        return fit_weights(*complete_rows([values[i] for i in keep], [human[i] for i in keep], n_members))

    everyone = list(range(len(values)))
    return [fit([i for i in everyone if folds[i] != f]) for f in range(FOLDS)], folds, fit(everyone)
