"""Statistics of pairwise judgements, with conversations as the unit every interval resamples.

:func:`summarise_pairs` turns the pair rows of a pairwise judge (:mod:`judge.engine.compare`) and, when given,
a pointwise method's rows on the same items into the figures docs/pairwise.md lists ("The statistics"): win
rates, a Bradley-Terry ranking (a pseudo-count of :data:`BT_PRIOR` wins each way per compared pair of systems
keeps every strength finite), position consistency and bias, agreement with the humans beside the pointwise
method's, length bias, system-level Kendall tau and, where a set labels its pairs (PandaLM, LLMBar), accuracy
against the label with the human-human ceiling (:mod:`judge.stats.pair_labels`). Every bootstrap draws whole conversations (the rows'
``group``), the same seeded draws for every figure of one summary; a figure from fewer conversations than the
floor (:mod:`judge.stats.floor`) gets no interval and no p (``too_few``). :func:`mean_over_sets` gives the mean
of a figure over several sets its interval from a joint bootstrap of all their conversations.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from .correlation import boot_samples, percentiles, scipy_stats, stratified_samples, two_sided_p
from .floor import has_interval
from .pair_labels import LabelledOrder, LabelledRow, label_figures

#: Half a win each way per compared pair of systems (see the module docstring).
BT_PRIOR = 0.5
#: Confidence level of every interval.
LEVEL = 0.95


class PairOrder(LabelledOrder, Protocol):
    """What the statistics read of one order a pair was read in."""

    @property
    def order(self) -> str: ...
    @property
    def p_a(self) -> float | None: ...


class PairRow(LabelledRow, Protocol):
    """What the statistics read of a pair row (:class:`judge.records.pair_rows.PairRow`, which sits above
    them): its systems, items, context and group, the judge's preference and verdict, how its orders read,
    the replies' lengths and ratings, and whether it failed."""

    @property
    def system_a(self) -> str: ...
    @property
    def system_b(self) -> str: ...
    @property
    def item_a(self) -> str: ...
    @property
    def item_b(self) -> str: ...
    @property
    def context(self) -> str: ...
    @property
    def group(self) -> str: ...
    @property
    def human_a(self) -> float | None: ...
    @property
    def human_b(self) -> float | None: ...
    @property
    def preference(self) -> float | None: ...
    @property
    def orders(self) -> Sequence[PairOrder]: ...
    @property
    def length_a(self) -> int: ...
    @property
    def length_b(self) -> int: ...
    @property
    def estimated(self) -> bool: ...
    @property
    def complete(self) -> bool: ...
    @property
    def error(self) -> str | None: ...


def _f(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else round(float(x), 6)


def _num(x: float | None) -> float:
    """A row's figure as a number (NaN where the row holds none: a failed pair, an order that read nothing)."""
    return math.nan if x is None else x


def _p(x: float) -> float | None:
    return None if not math.isfinite(x) else float(f"{x:.6g}")


def outcome(row: PairRow) -> float:
    """System a's result in a pair: 1 a win, 0.5 a tie, 0 a loss (the verdict, ``winner``)."""
    return {"a": 1.0, "b": 0.0}.get(str(row.winner), 0.5)


def side(x: float) -> float:
    """Agreement credit of a signed difference: 1 above zero, 0 below, half at zero."""
    return 1.0 if x > 0 else 0.0 if x < 0 else 0.5


class _Boot:
    """The bootstrap resamples of one summary: rows drawn by whole conversations."""

    def __init__(self, groups: Sequence[str], n_boot: int, seed: int) -> None:
        self.n_boot, self.seed = n_boot, seed
        index: dict[str, int] = {}
        self.codes = np.array([index.setdefault(g, len(index)) for g in groups], dtype=np.intp)
        self.n_units = len(index)
        self.samples = boot_samples(len(groups), list(groups), n_boot, seed) if has_interval(self.n_units) else []

    def conversations(self, mask: np.ndarray) -> int:
        """How many conversations the rows in ``mask`` come from."""
        return len(np.unique(self.codes[mask]))

    def interval(self, values: np.ndarray, point: float, null: float | None = None,
                 k: int | None = None) -> dict[str, Any]:
        """The point value, its percentile CI over the resampled ``values`` (NaN ones left out and counted)
        and, with ``null``, the two-sided bootstrap p of "equal to ``null``". ``k``: the conversations the
        figure's rows come from (default: all); below the floor no CI and no p, and ``too_few``."""
        k = self.n_units if k is None else k
        out: dict[str, Any] = {"value": _f(point), "low": None, "high": None, **({} if null is None else {"p": None})}
        if not has_interval(k):
            return {**out, "n_degenerate": 0, "n_conversations": k, "too_few": True}
        low, high, p, n_degenerate = _percentile_test(values, 0.0 if null is None else null)
        out.update(low=low, high=high, **({} if null is None else {"p": p}))
        return {**out, "n_degenerate": n_degenerate, "n_conversations": k}

    def mean(self, x: np.ndarray, mask: np.ndarray, null: float | None = None) -> dict[str, Any]:
        """The mean of ``x`` over the rows in ``mask``, with its interval (see :meth:`interval`) and n."""
        point = _masked_mean(x, mask)
        reps = np.array([_masked_mean(x[s], mask[s]) for s in self.samples]) if mask.any() else np.array([])
        return {**self.interval(reps, point, null, self.conversations(mask)), "n": int(mask.sum())}

    def describe(self) -> dict[str, Any]:
        return {"n_boot": self.n_boot, "seed": self.seed, "unit": "group", "n_units": self.n_units, "level": LEVEL}


def _percentile_test(values: np.ndarray, null: float) -> tuple[float | None, float | None, float | None, int]:
    """The percentile CI over the defined resampled ``values``, the two-sided p of "equal to ``null``", and
    how many resamples were undefined (left out, and counted)."""
    finite = values[np.isfinite(values)]
    if not len(finite):
        return None, None, None, len(values)
    lo, hi = percentiles(finite, LEVEL)
    return _f(lo), _f(hi), _p(two_sided_p(finite - null)), int(len(values) - len(finite))


def _masked_mean(x: np.ndarray, mask: np.ndarray) -> float:
    return float(x[mask].mean()) if mask.any() else float("nan")


#: A pointwise method's scores of the compared replies, by (system, item id) (None: the item failed).
PointScores = Mapping[tuple[str, str], float | None]


def summarise_pairs(rows: Sequence[PairRow], *, pointwise: PointScores | None = None,
                    pointwise_name: str | None = None, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Every figure of the module docstring from pair rows (failed pairs counted, left out of the figures).
    ``pointwise``: a pointwise method's scores of the pairs' replies (:func:`judge.engine.compare.point_scores`)."""
    ok = [r for r in rows if r.error is None and r.preference is not None]
    systems = list(dict.fromkeys(s for r in ok for s in (r.system_a, r.system_b)))
    boot = _Boot([r.group for r in ok], n_boot, seed)
    out: dict[str, Any] = {"n_pairs": len(rows), "n_failed": len(rows) - len(ok),
                           "n_estimated": sum(1 for r in ok if r.estimated),
                           "n_incomplete": sum(1 for r in ok if not r.complete),
                           "n_contexts": len({r.context for r in ok}), "n_conversations": boot.n_units,
                           "systems": systems, "orders": _orders(ok), "bootstrap": boot.describe()}
    if not ok:
        return {**out, "win_rates": [], "ranking": [], "position": None, "humans": None, "length": None,
                "system_level": None, "labels": None}
    strengths = _bt_fit(ok, systems, boot)
    return {**out, "win_rates": _win_rates(ok, systems, boot), "ranking": strengths, "position": _position(ok, boot),
            "humans": _humans(ok, boot, pointwise, pointwise_name), "length": _length(ok, boot),
            "system_level": _system_level(ok, strengths, pointwise, pointwise_name, boot.n_units),
            "labels": label_figures(ok, boot)}


def _orders(rows: Sequence[PairRow]) -> str:
    counts = {len(r.orders) for r in rows}
    return "both" if counts == {2} else "one" if counts == {1} else "mixed"


def _win_rates(rows: Sequence[PairRow], systems: list[str], boot: _Boot) -> list[dict[str, Any]]:
    """Per two systems compared (the earlier of ``systems`` first): wins, ties, losses and the win rate of
    the first, a tie counting half, with CI and p against 0.5."""
    rank = {s: i for i, s in enumerate(systems)}
    keys: dict[tuple[str, str], int] = {}
    code = np.empty(len(rows), dtype=np.intp)
    score = np.empty(len(rows))
    for i, r in enumerate(rows):
        a, b, o = r.system_a, r.system_b, outcome(r)
        if rank[a] > rank[b]:
            a, b, o = b, a, 1.0 - o
        code[i] = keys.setdefault((a, b), len(keys))
        score[i] = o
    m = len(keys)
    points = np.bincount(code, score, m) / np.bincount(code, minlength=m)
    reps = np.full((len(boot.samples), m), np.nan)
    for j, s in enumerate(boot.samples):
        counts = np.bincount(code[s], minlength=m)
        with np.errstate(invalid="ignore", divide="ignore"):
            reps[j] = np.bincount(code[s], score[s], m) / counts
    out = []
    for (a, b), k in sorted(keys.items(), key=lambda kv: (rank[kv[0][0]], rank[kv[0][1]])):
        mine = score[code == k]
        out.append({"a": a, "b": b, "n": len(mine), "wins": int((mine == 1).sum()), "ties": int((mine == 0.5).sum()),
                    "losses": int((mine == 0).sum()),
                    **boot.interval(reps[:, k] if len(reps) else np.array([]), float(points[k]), 0.5,
                                    boot.conversations(code == k))})
    return out


def bradley_terry(first: np.ndarray, second: np.ndarray, score: np.ndarray, k: int,
                  prior: float = BT_PRIOR) -> np.ndarray:
    """Bradley-Terry log-strengths (centred) of ``k`` systems from comparisons (system ``first[i]`` against
    ``second[i]``, scoring ``score[i]``: 1, 0.5 or 0), the maximum-likelihood fit with ``prior`` wins each way
    added to every pair of systems compared, by Newton's method (the log-likelihood is concave; a few steps
    reach its maximum). A system in no comparison gets NaN."""
    wins = np.zeros((k, k))
    np.add.at(wins, (first, second), score)
    np.add.at(wins, (second, first), 1.0 - score)
    games = wins + wins.T
    compared = games > 0
    wins = wins + prior * compared
    games = games + 2 * prior * compared
    seen = np.flatnonzero(compared.any(axis=1))
    w, n = wins[np.ix_(seen, seen)], games[np.ix_(seen, seen)]
    b = np.zeros(len(seen))
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(b[:, None] - b[None, :])))
        grad = (w - n * p).sum(axis=1)
        c = n * p * (1 - p)
        hess = np.diag(c.sum(axis=1)) - c  # the negative Hessian: a graph Laplacian, singular along the mean
        step = np.linalg.lstsq(hess, grad, rcond=None)[0]
        b = b + step - (b + step).mean()
        if np.max(np.abs(step)) < 1e-10:
            break
    out = np.full(k, np.nan)
    out[seen] = b
    return out


def _bt_fit(rows: Sequence[PairRow], systems: list[str], boot: _Boot) -> list[dict[str, Any]]:
    """Every system's Bradley-Terry strength with its CI, ranked (strongest first)."""
    index = {s: i for i, s in enumerate(systems)}
    first = np.array([index[r.system_a] for r in rows], dtype=np.intp)
    second = np.array([index[r.system_b] for r in rows], dtype=np.intp)
    score = np.array([outcome(r) for r in rows])
    k = len(systems)
    point = bradley_terry(first, second, score, k)
    reps = np.array([bradley_terry(first[s], second[s], score[s], k) for s in boot.samples]).reshape(-1, k)
    n = np.bincount(first, minlength=k) + np.bincount(second, minlength=k)
    order = sorted(range(k), key=lambda i: (-point[i], systems[i]))
    met = [boot.conversations((first == i) | (second == i)) for i in range(k)]
    return [{"rank": r + 1, "system": systems[i], "comparisons": int(n[i]),
             **boot.interval(reps[:, i], float(point[i]), k=met[i])} for r, i in enumerate(order)]


def _position(rows: Sequence[PairRow], boot: _Boot) -> dict[str, Any]:
    """Consistency (both orders agree) over the pairs read in both orders, and the bias toward the reply
    shown first over every pair: mean p(first better) - 0.5, with CI and p against 0."""
    both = np.array([len(r.orders) == 2 for r in rows])
    agree = np.array([bool(r.consistent) for r in rows], dtype=float)
    bias = np.array([_first_bias(r) for r in rows])
    return {"consistency": boot.mean(agree, both) if both.any() else None,
            "bias": boot.mean(bias, np.ones(len(rows), dtype=bool), 0.0)}


def _first_bias(row: PairRow) -> float:
    """How far the reply shown first is preferred in this pair: mean over its orders of p(first) - 0.5."""
    firsts = [_num(o.p_a) if o.order == "ab" else 1.0 - _num(o.p_a) for o in row.orders]
    return math.fsum(firsts) / len(firsts) - 0.5


def _humans(rows: Sequence[PairRow], boot: _Boot, pointwise: PointScores | None,
            name: str | None) -> dict[str, Any] | None:
    """Agreement with the human preference on the pairs whose human means differ, the judge's beside the
    pointwise method's on the same pairs, and their paired difference."""
    cols = human_columns(rows, pointwise)
    if not cols["rated"].any():
        return None
    h = cols["human"]
    out: dict[str, Any] = {"n_pairs": int(cols["rated"].sum()), "n_tied_humans": int((np.isfinite(h) & (h == 0)).sum()),
                           "judge": boot.mean(cols["judge"], cols["rated"], 0.5)}
    if pointwise is None:
        return out
    out["pointwise"] = {"method": name, **boot.mean(cols["pointwise"], cols["both"], 0.5)}
    out["judge_same_pairs"] = boot.mean(cols["judge"], cols["both"], 0.5)
    out["difference"] = boot.mean(cols["difference"], cols["both"], 0.0)
    return out


def human_columns(rows: Sequence[PairRow], pointwise: PointScores | None) -> dict[str, np.ndarray]:
    """Per pair row: the human difference (a - b), whether it is rated (means differ), the judge's agreement
    credit, and with ``pointwise`` its credit, where both are defined (``both``) and the judge's minus it."""
    h = np.array([_diff(r.human_a, r.human_b) for r in rows])
    rated = np.isfinite(h) & (h != 0)
    judge = np.array([side((_num(r.preference) - 0.5) * hv) if np.isfinite(hv) else np.nan for r, hv in zip(rows, h)])
    out = {"human": h, "rated": rated, "judge": judge}
    if pointwise is not None:
        diffs = np.array([_diff(pointwise.get((r.system_a, r.item_a)), pointwise.get((r.system_b, r.item_b)))
                          for r in rows])
        point = np.array([side(d * hv) if np.isfinite(d) and np.isfinite(hv) else np.nan for d, hv in zip(diffs, h)])
        both = rated & np.isfinite(point)
        out.update(pointwise=point, both=both, difference=np.where(both, judge - point, np.nan))
    return out


def _diff(a: Any, b: Any) -> float:
    return float(a) - float(b) if a is not None and b is not None else float("nan")


def _length(rows: Sequence[PairRow], boot: _Boot) -> dict[str, Any]:
    """The share of pairs where the longer reply wins: the judge's preference (replies of different
    lengths), and the humans' (means that differ too)."""
    d = np.array([float(r.length_a - r.length_b) for r in rows])
    longer = d != 0
    judge = np.array([side((_num(r.preference) - 0.5) * dv) for r, dv in zip(rows, d)])
    h = np.array([_diff(r.human_a, r.human_b) for r in rows])
    rated = longer & np.isfinite(h) & (h != 0)
    humans = np.where(rated, np.sign(h * d) > 0, np.nan).astype(float)
    return {"judge": boot.mean(judge, longer, 0.5), "humans": boot.mean(humans, rated, 0.5) if rated.any() else None}


def _system_level(rows: Sequence[PairRow], ranking: Sequence[Mapping[str, Any]],
                  pointwise: PointScores | None, name: str | None, n_conversations: int) -> dict[str, Any] | None:
    """Kendall's tau of the Bradley-Terry strengths (and the pointwise method's mean scores) with the
    systems' mean human ratings, over the distinct items compared; None under three rated systems. Its p
    treats the systems as independent; their ratings come from ``n_conversations`` conversations, and
    below the floor there is no p (``too_few``)."""
    ratings: dict[str, dict[str, float]] = {}
    for r in rows:
        for s, item, h in ((r.system_a, r.item_a, r.human_a), (r.system_b, r.item_b, r.human_b)):
            if h is not None:
                ratings.setdefault(s, {})[item] = float(h)
    strength = {x["system"]: x["value"] for x in ranking if x["value"] is not None}
    names = [s for s in strength if s in ratings]
    if len(names) < 3:
        return None
    human = [math.fsum(ratings[s].values()) / len(ratings[s]) for s in names]
    tau = scipy_stats().kendalltau([strength[s] for s in names], human)
    few = not has_interval(n_conversations)
    out: dict[str, Any] = {"n_systems": len(names), "kendall": _f(float(tau.statistic)),
                           "p": None if few else _p(float(tau.pvalue)), "n_conversations": n_conversations,
                           "human_means": {s: _f(h) for s, h in zip(names, human)}, **({"too_few": True} if few else {})}
    if pointwise is not None:
        means = []
        for s in names:
            scores = [v for item in ratings[s] if (v := pointwise.get((s, item))) is not None]
            means.append(math.fsum(scores) / len(scores) if scores else float("nan"))
        if all(math.isfinite(m) for m in means):
            pt = scipy_stats().kendalltau(means, human)
            out["pointwise"] = {"method": name, "kendall": _f(float(pt.statistic)),
                                "p": None if few else _p(float(pt.pvalue))}
    return out


def pairwise_entry(rows: Sequence[PairRow], *, name: str, dataset: str, abbrev: str | None,
                   quality: str | None, method_name: str, spec: Mapping[str, Any], settings: str,
                   kind: Mapping[str, Any], pointwise: PointScores | None = None,
                   pointwise_name: str | None = None, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """One entry of ``summary["pairwise"]`` (what the reports and ``judge compare`` print): where the pairs
    came from, the method that compared them, and :func:`summarise_pairs` of its rows."""
    return {"name": name, "dataset": dataset, "abbrev": abbrev, "quality": quality, "method_name": method_name,
            "spec": dict(spec), "settings": settings, "kind": dict(kind), "against": pointwise_name,
            **summarise_pairs(rows, pointwise=pointwise, pointwise_name=pointwise_name, n_boot=n_boot, seed=seed)}


#: The figures :func:`mean_over_sets` averages: (key, the rows it is taken on, the chance value p tests).
_MEAN_FIGURES = (("judge", "rated", 0.5), ("pointwise", "both", 0.5), ("difference", "both", 0.0))


def mean_over_sets(sets: Sequence[tuple[Sequence[PairRow], PointScores | None]], *, n_boot: int = 1000,
                   seed: int = 0) -> dict[str, Any]:
    """The mean over sets of the agreement with the humans (the judge's, the pointwise method's on the same
    pairs, and their difference), each set's figure weighted alike, with its interval from a joint bootstrap:
    every replicate resamples each set's conversations within the set (:func:`judge.stats.correlation.stratified_samples`),
    all sets in the same replicate, and averages the per-set figures, as the point value does. ``sets``: per
    set its pair rows and the pointwise scores (None: none). No interval and no p when the sets' conversations
    together give fewer distinct resamples than the floor allows (:func:`judge.stats.floor.has_interval`)."""
    kept = [([r for r in rows if r.error is None and r.preference is not None], point)
            for rows, point in sets]
    cols = [human_columns(rows, point) for rows, point in kept]
    groups = [[r.group for r in rows] for rows, _ in kept]
    samples, _ = stratified_samples([(i, len(g), g, None) for i, g in enumerate(groups)], n_boot, seed)
    out: dict[str, Any] = {"n_sets": len(kept), "n_pairs": sum(int(c["rated"].sum()) for c in cols),
                           "bootstrap": {"n_boot": n_boot, "seed": seed, "unit": "group", "level": LEVEL}}
    for key, where, null in _MEAN_FIGURES:
        if not all(key in c for c in cols):
            continue
        out[key] = _mean_figure([(c[key], c[where], np.array(g)) for c, g in zip(cols, groups)], samples, null)
    return out


def _mean_figure(parts: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], samples: Sequence[Sequence[np.ndarray]],
                 null: float) -> dict[str, Any]:
    """One figure's mean over sets (``parts``: per set its values, the rows it is taken on and their groups)
    and its joint-bootstrap interval and p from ``samples`` (per set, the rows of each replicate)."""
    sizes = [len(set(g[m].tolist())) for _, m, g in parts]
    points = [_masked_mean(x, m) for x, m, _ in parts]
    out: dict[str, Any] = {"value": _f(float(np.mean(points))) if parts else None, "low": None, "high": None, "p": None,
                           "n": sum(int(m.sum()) for _, m, _ in parts), "n_conversations": sum(sizes), "n_degenerate": 0}
    if not has_interval(sizes):
        return {**out, "too_few": True, "strata": sizes}
    n_boot = len(samples[0]) if samples else 0
    reps = np.array([np.mean([_masked_mean(x[s[r]], m[s[r]]) for (x, m, _), s in zip(parts, samples)])
                     for r in range(n_boot)])
    low, high, p, out["n_degenerate"] = _percentile_test(reps, null)
    if out["value"] is not None:
        out.update(low=low, high=high, p=p)
    return out
