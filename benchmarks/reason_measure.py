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
:mod:`judge.stats.correlation`), with the run's bootstrap settings.

    JUDGE_CACHE=/tmp/reason-q15-dev/cache.sqlite judge run benchmarks/configs/reason_q15_dev.toml --data-dir ../shared/data
    python benchmarks/reason_measure.py results/reason-q15-dev
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.harness.summary import cell_stats, row_groups
from judge.harness.timing import read_timing
from judge.records.results import cell_path, read_rows
from judge.stats import correlation as stats
from judge.stats.floor import too_few_text

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


def _fmt(x: float | None, digits: int = 3) -> str:
    if x is None or not math.isfinite(x):
        return "n/a"
    text = f"{abs(x):.{digits}f}"
    return ("−" if x < 0 else "") + (text[1:] if text.startswith("0.") else text)


def _ci(ci: dict[str, Any]) -> str:
    """``[low, high]``, or ``too few conversations (k)`` below the floor (no interval there)."""
    if ci.get("too_few"):
        return too_few_text(ci.get("n_units"))
    return f"[{_fmt(ci['low'], 2)}, {_fmt(ci['high'], 2)}]"


def _answer_first(rows: dict[str, list[dict[str, Any]]]) -> str:
    """How many rationales open with the answer itself (their first word Yes or No), and the range of the
    exact p(Yes) read after them: a rationale that states its verdict first justifies it rather than
    reasoning towards it, and leaves the read little to grade."""
    every = [r for rs in rows.values() for r in rs]
    first = [(r.get("rationale") or "").strip().split()[:1] for r in every]
    opened = sum(1 for w in first if w and w[0].strip(".,:!").lower() in ("yes", "no"))
    yes = [r["label_probs"]["yes"] for r in every if r.get("label_probs")]
    spread = f"; p(Yes) after the rationale from {min(yes):.4f} to {max(yes):.4f}" if yes else ""
    return f"\nRationales whose first word is the answer (Yes or No): {opened} of {len(every)}{spread}."


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="the run's folder (judge run ... -o FOLDER)")
    args = ap.parse_args()
    out = Path(args.results)
    summary = json.loads((out / "summary.json").read_text())
    n_boot, seed = summary["experiment"]["bootstrap"], summary["experiment"]["seed"]
    quality = {r["dataset"]: r["quality"] for r in summary["results"]}  # each set's overall quality
    sets = list(quality)
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {}
    seconds: dict[str, float] = {}
    for method in (ONE_TOKEN, REASONED):
        for ds in sets:
            path = cell_path(out, method, ds, quality[ds], 0)
            rows.setdefault(method, {})[ds] = read_rows(path)
            seconds[method] = seconds.get(method, 0.0) + read_timing(path).seconds
    rows[SAMPLED] = {ds: [sampled(r) for r in rows[REASONED][ds]] for ds in sets}
    seconds[SAMPLED] = seconds[REASONED]  # the same rationales; the draws cost nothing
    shown = ", ".join(f"{ds} ({q})" for ds, q in quality.items())
    print(f"reason_measure: run {summary['experiment']['name']} ({out}), sets {shown}; bootstrap {n_boot} "
          f"resamples, seed {seed}; sampled answers: {SAMPLES} per item, seed {SAMPLE_SEED}")
    header = "| candidate | " + " | ".join(sets) + " | 3-set average [95% CI] | − one-token, p | tokens/item (prompt + generated) | s/item |"
    print("\n" + header)
    print("|---|" + "---:|" * (len(sets) + 4))
    for method in (ONE_TOKEN, REASONED, SAMPLED):
        cells = []
        parts, paired = [], []
        for ds in sets:
            mine, base = rows[method][ds], rows[ONE_TOKEN][ds]
            st = cell_stats(mine, n_boot, seed)
            mark = "" if (st["ci"]["p"] is not None and st["ci"]["p"] < 0.05) else "\\*"
            scores = {r["score"] for r in mine if r["score"] is not None}
            if len(scores) == 1:  # no correlation exists: say why rather than print n/a
                cells.append(f"constant (every item {_fmt(scores.pop(), 1)})")
            else:
                cells.append(f"{_fmt(st['spearman']['value'])}{mark} {_ci(st['ci'])}")
            human, groups = [r["human"] for r in mine], row_groups(mine)
            parts.append(stats.AveragePart(ds, ([r["score"] for r in mine],), human, groups))
            assert [r["id"] for r in mine] == [r["id"] for r in base], ds
            paired.append(stats.AveragePart(ds, ([r["score"] for r in mine], [r["score"] for r in base]), human, groups))
        avg = stats.average_ci(parts, n_boot=n_boot, seed=seed)
        test = stats.paired_average(paired, n_boot=2 * n_boot, seed=seed)
        every = [r for ds in sets for r in rows[method][ds]]
        n = len(every)
        prompt = sum(r["n_prompt_tokens"] for r in every) / n
        generated = sum(r.get("n_generated_tokens", 0) for r in every) / n
        failed = sum(r["error"] is not None for r in every)
        unparsed = sum(r.get("unparsed", 0) for r in every)
        diff = "" if method == ONE_TOKEN else f"{_fmt(test.diff)} " + (
            too_few_text(test.n_units) if test.too_few
            else f"[{_fmt(test.low, 2)}, {_fmt(test.high, 2)}], p = {_fmt(test.p_value, 2)}")
        extra = (f" ({failed} failed)" if failed else "") + (f" ({unparsed} of {SAMPLES * n} draws not Yes/No)"
                                                           if method == SAMPLED else "")
        print(f"| `{method}`{extra} | " + " | ".join(cells) +
              f" | {_fmt(test.r_a)} {_ci({'low': avg.low, 'high': avg.high, 'too_few': avg.too_few, 'n_units': avg.n_units})} | {diff} | {prompt:.0f} + {generated:.0f} | "
              f"{seconds[method] / n:.1f} |")
    print(_answer_first(rows[REASONED]))
    print(f"\nPer set: Spearman [conversation-bootstrap 95% CI]; \\* = not significant (bootstrap p >= .05). The "
          f"difference is the paired stratified bootstrap of the 3-set average ({2 * n_boot} resamples). Seconds: model "
          "time per item from the cells' time files (the two read candidates of one set share a pass); the sampled "
          "candidate reuses the rationales, so its cost is theirs (an API without log-probabilities would generate "
          f"{SAMPLES} completions per item).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
