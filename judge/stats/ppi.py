"""Human-scale means from a judge's scores on every item and people's labels on a random few: prediction-powered
inference with power tuning (PPI++; Angelopoulos, Duchi and Zrnic 2024), its interval from a bootstrap that
resamples conversations (the clustered predict-then-debias bootstrap of Kluger et al. 2025).

For a group of items g (a system, a version), with the judge's score f on every item and a label y on the
labelled ones, the estimate is

    labelled mean of (y - lambda * f)  +  lambda * mean of f over every item of g

The first term removes the judge's bias (whatever it is: its scale, its offset, its taste); the second carries
the judge's information about the items nobody labelled. lambda = 0 is the labels-only mean; lambda = 1 is
plain PPI. lambda is chosen to make the bootstrap variance of the groups' means smallest (one lambda for all,
as ppi-python's "overall" mode; one per group would chase the noise of a group's few labels) (a linear recalibration of
the judge onto the human scale is this lambda: an intercept cancels between the two terms, so no separate fit
is needed and nothing is fitted on the labels beyond lambda). Differences between groups are estimated the
same way, with the same lambda.

Labels with a sampling probability are weighted by its inverse (a Hajek ratio, so only the probabilities'
ratios matter); without probabilities the labelled items must be a uniform random sample of the rows
(:func:`uniformity_p`).

Two targets (:data:`TARGETS`):

* ``rows``: the human mean over exactly these rows, the number labelling all of them would give. The judge's
  mean over the rows is known exactly; only the labelled part is resampled, and the variance is scaled by the
  finite-population factor (1 - labelled fraction) where the sample is uniform.
* ``traffic``: the mean of the conversations these rows were drawn from (the next month's chats), wider:
  every term is resampled with the conversations.

The interval is the bootstrap standard error times a Student t quantile on (labelled conversations - 1)
degrees of freedom, the standard error scaled by sqrt(m / (m - 1)) because a bootstrap over m clusters
understates the variance by (m - 1) / m. Below the project's floor on labelled conversations
(:mod:`judge.stats.floor`) no interval is given.

The core (:func:`estimate_draws`) takes a leading axis of draws (different labelled subsets of the same rows)
so that the coverage benchmark runs thousands of draws in one vectorised pass; the CLI uses one draw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .floor import MIN_CONVERSATIONS

TARGETS = ("rows", "traffic")

#: Bootstrap resamples by default.
N_BOOT = 1000


@dataclass(frozen=True)
class Layout:
    """Items laid out by conversation (cluster) and group: each item's indices and judge ``score``, and the
    per-cluster, per-group sums of the score over every item (``f_sum``) and item counts (``n_sum``), both
    [clusters, groups]."""

    cluster: np.ndarray
    group: np.ndarray
    score: np.ndarray
    f_sum: np.ndarray
    n_sum: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        return self.f_sum.shape


def layout(cluster: np.ndarray, group: np.ndarray, score: np.ndarray) -> Layout:
    """The layout of items with integer ``cluster`` and ``group`` indices (0..k-1) and judge ``score``."""
    shape = (int(cluster.max()) + 1, int(group.max()) + 1)
    return Layout(cluster, group, score, table(cluster, group, score, shape), table(cluster, group, np.ones(len(score)), shape))


def table(cluster: np.ndarray, group: np.ndarray, values: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Sum of ``values`` per (cluster, group): values may carry leading draw axes ([..., items])."""
    flat = cluster * shape[1] + group
    lead = values.shape[:-1]
    v = values.reshape(-1, values.shape[-1])
    out = np.zeros((v.shape[0], shape[0] * shape[1]))
    for i in range(v.shape[0]):
        out[i] = np.bincount(flat, weights=v[i], minlength=shape[0] * shape[1])
    return out.reshape(*lead, *shape)


def contrasts(names: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """The estimands over groups ``names``: each group's mean, then each difference ``a - b`` (a before b)."""
    k = len(names)
    labels = list(names)
    rows = [np.eye(k)[i] for i in range(k)]
    for i in range(k):
        for j in range(i + 1, k):
            labels.append(f"{names[i]} - {names[j]}")
            rows.append(np.eye(k)[i] - np.eye(k)[j])
    return labels, np.array(rows).reshape(len(rows), k)


def boot_counts(n_clusters: int, n_boot: int, seed: int) -> np.ndarray:
    """How often each conversation is drawn in each of ``n_boot`` resamples [n_boot, clusters]."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=n_boot).astype(float)


@dataclass(frozen=True)
class Draws:
    """Estimates for each draw and estimand [draws, estimands]: the PPI++ estimate with its standard error,
    interval and lambda; the labels-only estimate with its own; labelled items and conversations behind each.
    An interval is NaN below the floor on labelled conversations."""

    ppi: np.ndarray
    ppi_se: np.ndarray
    ppi_low: np.ndarray
    ppi_high: np.ndarray
    lam: np.ndarray
    naive: np.ndarray
    naive_se: np.ndarray
    naive_low: np.ndarray
    naive_high: np.ndarray
    n_labels: np.ndarray
    n_conversations: np.ndarray

    @property
    def effective_n(self) -> np.ndarray:
        """How many labels the estimate is worth: labels x (labels-only variance / PPI variance)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.n_labels * (self.naive_se / self.ppi_se) ** 2


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _boot_means(counts: np.ndarray, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Per-group ratio means under each resample: counts [B, C] and num/den [D, C, G] -> [D, B, G]."""
    d, c, g = num.shape
    top = counts @ num.transpose(1, 0, 2).reshape(c, d * g)
    bottom = counts @ den.transpose(1, 0, 2).reshape(c, d * g)
    return _ratio(top, bottom).reshape(-1, d, g).transpose(1, 0, 2)


def _nan_cov(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Covariance over axis 1 of [D, B, E] arrays, resamples where either is NaN left out."""
    ok = np.isfinite(a) & np.isfinite(b)
    n = ok.sum(axis=1)
    a0, b0 = np.where(ok, a, 0.0), np.where(ok, b, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ma, mb = a0.sum(axis=1) / n, b0.sum(axis=1) / n
        return np.where(ok, (a0 - ma[:, None]) * (b0 - mb[:, None]), 0.0).sum(axis=1) / (n - 1)


def _tuned(a_s: np.ndarray, gap: np.ndarray, means: np.ndarray) -> np.ndarray:
    """One lambda per draw [D]: the one that makes the summed bootstrap variance of the groups' means
    (estimands flagged in ``means``) smallest. One lambda for all groups (and their differences) rather than
    one each: a lambda fitted on a group's few labels chases their noise and makes its interval too narrow."""
    a_m, g_m = a_s[:, :, means], gap[:, :, means]
    cov = np.nansum(_nan_cov(a_m, g_m), axis=1)
    var = np.nansum(_nan_cov(g_m, g_m), axis=1)
    return np.where(var > 0, -cov / np.where(var > 0, var, 1.0), 0.0)


def estimate_draws(lay: Layout, weight: np.ndarray, label: np.ndarray, estimands: np.ndarray, counts: np.ndarray,
                   *, target: str = "rows", fraction: np.ndarray | None = None,
                   confidence: float = 0.95) -> Draws:
    """PPI++ and labels-only estimates of every estimand (rows of ``estimands``, contrasts over groups) for each
    draw: ``weight`` [D, items] is each item's label weight in that draw (0: unlabelled; 1/probability), ``label``
    [D, items] its label (any value where unlabelled). ``counts``: the bootstrap's conversation counts
    (:func:`boot_counts`), shared by every draw. ``fraction`` [D]: the labelled fraction of the rows of a
    uniform sample (finite-population factor of the ``rows`` target; None: no factor)."""
    from scipy.stats import t as student

    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    shape = lay.shape
    f_item = lay.score
    w = table(lay.cluster, lay.group, weight, shape)
    wy = table(lay.cluster, lay.group, weight * np.where(weight > 0, label, 0.0), shape)
    wf = table(lay.cluster, lay.group, weight * f_item, shape)
    # point estimates per group [D, G], then per estimand [D, E]
    a = _ratio(wy.sum(axis=1), w.sum(axis=1)) @ estimands.T
    b = _ratio(wf.sum(axis=1), w.sum(axis=1)) @ estimands.T
    c_group = _ratio(lay.f_sum.sum(axis=0), lay.n_sum.sum(axis=0))
    c = np.broadcast_to(c_group @ estimands.T, a.shape)
    a_s = _boot_means(counts, wy, w) @ estimands.T
    b_s = _boot_means(counts, wf, w) @ estimands.T
    if target == "traffic":
        c_s = _boot_means(counts, lay.f_sum[None], lay.n_sum[None]) @ estimands.T
    else:
        c_s = np.broadcast_to(c[:, None, :], a_s.shape)
    gap = c_s - b_s
    lam = _tuned(a_s, gap, np.abs(estimands).sum(axis=1) == 1)
    ppi = a + lam[:, None] * (c - b)
    ppi_s = a_s + lam[:, None, None] * gap
    used = (w > 0).astype(float)  # [D, C, G]: conversations with a label in the group
    involved = (np.abs(estimands) > 0).astype(float)  # [E, G]
    n_conv = ((used @ involved.T) > 0).sum(axis=1)  # [D, E]
    n_lab = (weight > 0).astype(float) @ np.eye(shape[1])[lay.group] @ involved.T  # [D, E]
    m = n_conv.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        inflate = np.sqrt(m / (m - 1)) * student.ppf(0.5 + confidence / 2, np.maximum(m - 1, 1))
    inflate = np.where(m >= MIN_CONVERSATIONS, inflate, np.nan)
    if fraction is not None and target == "rows":
        inflate = inflate * np.sqrt(np.clip(1.0 - fraction, 0.0, 1.0))[:, None]
    ppi_se = np.sqrt(_nan_cov(ppi_s, ppi_s))
    naive_se = np.sqrt(_nan_cov(a_s, a_s))
    return Draws(ppi, ppi_se, ppi - inflate * ppi_se, ppi + inflate * ppi_se, np.broadcast_to(lam[:, None], ppi.shape), a, naive_se,
                 a - inflate * naive_se, a + inflate * naive_se, n_lab, n_conv)

