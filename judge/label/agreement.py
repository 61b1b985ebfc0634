"""How far raters of one labels file agree: Krippendorff's alpha per quality over the items at least two
raters labelled (each rater's latest label of an item counts), with a bootstrap interval that resamples
those items."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..records.labels import Label, latest_labels
from ..stats.agreement import krippendorff_alpha
from ..stats.floor import MIN_CONVERSATIONS


@dataclass(frozen=True)
class Agreement:
    """One quality's agreement: ``n_items`` rated by two raters or more (the pairable units alpha reads),
    ``n_raters`` who rated any of them, ``n_labels`` their labels; alpha at the interval and ordinal levels,
    and the interval alpha's 95% percentile interval over ``n_boot`` resamples of the items (None below
    :data:`judge.stats.floor.MIN_CONVERSATIONS` items, where an interval means nothing)."""

    quality: str
    n_items: int
    n_raters: int
    n_labels: int
    alpha_interval: float
    alpha_ordinal: float
    low: float | None
    high: float | None
    n_boot: int


def agreement(labels: Sequence[Label], n_boot: int = 1000, seed: int = 0) -> list[Agreement]:
    """Per quality named in ``labels`` (first-seen order), the raters' agreement on the items they share."""
    by_quality: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for (item_id, rater), label in latest_labels(list(labels)).items():
        if rater is None:
            continue
        for quality, value in label.scores.items():
            by_quality[quality][item_id][rater] = value
    out = []
    for quality, items in by_quality.items():
        shared = [ratings for ratings in items.values() if len(ratings) >= 2]
        units = [list(r.values()) for r in shared]
        low = high = None
        if len(units) >= MIN_CONVERSATIONS:
            low, high = _interval(units, n_boot, seed)
        out.append(Agreement(quality, len(units), len({r for u in shared for r in u}), sum(map(len, units)),
                             krippendorff_alpha(units, "interval"), krippendorff_alpha(units, "ordinal"), low, high,
                             n_boot))
    return out


def _interval(units: list[list[float]], n_boot: int, seed: int) -> tuple[float | None, float | None]:
    rng = np.random.default_rng(seed)
    draws = [krippendorff_alpha([units[i] for i in rng.integers(0, len(units), len(units))], "interval")
             for _ in range(n_boot)]
    finite = [d for d in draws if math.isfinite(d)]
    if not finite:
        return None, None
    return float(np.percentile(finite, 2.5)), float(np.percentile(finite, 97.5))


def agreement_text(rows: Sequence[Agreement], path: str) -> str:
    """The report ``judge label --agreement`` prints."""
    if not rows:
        return f"{path}: no labels with a rater"
    lines = [f"agreement of the raters of {path} (each rater's latest label of an item; items rated by 2 or more)"]
    for a in rows:
        head = f"{a.quality}: {a.n_items} items rated by >= 2 of {a.n_raters} raters ({a.n_labels} labels)"
        if a.n_items == 0:
            lines.append(f"{head}: no item shared, no agreement to measure")
            continue
        ci = (f"95% CI [{a.low:.3f}, {a.high:.3f}] ({a.n_boot} bootstrap resamples of the items)"
              if a.low is not None and a.high is not None
              else f"no interval below {MIN_CONVERSATIONS} shared items")
        lines.append(f"{head}: Krippendorff's alpha {_num(a.alpha_interval)} (interval), "
                     f"{_num(a.alpha_ordinal)} (ordinal); {ci}")
    return "\n".join(lines)


def _num(x: float) -> str:
    return "nan (no variation)" if not math.isfinite(x) else f"{x:.3f}"
