"""The floor on conversations below which no interval and no p is computed or printed.

A bootstrap over k conversations (clusters) draws k of them with replacement; the order of the draws does
not matter, so it has at most C(2k-1, k) distinct resamples: 3 for k = 2, 10 for k = 3, then 35, 126, 462,
1716 for k = 7. With 10 distinct resamples, 1000 replicates repeat the same handful of values, and the
2.5% and 97.5% percentiles are one resample's value each: DailyDialog-Zhao's dev half (2 conversations,
14 systems) gave an agreement of .522 [.51, .53] and "p < .001" although a third conversation could move
it anywhere. The floor is the smallest k whose distinct resamples outnumber the default 1000 replicates
(k = 7, 1716); there the likeliest single resample (every conversation once, k!/k^k = .6%) also carries
less than a quarter of one 2.5% tail, so each end of a 95% interval is set by many resamples, not one.

A stratified (joint) bootstrap of a mean over sets resamples each set's conversations within the set in
the same replicate: its distinct resamples are the product over the strata, and it needs as many as one
set at the floor has. Every interval and p in the project asks :func:`has_interval` (computations) and
prints :func:`too_few_text` where it says no; nothing computes its own threshold.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

#: Fewest conversations a bootstrap interval or p is computed from (see the module docstring).
MIN_CONVERSATIONS = 7


def distinct_resamples(sizes: int | Iterable[int]) -> int:
    """Distinct resamples of a bootstrap over clusters: C(2k-1, k) for one set of k conversations, the
    product over the strata of a stratified bootstrap (sets resampled within themselves in one replicate)."""
    ks = [k for k in ([sizes] if isinstance(sizes, int) else sizes) if k > 0]  # an empty stratum draws nothing
    return math.prod(math.comb(2 * k - 1, k) for k in ks) if ks else 0


def has_interval(sizes: int | Iterable[int] | None) -> bool:
    """Whether a bootstrap over these conversations (one count, or one per stratum) may give an interval
    and a p: as many distinct resamples as one set of :data:`MIN_CONVERSATIONS` has. None (unknown) is no."""
    if sizes is None:
        return False
    return distinct_resamples(sizes) >= distinct_resamples(MIN_CONVERSATIONS)


def too_few_text(k: int | Sequence[int] | None) -> str:
    """What every report prints instead of an interval and a p below the floor; a joint bootstrap's count
    per stratum (set) reads ``2 + 5``."""
    count = "?" if k is None else str(k) if isinstance(k, int) else " + ".join(map(str, k))
    return f"too few conversations ({count})"
