"""Fitting a head: ridge regression on standardized hidden states, honestly cross-validated.

The target is each item's rating ranked within its own set and scaled to [0, 1], so that sets rated on
different scales (0-4, 1-5, 0-2) and with different spreads pull equally, and a head learns to order
replies, which is what the reported Spearman correlation reads.

The regularization is chosen inside the training data only, by cross-validation whose folds never split
a conversation (and, with several sets, leave whole groups of sets out: sets that share conversations
go together). The figures a head carries are one level further out: each comes from predictions on
conversations (or sets) that neither the weights nor the choice of regularization saw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.errors import MissingExtraError

#: The regularization strengths tried, fixed before any figure was read (docs/heads.md).
ALPHAS: tuple[float, ...] = (1.0, 10.0, 100.0, 1e3, 1e4, 1e5)
#: Folds grouped by conversation, within one group of sets.
FOLDS = 5


@dataclass(frozen=True)
class Rows:
    """The training rows: features (n x f), human ratings, and per row its set, its group of sets (sets
    that share conversations share one) and its conversation."""

    x: np.ndarray
    human: np.ndarray
    dataset: tuple[str, ...]
    family: tuple[str, ...]
    conversation: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.human)

    def take(self, idx: np.ndarray) -> Rows:
        pick = [int(i) for i in idx]
        return Rows(self.x[idx], self.human[idx], tuple(self.dataset[i] for i in pick),
                    tuple(self.family[i] for i in pick), tuple(self.conversation[i] for i in pick))


@dataclass(frozen=True)
class Fitted:
    """A fitted linear map in the head file's terms."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    alpha: float


def require_sklearn() -> None:
    """Fitting needs scikit-learn (the ``fit`` extra); said before any model loads."""
    try:
        import sklearn  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError("judge fit", "fit", "scikit-learn") from exc


def rank_target(human: np.ndarray, dataset: Sequence[str]) -> np.ndarray:
    """Each rating's rank within its set (ties averaged), scaled to [0, 1]; 0.5 for a set of one item."""
    from scipy.stats import rankdata

    y = np.empty(len(human))
    names = np.asarray(dataset)
    for name in dict.fromkeys(dataset):
        idx = np.flatnonzero(names == name)
        y[idx] = (rankdata(human[idx]) - 1) / (len(idx) - 1) if len(idx) > 1 else 0.5
    return y


def ridge(rows: Rows, alpha: float) -> Fitted:
    """Standardize, then ridge regression of the within-set ranks on the vectors."""
    from sklearn.linear_model import Ridge
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(rows.x)
    model = Ridge(alpha=alpha).fit(scaler.transform(rows.x), rank_target(rows.human, rows.dataset))
    return Fitted(scaler.mean_, scaler.scale_, np.asarray(model.coef_), float(model.intercept_), alpha)


def predict(f: Fitted, x: np.ndarray) -> np.ndarray:
    return np.asarray(((x - f.mean) / f.scale) @ f.weights + f.bias)


def within_set_spearman(pred: np.ndarray, rows: Rows) -> dict[str, tuple[float | None, int]]:
    """Per set: the Spearman of predictions with the human ratings (None where undefined), and n."""
    from scipy.stats import spearmanr

    out: dict[str, tuple[float | None, int]] = {}
    names = np.asarray(rows.dataset)
    for name in dict.fromkeys(rows.dataset):
        idx = np.flatnonzero(names == name)
        rho = None
        if len(idx) > 2 and np.ptp(rows.human[idx]) > 0 and np.ptp(pred[idx]) > 0:
            rho = float(spearmanr(pred[idx], rows.human[idx]).statistic)
        out[name] = (rho, len(idx))
    return out


def _mean_rho(per_set: dict[str, tuple[float | None, int]]) -> float:
    vals = [r for r, _ in per_set.values() if r is not None]
    return float(np.mean(vals)) if vals else float("-inf")


def folds(rows: Rows) -> list[tuple[np.ndarray, np.ndarray]]:
    """Train/held-out index pairs: leave one group of sets out when there are several groups, else
    folds grouped by conversation (at most ``FOLDS``, at least 2 conversations per fold's held-out side
    is not required: a fold may hold one)."""
    from sklearn.model_selection import GroupKFold, LeaveOneGroupOut

    if len(set(rows.family)) > 1:
        splitter = LeaveOneGroupOut()
        groups = rows.family
    else:
        n = len(set(rows.conversation))
        if n < 2:
            raise ValueError("cross-validation needs at least two conversations")
        splitter = GroupKFold(n_splits=min(FOLDS, n))
        groups = rows.conversation
    return [(tr, te) for tr, te in splitter.split(rows.x, groups=list(groups))]


def choose_alpha(rows: Rows, alphas: Sequence[float] = ALPHAS) -> float:
    """The strength whose held-out predictions (``folds`` of ``rows``) agree best with the ratings, by
    the mean within-set Spearman; ties go to the stronger regularization."""
    best, best_alpha = float("-inf"), max(alphas)
    splits = folds(rows)
    for alpha in sorted(alphas, reverse=True):
        pred = np.full(len(rows), np.nan)
        for tr, te in splits:
            pred[te] = predict(ridge(rows.take(tr), alpha), rows.x[te])
        score = _mean_rho(within_set_spearman(pred, rows))
        if score > best + 1e-12:
            best, best_alpha = score, alpha
    return best_alpha


def fit(rows: Rows, alphas: Sequence[float] = ALPHAS) -> Fitted:
    """The head on all of ``rows``, its strength chosen by cross-validation inside them."""
    return ridge(rows, choose_alpha(rows, alphas))


def cross_validate(rows: Rows, alphas: Sequence[float] = ALPHAS) -> dict[str, object]:
    """Held-out figures of the whole procedure (choice of strength included): each outer fold's held-out
    rows are predicted by a head fitted, strength chosen, on the other folds only. With several groups
    of sets the outer folds leave one group out (what a head does on a set it never saw); within one
    group they are grouped by conversation."""
    several = len(set(rows.family)) > 1
    pred = np.full(len(rows), np.nan)
    chosen = []
    for tr, te in folds(rows):
        train = rows.take(tr)
        inner = train if len(set(train.family)) > 1 or len(set(train.conversation)) > 1 else None
        alpha = choose_alpha(inner, alphas) if inner is not None else max(alphas)
        chosen.append(alpha)
        pred[te] = predict(ridge(train, alpha), rows.x[te])
    per_set = within_set_spearman(pred, rows)
    defined = [r for r, _ in per_set.values() if r is not None]
    return {
        "how": "leave one group of sets out" if several else
               f"{min(FOLDS, len(set(rows.conversation)))} folds grouped by conversation",
        "spearman": round(float(np.mean(defined)), 4) if defined else None,
        "per_set": {name: {"spearman": None if r is None else round(r, 4), "n": n} for name, (r, n) in per_set.items()},
        "alphas_chosen": chosen,
    }
