"""``reason_measure``: what thinking buys, from a run of ``benchmarks/configs/reason_q15_dev.toml``.

The run scores each set's items with the one-token read (``q15-criteria``) and with a 128-token rationale
first, the answer read exactly after it (``q15-criteria-reason128``). This script adds the third candidate
of the config, the same rationales with 5 sampled answers (``q15-criteria-reason128-sampled5``): for each
item, 5 draws at temperature 1 from the exact answer distribution after its rationale (Yes, No, or any
other token: an answer that cannot be read), seeded by the item's id; the distribution is the frequencies
of Yes and No, as an API without log-probabilities would give for that rationale (an item with no Yes and
no No among its draws fails). Then it prints, per set and on the 3-set average: Spearman with the human
ratings and its conversation-bootstrap 95% CI, the paired bootstrap difference against the one-token read
(conversations resampled, as ``judge run``'s comparisons), and per item the prompt and generated tokens
and the seconds of model time. The statistics are the harness's own (:mod:`judge.harness.summary`,
:mod:`judge.stats.correlation`), with the run's bootstrap settings; the script recomputes the run's own two
candidates the same way and stops if they differ from its ``summary.json``.

The table is rendered from the run collected as the results page collects every run (``judge results
collect``), with the derived candidate added in the run's own form and a ``measure`` block (tokens, seconds,
draws, rationales that open with their verdict): ``--collect NAME`` writes that summary to
``benchmarks/results/NAME.json``, and ``judge results render`` puts its table on docs/results.md
(:mod:`judge.report.reason_table`).

    JUDGE_CACHE=/tmp/reason-q15-dev/cache.sqlite judge run benchmarks/configs/reason_q15_dev.toml --data-dir ../shared/data
    python benchmarks/reason_measure.py results/reason-q15-dev --collect reason-q15-dev
    judge results render
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.harness import load_experiment
from judge.harness.summary import cell_stats, paired_comparison, row_groups
from judge.harness.timing import read_timing
from judge.records.results import cell_path
from judge.records.rows import Row, read_rows
from judge.records.summary import read_summary
from judge.report import results_page as page
from judge.report.reason_table import measure_table
from judge.stats import correlation as stats

ONE_TOKEN, REASONED, SAMPLED = "q15-criteria", "q15-criteria-reason128", "q15-criteria-reason128-sampled5"
#: Answers drawn per item, and the seed of the draws.
SAMPLES, SAMPLE_SEED = 5, 0


def sampled(row: dict[str, Any], k: int = SAMPLES, seed: int = SAMPLE_SEED) -> dict[str, Any]:
    """``row`` (an exact read after a rationale) as ``k`` answers sampled after the same rationale would
    score it: the draws' Yes/No frequencies, marked estimated; failed when no draw is Yes or No."""
    out = {**row, "estimated": True, "complete": False}
    probs = row["label_probs"] or {}
    p = np.array([probs.get("yes", 0.0), probs.get("no", 0.0)])
    if row["error"] is not None or not p.sum() > 0:
        return {**out, "score": None, "label_probs": None, "error": row["error"] or "no label probability"}
    p = np.append(p, max(0.0, 1.0 - p.sum()))  # any other token: an answer that cannot be read
    rng = np.random.default_rng([seed, int.from_bytes(hashlib.sha256(row["id"].encode()).digest()[:8], "big")])
    counts = np.bincount(rng.choice(3, size=k, p=p / p.sum()), minlength=3)
    if counts[0] + counts[1] == 0:
        return {**out, "score": None, "label_probs": None, "unparsed": int(counts[2]),
                "error": f"none of the {k} sampled answers was Yes or No"}
    return {**out, "score": counts[0] / (counts[0] + counts[1]), "unparsed": int(counts[2]),
            "label_probs": {"yes": counts[0] / k, "no": counts[1] / k}}


def answer_first(rows: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """How many rationales open with the answer itself (their first word Yes or No), and the range of the
    exact p(Yes) read after them: a rationale that states its verdict first justifies it rather than
    reasoning towards it, and leaves the read little to grade."""
    every = [r for rs in rows.values() for r in rs]
    first = [(r.get("rationale") or "").strip().split()[:1] for r in every]
    opened = sum(1 for w in first if w and w[0].strip(".,:!").lower() in ("yes", "no"))
    yes = [r["label_probs"]["yes"] for r in every if r.get("label_probs")]
    return {"opened": opened, "of": len(every), "p_yes_low": min(yes, default=math.nan),
            "p_yes_high": max(yes, default=math.nan)}


def _r(x: float) -> float | None:
    """A figure as ``summary.json`` holds it (6 decimals; None when undefined)."""
    return None if x is None or not math.isfinite(x) else round(float(x), 6)


def _interval(ci: stats.Interval) -> dict[str, Any]:
    """An average's CI in the form ``summary.json`` gives it (the harness's ``averages[m]["ci"]``)."""
    p = None if not math.isfinite(ci.p_value) else float(f"{ci.p_value:.6g}")
    return {"low": _r(ci.low), "high": _r(ci.high), "level": ci.level, "n_boot": ci.n_boot, "seed": ci.seed,
            "unit": ci.unit, "n_units": ci.n_units, "n_degenerate": ci.n_degenerate, "p": p,
            **({"too_few": True} if ci.too_few else {})}


def derived(summary: dict[str, Any], rows: dict[str, list[dict[str, Any]]], method: str, baseline: str,
            against: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """One candidate's ``summary.json`` entries computed from its rows (per set: ``rows[dataset]``) as ``judge
    run`` computes a method's: a result per set, the average over the sets with its CI, and its paired
    comparison against ``baseline`` (rows ``against``) per set and on the average."""
    n_boot, seed = summary["experiment"]["bootstrap"], summary["experiment"]["seed"]
    quality = {r["dataset"]: r["quality"] for r in summary["results"]}
    results, parts, paired, comparisons = [], [], [], []
    for ds, written in rows.items():
        mine, theirs = [Row.from_dict(r) for r in written], [Row.from_dict(r) for r in against[ds]]
        st = cell_stats(mine, n_boot, seed).to_dict()
        results.append({"method": method, "dataset": ds, "quality": quality[ds], "seeds": [0],
                        "spearman": st["spearman"]["value"], "sd": None, "p": st["spearman"]["p"], "ci": st["ci"],
                        "n": st["spearman"]["n"], "p_boot": st["ci"]["p"],
                        "n_conversations": st["ci"]["n_units"] if st["ci"]["unit"] == "group" else None,
                        **{k: st[k] for k in ("n_failed", "n_estimated", "n_incomplete")}})
        human, groups = [r.human for r in mine], row_groups(mine)
        assert [r.id for r in mine] == [r.id for r in theirs], ds
        parts.append(stats.AveragePart(ds, ([r.score for r in mine],), human, groups))
        paired.append(stats.AveragePart(ds, ([r.score for r in mine], [r.score for r in theirs]), human, groups))
        comparisons.append({"a": method, "b": baseline, "dataset": ds, "quality": quality[ds],
                            **paired_comparison(mine, theirs, n_boot, seed)})
    per_set, overall = stats.dstc10_average({(r["dataset"], r["quality"]): r["spearman"] if r["spearman"] is not None
                                             else math.nan for r in results})
    average = {"per_set": {k: _r(v) for k, v in per_set.items()}, "overall": _r(overall),
               "per_set_n": {ds: [int(math.isfinite(v)), 1] for ds, v in per_set.items()},
               "overall_n": [sum(1 for v in per_set.values() if math.isfinite(v)), len(rows)],
               "ci": _interval(stats.average_ci(parts, n_boot=n_boot, seed=seed))}
    t = stats.paired_average(paired, n_boot=n_boot, seed=seed)
    versus = {"a": method, "b": baseline, "n_sets": len(rows), "n": t.n, "r_a": _r(t.r_a), "r_b": _r(t.r_b),
              "diff": _r(t.diff), "low": _r(t.low), "high": _r(t.high), "p": _r(t.p_value), "n_boot": t.n_boot,
              "unit": t.unit, "n_units": t.n_units, "n_degenerate": t.n_degenerate,
              **({"too_few": True} if t.too_few else {})}
    return {"results": results, "average": average, "comparisons": comparisons, "average_comparison": versus}


def _check_recomputed(summary: dict[str, Any], mine: dict[str, Any], method: str) -> None:
    """The run's own candidate recomputed here equals what ``judge run`` wrote: the derived one's figures then
    come from the same statistics."""
    theirs = {r["dataset"]: (r["spearman"], r["ci"]) for r in summary["results"] if r["method"] == method}
    ours = {r["dataset"]: (r["spearman"], r["ci"]) for r in mine["results"]}
    versus = mine["average_comparison"]
    compared = [c for c in summary["average_comparisons"] if (c["a"], c["b"]) == (versus["a"], versus["b"])]
    if ours != theirs or mine["average"]["ci"] != summary["averages"][method]["ci"] or \
            any({k: c.get(k) for k in versus} != versus for c in compared):
        raise SystemExit(f"reason_measure: {method} recomputed differs from the run's summary.json")


def measured(out: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run's ``summary.json`` with the sampled candidate added in its own form, and the ``measure`` block:
    per candidate the tokens and seconds per item, failures, draws that were no answer and the sets it scored
    as a constant; and how many rationales open with their verdict."""
    summary = read_summary(out).to_dict()
    quality = {r["dataset"]: r["quality"] for r in summary["results"]}  # each set's overall quality
    sets = list(quality)
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {}
    seconds: dict[str, float] = {}
    for method in (ONE_TOKEN, REASONED):
        for ds in sets:
            path = cell_path(out, method, ds, quality[ds], 0)
            rows.setdefault(method, {})[ds] = [r.to_dict() for r in read_rows(path)]
            seconds[method] = seconds.get(method, 0.0) + read_timing(path).seconds
    rows[SAMPLED] = {ds: [sampled(r) for r in rows[REASONED][ds]] for ds in sets}
    seconds[SAMPLED] = seconds[REASONED]  # the same rationales; the draws cost nothing
    for method in (ONE_TOKEN, REASONED):
        _check_recomputed(summary, derived(summary, rows[method], method, ONE_TOKEN, rows[ONE_TOKEN]), method)
    extra = derived(summary, rows[SAMPLED], SAMPLED, ONE_TOKEN, rows[ONE_TOKEN])
    merged = {**summary,
              "methods": {**summary["methods"], SAMPLED: {**summary["methods"][REASONED],
                                                          "sampled_answers": {"from": REASONED, "answers": SAMPLES,
                                                                              "seed": SAMPLE_SEED}}},
              "results": [*summary["results"], *extra["results"]],
              "averages": {**summary["averages"], SAMPLED: extra["average"]},
              "comparisons": [*summary["comparisons"], *extra["comparisons"]],
              "average_comparisons": [*summary["average_comparisons"], extra["average_comparison"]]}
    abbrev = {d["name"]: d.get("abbrev", d["name"]) for d in summary["datasets"]}
    candidates = {}
    for method in (ONE_TOKEN, REASONED, SAMPLED):
        every = [r for ds in sets for r in rows[method][ds]]
        n = len(every)
        constant = {}
        for ds in sets:
            scores = {r["score"] for r in rows[method][ds] if r["score"] is not None}
            if len(scores) == 1:  # no correlation exists: the table says why rather than print nothing
                constant[abbrev[ds]] = scores.pop()
        candidates[method] = {
            "items": n, "prompt_tokens": _r(sum(r["n_prompt_tokens"] for r in every) / n),
            "generated_tokens": _r(sum(r.get("n_generated_tokens", 0) for r in every) / n),
            "seconds": _r(seconds[method] / n), "failed": sum(r["error"] is not None for r in every),
            **({"draws": SAMPLES * n, "unparsed": sum(r.get("unparsed", 0) for r in every)} if method == SAMPLED else {}),
            **({"constant": constant} if constant else {})}
    first = answer_first(rows[REASONED])
    block = {"script": "benchmarks/reason_measure.py", "baseline": ONE_TOKEN, "samples": SAMPLES,
             "sample_seed": SAMPLE_SEED, "candidates": candidates,
             "answer_first": {**first, "p_yes_low": _r(first["p_yes_low"]), "p_yes_high": _r(first["p_yes_high"])}}
    return merged, block


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="the run's folder (judge run ... -o FOLDER)")
    ap.add_argument("--collect", metavar="NAME", default=None, help="write the run with the derived candidate to "
                    "benchmarks/results/NAME.json, as 'judge results collect' writes a run (then: judge results render)")
    ap.add_argument("--root", default=str(ROOT), help="repository root (default: this script's)")
    args = ap.parse_args()
    out, root = Path(args.results), Path(args.root)
    name = args.collect or read_summary(out).experiment["name"]
    merged, block = measured(out)
    # The command of the run itself (the derived candidate is not the config's: it is this script's). A run that
    # overrode the backend (the mock, in tests) has none, and is never written.
    run = read_summary(out).to_dict()
    command = (page.regenerate_command(run, name, load_experiment) if args.collect
               else f"judge run {run['experiment']['config']}")
    collected = page.collect(out, name, load_config=load_experiment, root=root, command=command,
                             allow_mock=args.collect is None, summary=merged)
    collected["measure"] = {**block, "command": f"python benchmarks/reason_measure.py results/{name} --collect {name}"}
    if args.collect:
        print(page.write_summary(collected, root / page.SUMMARY_DIR))
    print(f"reason_measure: run {merged['experiment']['name']} ({out}), sets "
          + ", ".join(f"{d['name']} ({', '.join(d['qualities'])})" for d in merged["datasets"])
          + f"; bootstrap {merged['experiment']['bootstrap']} resamples, seed {merged['experiment']['seed']}; "
          f"sampled answers: {SAMPLES} per item, seed {SAMPLE_SEED}\n")
    print(measure_table(collected))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
