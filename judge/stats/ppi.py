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

The interval is the bootstrap standard error times a Student t quantile: for one group on (its labelled
conversations m - 1) degrees of freedom, for a difference on Welch-Satterthwaite's; the standard error is
scaled by sqrt(m / (m - 1)) because a bootstrap over m clusters understates the variance by (m - 1) / m. Below the project's floor on labelled conversations
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
    An interval is NaN below the floor on labelled conversations, with fewer than 2 in a group of the estimand,
    and where the labels do not vary."""

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


def _filled(boot: np.ndarray, point: np.ndarray) -> np.ndarray:
    """Resamples [D, B, G] with a group's missing value (the resample drew none of its labelled conversations)
    set to its point estimate [D, G]: such a resample says nothing about the group's spread. It is rare where an
    interval is given (below e^-m for m labelled conversations) and never where the floor holds back one."""
    return np.where(np.isfinite(boot), boot, np.nan_to_num(point)[:, None, :])


def _cov(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The groups' covariance matrices over the resamples: [D, B, G] x [D, B, G] -> [D, G, G]. Estimands'
    variances follow as M S M' without materialising every contrast's resamples (a set with 22 systems has
    253 contrasts)."""
    a0 = a - a.mean(axis=1, keepdims=True)
    b0 = b - b.mean(axis=1, keepdims=True)
    return np.asarray(a0.transpose(0, 2, 1) @ b0) / (a.shape[1] - 1)


def _contrast_var(cov: np.ndarray, estimands: np.ndarray) -> np.ndarray:
    """diag(M S M') per draw: [D, G, G] -> [D, E]."""
    return np.maximum(np.einsum("eg,dgh,eh->de", estimands, cov, estimands), 0.0)


def _tuned(a_s: np.ndarray, gap: np.ndarray) -> np.ndarray:
    """One lambda per draw [D]: the one that makes the summed bootstrap variance of the groups' means
    ([D, B, G] resamples) smallest. One lambda for all groups (and their differences) rather than
    one each: a lambda fitted on a group's few labels chases their noise and makes its interval too narrow."""
    a0 = a_s - a_s.mean(axis=1, keepdims=True)
    g0 = gap - gap.mean(axis=1, keepdims=True)
    cov, var = (a0 * g0).sum(axis=(1, 2)), (g0 * g0).sum(axis=(1, 2))
    return np.where(var > 0, -cov / np.where(var > 0, var, 1.0), 0.0)


def estimate_draws(lay: Layout, weight: np.ndarray, label: np.ndarray, estimands: np.ndarray, counts: np.ndarray,
                   *, target: str = "rows", fraction: np.ndarray | None = None,
                   confidence: float = 0.95) -> Draws:
    """PPI++ and labels-only estimates of every estimand (rows of ``estimands``, contrasts over groups) for each
    draw: ``weight`` [D, items] is each item's label weight in that draw (0: unlabelled; 1/probability), ``label``
    [D, items] its label (any value where unlabelled). ``counts``: the bootstrap's conversation counts
    (:func:`boot_counts`), shared by every draw. ``fraction`` [D]: the labelled fraction of the rows of a
    uniform sample (finite-population factor of the ``rows`` target; None: no factor)."""
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    shape = lay.shape
    f_item = lay.score
    w = table(lay.cluster, lay.group, weight, shape)
    wy = table(lay.cluster, lay.group, weight * np.where(weight > 0, label, 0.0), shape)
    wf = table(lay.cluster, lay.group, weight * f_item, shape)
    # point estimates and resamples per group ([D, G], [D, B, G]); per estimand [D, E], variances as M S M'
    a_g = _ratio(wy.sum(axis=1), w.sum(axis=1))
    b_g = _ratio(wf.sum(axis=1), w.sum(axis=1))
    c_g = np.broadcast_to(_ratio(lay.f_sum.sum(axis=0), lay.n_sum.sum(axis=0)), a_g.shape)
    a_gs, b_gs = _filled(_boot_means(counts, wy, w), a_g), _filled(_boot_means(counts, wf, w), b_g)
    if target == "traffic":
        c_gs = _filled(np.broadcast_to(_boot_means(counts, lay.f_sum[None], lay.n_sum[None]), a_gs.shape), c_g)
    else:
        c_gs = np.broadcast_to(c_g[:, None, :], a_gs.shape)
    gap_gs = c_gs - b_gs
    lam = _tuned(a_gs, gap_gs)
    ppi_gs = a_gs + lam[:, None, None] * gap_gs
    a, ppi = a_g @ estimands.T, (a_g + lam[:, None] * (c_g - b_g)) @ estimands.T
    m_g = (w > 0).sum(axis=1).astype(float)  # [D, G]: labelled conversations per group
    involved = (np.abs(estimands) > 0).astype(float)  # [E, G]
    n_conv = (((w > 0).astype(float) @ involved.T) > 0).sum(axis=1)  # [D, E]
    n_lab = (weight > 0).astype(float) @ np.eye(shape[1])[lay.group] @ involved.T  # [D, E]
    enough = (n_conv >= MIN_CONVERSATIONS) & (((m_g < 2).astype(float) @ involved.T) == 0)
    ppi_cov, naive_cov = _cov(ppi_gs, ppi_gs), _cov(a_gs, a_gs)
    ppi_se = np.sqrt(_contrast_var(ppi_cov, estimands))
    naive_se = np.sqrt(_contrast_var(naive_cov, estimands))
    scale = np.sqrt(np.clip(1.0 - fraction, 0.0, 1.0))[:, None] if fraction is not None and target == "rows" else 1.0
    ppi_k = scale * _t_factor(np.diagonal(ppi_cov, axis1=1, axis2=2), m_g, estimands, n_conv, enough, confidence)
    naive_k = scale * _t_factor(np.diagonal(naive_cov, axis1=1, axis2=2), m_g, estimands, n_conv, enough, confidence)
    # Labels that never vary (every labelled verdict a loss) resample to no spread at all: a zero-width interval
    # would claim certainty that a few labels cannot give, so none is given unless every row is labelled.
    complete = (fraction >= 1)[:, None] if fraction is not None else np.zeros((len(weight), 1), dtype=bool)
    ppi_k = np.where((ppi_se > 0) | complete, ppi_k, np.nan)
    naive_k = np.where((naive_se > 0) | complete, naive_k, np.nan)
    return Draws(ppi, ppi_se, ppi - ppi_k * ppi_se, ppi + ppi_k * ppi_se, np.broadcast_to(lam[:, None], ppi.shape),
                 a, naive_se, a - naive_k * naive_se, a + naive_k * naive_se, n_lab, n_conv)


def _t_factor(var_g: np.ndarray, m_g: np.ndarray, estimands: np.ndarray, n_conv: np.ndarray, enough: np.ndarray,
              confidence: float) -> np.ndarray:
    """The multiplier of each estimand's bootstrap standard error [D, E]: a Student t quantile with
    Welch-Satterthwaite degrees of freedom from the groups' variances ``var_g`` and labelled conversations
    ``m_g`` [D, G], times the square root of the groups' m / (m - 1) corrections weighted by their variances
    (a bootstrap over m clusters understates a mean's variance by (m - 1) / m). A difference of two groups with
    four labels each then gets few degrees of freedom, not those of its eight conversations. NaN where there
    are too few conversations for an interval."""
    from scipy.stats import t as student

    m2 = estimands**2
    with np.errstate(invalid="ignore", divide="ignore"):
        dfm = np.where(m_g > 1, m_g - 1, np.nan)
        total = np.nan_to_num(var_g) @ m2.T
        df = total**2 / (np.nan_to_num(var_g**2 / dfm) @ (m2**2).T)
        inflate = (np.nan_to_num(var_g * (m_g / dfm)) @ m2.T) / total
        df = np.where(total > 0, df, np.maximum(n_conv - 1, 1))
        inflate = np.where(total > 0, inflate, 1.0)
        k = np.sqrt(inflate) * student.ppf(0.5 + confidence / 2, df)
    return np.where(enough, k, np.nan)

