"""From saved per-item rows to ``summary.json``: correlations with p-values and CIs, seed means,
DSTC10 averages, system-level correlations, paired comparisons and the human-agreement ceiling."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Any

from ..data.qualities import oriented
from ..data.reference_copy import reference_copy
from ..datasets.split import conversation_of
from ..engine.kinds import method_kinds
from ..records.grouping import conversation
from ..records.rows import Row
from ..records.summary import SCHEMA, CellStats, Corr, Interval, Result, Stats, Summary, WithoutCopies
from ..stats import correlation as stats
from ..stats.agreement import krippendorff_alpha
from .config import Experiment
from .timing import CellTiming, method_timing


def _f(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else round(float(x), 6)


def _corr(c: stats.Correlation, p_shown: bool = True) -> Corr:
    """A correlation as summary.json holds it (no p when ``p_shown`` is false: below the floor)."""
    p = None if c.p_value is None or not math.isfinite(c.p_value) or not p_shown else float(f"{c.p_value:.6g}")
    return Corr(_f(c.value), p, c.n)


def cell_stats(rows: Sequence[Row], n_boot: int, seed: int) -> Stats:
    """Correlations of one cell's scores with the human means, plus its bootstrap CI (resampling
    conversations) and failures."""
    pred = [r.score for r in rows]
    human = [r.human for r in rows]
    ci = stats.bootstrap_ci(pred, human, "spearman", n_boot=n_boot, seed=seed, groups=row_groups(rows))
    # Below the floor on conversations no p either, the items' own and the systems' included (judge.stats.floor).
    corr = {m: _corr(c, not ci.too_few) for m, c in stats.correlations(pred, human).items()}
    systems = [r.system for r in rows]
    return Stats(
        corr["spearman"], corr["pearson"], corr["kendall"], _interval(ci), n_items=len(rows),
        n_failed=sum(1 for r in rows if r.error),
        # Scores read from sampled answers, or from a top-N list that may miss label spellings: reports mark them.
        n_estimated=sum(1 for r in rows if r.estimated),
        n_incomplete=sum(1 for r in rows if not r.complete and not r.error),
        system_spearman=_corr(stats.system_level(pred, human, systems), not ci.too_few)
        if sum(1 for s in set(systems) if s is not None) >= 3 else None)


def _interval(ci: stats.Interval) -> Interval:
    """A CI as summary.json holds it, with the bootstrap p of the same resamples (``p``; its floor is
    1/(n_boot - n_degenerate)) that the reports' significance marks read; ``too_few`` when it resampled fewer
    conversations than the floor (:mod:`judge.stats.floor`), and then no interval and no p."""
    p = None if not math.isfinite(ci.p_value) else float(f"{ci.p_value:.6g}")
    return Interval(_f(ci.low), _f(ci.high), ci.level, ci.n_boot, ci.seed, ci.unit, ci.n_units, ci.n_degenerate, p,
                    True if ci.too_few else None)


def without_copies(rows: Sequence[Row], copies: set[str], n_boot: int, seed: int) -> WithoutCopies:
    """One reference-based cell again without the items whose response is (nearly) a reference: the
    Spearman recomputed on the reduced set (its own ranks), its conversation-bootstrap CI and p, and n."""
    kept = [r for r in rows if r.id not in copies]
    pred, human = [r.score for r in kept], [r.human for r in kept]
    rho = stats.correlate(pred, human)
    ci = _interval(stats.bootstrap_ci(pred, human, "spearman", n_boot=n_boot, seed=seed, groups=row_groups(kept)))
    return WithoutCopies(_f(rho.value), rho.n, len(rows) - len(kept), ci, ci.conversations)


def row_groups(rows: Sequence[Row]) -> list[str]:
    """Each row's conversation (:func:`judge.records.grouping.conversation`); rows saved without one
    (``ctx:`` groups) stand alone."""
    return [conversation(r) for r in rows]


def human_agreement(items: Sequence[Any], quality: str) -> dict[str, Any] | None:
    """Krippendorff's alpha of the raters on these items (None when fewer than two raters per item)."""
    units = [list(it.annotations.get(quality, ())) for it in items]
    if not any(len(u) >= 2 for u in units):
        return None
    return {
        "interval": _f(krippendorff_alpha(units, "interval")),
        "ordinal": _f(krippendorff_alpha(units, "ordinal")),
        "n_units": sum(1 for u in units if len(u) >= 2),
    }


def summarise(exp: Experiment, cells: Sequence[Any], rows: dict[tuple, list[Row]],
              wall_s: float | None = None, timings: dict[tuple, CellTiming] | None = None,
              fitted: dict[tuple, dict[str, Any] | None] | None = None) -> Summary:
    """Everything the reports need, computed once from the per-item rows (and the cells' time and fit
    files)."""
    out_cells = [CellStats(c.method.name, c.dataset, c.quality.name, c.seed,
                           cell_stats(rows[c.key], exp.bootstrap, exp.seed), (fitted or {}).get(c.key))
                 for c in cells]
    # Mean +- sd over seeds per (method, set, quality).
    groups: dict[tuple[str, str, str], list[CellStats]] = {}
    for c in out_cells:
        groups.setdefault((c.method, c.dataset, c.quality), []).append(c)
    results = [_result(key, cs) for key, cs in groups.items()]
    negative = negative_qualities(exp)
    # DSTC10 averaging per method: per (set, quality) -> mean within set -> mean across sets.
    averages: dict[str, dict[str, Any]] = {}
    for m in dict.fromkeys(r.method for r in results):
        # A negative quality's correlation enters the averages sign-flipped (judge.data.qualities.oriented).
        per_q = {(r.dataset, r.quality): (oriented(r.spearman, (r.dataset, r.quality) in negative)
                                          if r.spearman is not None else float("nan"))
                 for r in results if r.method == m}
        # How many parts each average covers: one over fewer sets (or qualities) than it should is marked.
        averages[m] = _average(per_q, len(exp.datasets), per_set_n={
            ds: [sum(1 for (d, _), r in per_q.items() if d == ds and math.isfinite(r)),
                 sum(1 for d, _ in per_q if d == ds)] for ds in dict.fromkeys(d for d, _ in per_q)})
    first = _first_seeds(cells)
    # Each scored item's conversation as every set names it (a content fingerprint): sets that rate the same
    # conversations (FED-Turn and FED-Dial, the DailyDialog sets) are resampled together in the averages' CIs.
    shared = {(c.dataset, it.id): conversation_of(it) for c in cells for it in c.items}
    if len(exp.datasets) > 1:
        for m, avg in averages.items():
            parts = _parts(first, rows, m, shared, negative)
            avg["ci"] = _interval(stats.average_ci(parts, n_boot=exp.bootstrap, seed=exp.seed)).to_dict()
            together = stats.resampled_together(parts)
            if together:  # said where the average is printed; absent, every set is resampled on its own
                avg["resampled_together"] = together
    kinds = {m.name: method_kinds(m) for m in exp.methods}
    results = _add_without_copies(exp, cells, rows, first, results, averages,
                                  {m for m, k in kinds.items() if k.reference_based}, shared)
    rated: dict[tuple[str, str], Sequence[Any]] = {}  # each (set, quality)'s items, its first cell's
    for c in cells:
        rated.setdefault((c.dataset, c.quality.name), c.items)
    ceiling: dict[str, dict[str, Any]] = {}
    for (ds, q), items in rated.items():
        if (agree := human_agreement(items, q)) is not None:
            ceiling.setdefault(ds, {})[q] = agree
    return Summary(
        schema=SCHEMA,
        experiment={
            "name": exp.name, "description": exp.description, "config": exp.path, "data_dir": exp.data_dir,
            "limit": exp.limit, "limit_seed": exp.limit_seed, "bootstrap": exp.bootstrap, "seed": exp.seed,
            **exp.split_info(),
            # k-shot methods without a pool file of their own draw examples from here (never the test half).
            "example_pool": exp.example_pool(),
        },
        # Each method's kind (reference-free / reference-based, uses-future), from what it declares it reads.
        methods={m.name: {**m.describe(), **kinds[m.name].to_dict()} for m in exp.methods},
        datasets=tuple({"name": d.name, "abbrev": d.dataset.abbrev, "level": d.dataset.level,
                        "qualities": list(d.qualities), **_file_dataset(d),
                        **({"negative": neg} if (neg := [q for q in d.qualities if (d.name, q) in negative]) else {})}
                       for d in exp.datasets),
        cells=tuple(out_cells), results=tuple(results), averages=averages,
        comparisons=tuple(_comparisons(exp, first, rows)),
        average_comparisons=tuple(_average_comparisons(exp, first, rows, shared) if len(exp.datasets) > 1 else ()),
        ceiling=ceiling, timing=_timing(cells, timings or {}), wall_s=None if wall_s is None else round(wall_s, 1))


def _result(key: tuple[str, str, str], cells: Sequence[CellStats]) -> Result:
    """One (method, set, quality) over its seeds' cells: the mean and sd of Spearman over seeds; the p-value,
    CI and other figures are those of a single run, the first seed's."""
    mean, sd = stats.mean_sd([v for x in cells if (v := x.stats.spearman.value) is not None])
    one = cells[0].stats
    return Result(
        *key, seeds=tuple(x.seed for x in cells), spearman=_f(mean), sd=_f(sd) if len(cells) > 1 else None,
        p=one.spearman.p, ci=one.ci, n=one.spearman.n,
        # The significance the reports mark: the conversation bootstrap's, as the CI's.
        p_boot=one.ci.p, n_conversations=one.ci.conversations, pearson=one.pearson, kendall=one.kendall,
        system_spearman=one.system_spearman, n_failed=sum(x.stats.n_failed for x in cells),
        n_estimated=sum(x.stats.n_estimated for x in cells), n_incomplete=sum(x.stats.n_incomplete for x in cells))


def _file_dataset(d: Any) -> dict[str, Any]:
    """A set given as a file: its path and its qualities' scales (which ``--scale`` or the config may have
    set), so that the set can be read again as the run read it (``judge view``)."""
    if d.source is None:
        return {}
    scales = {q.name: [q.min, q.max] for q in d.dataset.qualities if q.has_scale}
    return {"path": str(d.source.path), "scales": scales}


def _add_without_copies(exp: Experiment, cells: Sequence[Any], rows: dict[tuple, list[Row]],
                        first: dict[tuple[str, str, str], tuple], results: list[Result],
                        averages: dict[str, dict[str, Any]], reference_based: set[str], shared: Shared
                        ) -> list[Result]:
    """Every reference-based result again without the items whose response is (nearly) one of its
    references (``without_copies``), and its DSTC10 average on those reduced sets: the part of a
    reference-based figure that does not come from scoring the reference itself."""
    copies: dict[str, set[str]] = {}
    for c in cells:
        copies.setdefault(c.dataset, set()).update(it.id for it in c.items if reference_copy(it))
    results = [replace(r, without_copies=without_copies(rows[key], copies.get(r.dataset, set()), exp.bootstrap,
                                                         exp.seed))
               if r.method in reference_based and (key := first.get((r.method, r.dataset, r.quality))) is not None
               else r for r in results]
    for m in reference_based:
        mine = [(r, r.without_copies) for r in results if r.method == m and r.without_copies is not None]
        if not mine or m not in averages:
            continue
        per_q = {(r.dataset, r.quality): (v if (v := w.spearman) is not None else float("nan")) for r, w in mine}
        # Coverage as the full average counts it (sets it could not score count too).
        avg = _average(per_q, len(exp.datasets), n_left_out=sum(w.n_left_out for _, w in mine))
        if len(exp.datasets) > 1:
            kept = {key: [x for x in rows[key] if x.id not in copies.get(ds, set())]
                    for (mm, ds, _q), key in first.items() if mm == m}
            parts = _parts(first, kept, m, shared)
            avg["ci"] = _interval(stats.average_ci(parts, n_boot=exp.bootstrap, seed=exp.seed)).to_dict()
        averages[m]["without_copies"] = avg
    return results


def _average(per_q: dict[tuple[str, str], float], n_sets: int, **more: Any) -> dict[str, Any]:
    """The DSTC10 average of per-(set, quality) correlations: per set, overall, ``more`` and how many of the
    ``n_sets`` sets it covers (``overall_n``)."""
    per_set, overall = stats.dstc10_average(per_q)
    return {"per_set": {k: _f(v) for k, v in per_set.items()}, "overall": _f(overall), **more,
            "overall_n": [sum(1 for v in per_set.values() if math.isfinite(v)), n_sets]}


def _timing(cells: Sequence[Any], timings: dict[tuple, CellTiming]) -> dict[str, Any]:
    """Per method: the compute time, model loads, cache use and peak memory its cells recorded."""
    out = {}
    for m in dict.fromkeys(c.method.name for c in cells):
        t = method_timing(timings[c.key] for c in cells if c.method.name == m and c.key in timings)
        if t is not None:
            out[m] = t
    return out


def _first_seeds(cells: Sequence[Any]) -> dict[tuple[str, str, str], tuple]:
    """(method, set, quality) -> the key of its first seed's cell: tests and average CIs use that run."""
    first: dict[tuple[str, str, str], tuple] = {}
    for c in cells:
        first.setdefault((c.method.name, c.dataset, c.quality.name), c.key)
    return first


def _paired_rows(rows_a: Sequence[Row], rows_b: Sequence[Row]
                 ) -> tuple[list[Any], list[Any], list[Any], list[str], list[Row]]:
    """A's and B's scores, the human means and the groups on the items both cells hold, in A's order, and
    A's rows of those items."""
    ra = {r.id: r for r in rows_a}
    rb = {r.id: r for r in rows_b}
    ids = [i for i in ra if i in rb]
    return ([ra[i].score for i in ids], [rb[i].score for i in ids], [ra[i].human for i in ids],
            row_groups([ra[i] for i in ids]), [ra[i] for i in ids])


#: (set, item id) -> the item's conversation as every set names it (``conversation_of``).
Shared = dict[tuple[str, str], str]


def _shared(shared: Shared, dataset: str, rows: Sequence[Row]) -> list[str]:
    """The rows' conversations across sets (rows of an item the run did not plan stand alone)."""
    return [shared.get((dataset, r.id), f"{dataset}:id:{r.id}") for r in rows]


def negative_qualities(exp: Experiment) -> set[tuple[str, str]]:
    """The (set, quality) pairs of the experiment whose quality is negative (higher ratings are worse)."""
    return {(d.name, q) for d in exp.datasets for q in d.qualities if d.dataset.quality(q).negative}


def _parts(first: dict[tuple[str, str, str], tuple], rows: dict[tuple, list[Row]], method: str,
           shared: Shared, negative: Collection[tuple[str, str]] = ()) -> list[stats.AveragePart]:
    """One method's (set, quality) parts for the CI of its DSTC10 average (a negative quality's human ratings
    negated, as its correlation enters the average sign-flipped)."""
    return [stats.AveragePart(ds, ([r.score for r in rows[key]],),
                              [None if r.human is None else (-r.human if (ds, q) in negative else r.human)
                               for r in rows[key]],
                              row_groups(rows[key]), _shared(shared, ds, rows[key]))
            for (m, ds, q), key in first.items() if m == method]


def _average_comparisons(exp: Experiment, first: dict[tuple[str, str, str], tuple],
                         rows: dict[tuple, list[Row]], shared: Shared) -> list[dict[str, Any]]:
    """Each configured pair on the DSTC10 average over the (set, quality) parts both methods have."""
    out = []
    for a, b in exp.compare:
        parts = []
        for (m, ds, q), key_a in first.items():
            if m == a and (b, ds, q) in first:
                pa, pb, h, g, both = _paired_rows(rows[key_a], rows[first[(b, ds, q)]])
                parts.append(stats.AveragePart(ds, (pa, pb), h, g, _shared(shared, ds, both)))
        if not parts:
            continue
        t = stats.paired_average(parts, n_boot=exp.bootstrap, seed=exp.seed)
        together = stats.resampled_together(parts)
        out.append({"a": a, "b": b, "n_sets": len({p.dataset for p in parts}), **_paired(t),
                    **({"resampled_together": together} if together else {})})
    return out


def _comparisons(exp: Experiment, first: dict[tuple[str, str, str], tuple],
                 rows: dict[tuple, list[Row]]) -> list[dict]:
    """Paired bootstrap (and Williams' test) for each configured pair, per (set, quality), first seeds."""
    return [{"a": a, "b": b, "dataset": ds, "quality": q,
             **paired_comparison(rows[key_a], rows[first[(b, ds, q)]], exp.bootstrap, exp.seed)}
            for a, b in exp.compare for (m, ds, q), key_a in first.items() if m == a and (b, ds, q) in first]


def paired_comparison(rows_a: Sequence[Row], rows_b: Sequence[Row], n_boot: int, seed: int
                      ) -> dict[str, Any]:
    """Two cells' Spearman on the items both hold (in A's order), their difference A - B with its paired
    bootstrap CI and p (resampling conversations) and Williams' test: one configured comparison of
    ``summary.json``, and what ``judge view`` shows for two cells side by side."""
    pa, pb, h, groups, _ = _paired_rows(rows_a, rows_b)
    t = stats.paired_bootstrap(pa, pb, h, "spearman", n_boot=n_boot, seed=seed, groups=groups)
    keep = [(x, y) for x, y in zip(pa, pb) if x is not None and y is not None]
    r_ab = stats.correlate([x for x, _ in keep], [y for _, y in keep]).value if keep else float("nan")
    # Below the floor on conversations Williams' item-level test is left out too: no p from so few.
    w_t, w_p = (stats.williams_test(t.r_a, t.r_b, r_ab, t.n)
                if not t.too_few and all(map(math.isfinite, (t.r_a, t.r_b, r_ab))) else (float("nan"), float("nan")))
    return _paired(t, williams_t=_f(w_t), williams_p=_f(w_p))


def _paired(t: stats.PairedTest, **after_p: float | None) -> dict[str, Any]:
    """A paired test as summary.json holds it (``after_p``: further figures, written after its p)."""
    return {"n": t.n, "r_a": _f(t.r_a), "r_b": _f(t.r_b), "diff": _f(t.diff), "low": _f(t.low), "high": _f(t.high),
            "p": _f(t.p_value), **after_p, "n_boot": t.n_boot, "unit": t.unit, "n_units": t.n_units,
            "n_degenerate": t.n_degenerate, **({"too_few": True} if t.too_few else {})}
