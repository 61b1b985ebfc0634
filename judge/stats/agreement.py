"""Inter-annotator agreement of human ratings: Krippendorff's alpha (the ceiling a judge is compared with)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

LEVELS = ("nominal", "ordinal", "interval")


def krippendorff_alpha(units: Sequence[Sequence[float | None]], level: str = "interval") -> float:
    """Krippendorff's alpha for units rated by a varying number of raters.

    ``units`` holds, per unit (item), the values its raters gave (None = missing). Units with fewer
    than two values are not pairable and are ignored, as in Krippendorff (2011). Computed from the
    coincidence matrix; ``level`` picks the difference function (nominal, ordinal, interval).
    Returns NaN when fewer than two pairable values exist or all values are equal.
    """
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; use one of {', '.join(LEVELS)}")
    clean = [[float(v) for v in u if v is not None] for u in units]
    clean = [u for u in clean if len(u) >= 2]
    if not clean:
        return float("nan")
    values = sorted({v for u in clean for v in u})
    if len(values) < 2:
        return float("nan")
    pos = {v: i for i, v in enumerate(values)}
    k = len(values)
    o = np.zeros((k, k))  # coincidence matrix
    for u in clean:
        m = len(u)
        counts = np.zeros(k)
        for v in u:
            counts[pos[v]] += 1
        # Each ordered pair of different raters' values in the unit, weighted 1/(m-1).
        o += (np.outer(counts, counts) - np.diag(counts)) / (m - 1)
    n_c: np.ndarray = o.sum(axis=1)
    n = float(n_c.sum())
    vals = np.array(values)
    if level == "nominal":
        delta = 1.0 - np.eye(k)
    elif level == "interval":
        delta = (vals[:, None] - vals[None, :]) ** 2
    else:  # ordinal: squared count of values between c and k, halving the end categories
        cum = np.concatenate([[0.0], np.cumsum(n_c)])
        delta = np.zeros((k, k))
        for c in range(k):
            for e in range(k):
                lo, hi = min(c, e), max(c, e)
                delta[c, e] = (cum[hi + 1] - cum[lo] - (n_c[c] + n_c[e]) / 2) ** 2
    d_o = (o * delta).sum() / n
    d_e = (np.outer(n_c, n_c) * delta).sum() / (n * (n - 1))
    if d_e == 0:
        return float("nan")
    return float(1 - d_o / d_e)
