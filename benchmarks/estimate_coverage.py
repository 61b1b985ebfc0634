"""Do ``judge estimate``'s intervals hold? Coverage of PPI++ and labels-only intervals on sets with several
systems, their labels hidden and revealed on n random items at a time.

For each rows file (a set scored by one judge, every row with its human rating), each n and each of DRAWS
seeded draws: n rows chosen uniformly at random are "labelled" (their human value revealed), and each system's
human mean and each difference between systems is estimated as ``judge estimate`` does
(:func:`judge.stats.ppi.estimate_draws`, target ``rows``: the mean over these rows). The truth is the all-labels
value (every row's human rating). Reported per set, judge and n, for the systems' means and the differences:

* coverage: the share of draws whose 95% interval holds the truth (draws below the floor on labelled
  conversations give no interval; ``with CI`` says how many did), PPI++ and labels only;
* width: the median over draws of PPI width / labels-only width (below 1: the judge helped);
* ranking: how often the estimated order of the systems is exactly the human one, and the share of pairs of
  systems in the human order, PPI++ and labels only.

Usage:
    python benchmarks/estimate_coverage.py --make-rows --data-dir ../shared/data   # mock and length rows
    python benchmarks/estimate_coverage.py                                         # the draws, writes the summary
    python benchmarks/estimate_coverage.py --markdown                              # the table from the summary
    judge results render                        # the table onto the results page and into docs/trust.md
    python benchmarks/estimate_coverage.py --reveal ROWS --n 80 --labels LABELS    # a labels file, as if labelled

Rows files are ``ROWS_DIR/<SET>-<judge>.jsonl`` (``judge bench SET -o ...``); other judges' rows (a model run)
go in the same folder under the same naming and are picked up.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from judge.records.labels import Label, append_label
from judge.records.rows import read_rows
from judge.report.coverage_table import COVERAGE, coverage_markdown
from judge.report.estimate_join import scored_rows
from judge.stats import ppi

SETS = ("TU", "PU", "DZ", "RE1", "RE2", "REI")
#: The cheap judges made by --make-rows: no signal (mock), and model-free ones with some: the reply's length, and
#: its ROUGE-L against the set's reference reply (reference-based; sets without references skip it).
CHEAP = {"mock": ["--backend", "mock"], "length": ["--scorer", "length"], "rouge-l": ["--scorer", "rouge-l"]}
NS = (25, 50, 100, 200)
#: In a folder of its own: benchmarks/results/*.json are run summaries (judge results), which this is not.
SUMMARY = Path(__file__).parent.parent / COVERAGE


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows-dir", default="/tmp/estimate-coverage", help="folder of <SET>-<judge>.jsonl rows files")
    p.add_argument("--make-rows", action="store_true", help="score the sets with the cheap judges first (judge bench)")
    p.add_argument("--data-dir", default="../shared/data", help="the benchmark files (for --make-rows)")
    p.add_argument("--sets", default=",".join(SETS), help="comma-separated sets (default: %(default)s)")
    p.add_argument("--ns", default=",".join(map(str, NS)), help="labelled items per draw (default: %(default)s)")
    p.add_argument("--draws", type=int, default=1000, help="seeded draws per set, judge and n (default 1000)")
    p.add_argument("--bootstrap", type=int, default=1000, help="conversation resamples per draw (default 1000)")
    p.add_argument("--output", default=str(SUMMARY), help="summary JSON to write (default: %(default)s)")
    p.add_argument("--markdown", action="store_true", help="only print the table of the summary --output")
    p.add_argument("--update", action="store_true",
                   help="keep the other sets' results of the summary --output and replace those of --sets")
    p.add_argument("--reveal", default=None, metavar="ROWS",
                   help="only write a labels file of --n uniform random rows of ROWS, their human ratings revealed "
                   "(what a person labelling in a uniform random order would have written)")
    p.add_argument("--n", type=int, default=80, help="rows to reveal with --reveal (default 80)")
    p.add_argument("--labels", default=None, help="the labels file --reveal writes (appended)")
    p.add_argument("--seed", type=int, default=0, help="--reveal's seed")
    return p.parse_args(argv)


def constructed(mock: Path, out: Path, seed: int = 0) -> None:
    """A judge built from the answers, to show what a judge with signal gains: the human rating halved, plus
    a bias of its own per system (sd 0.5 of the rating's sd) and noise (sd 0.5 of it), so about r = .6 within
    a system. It is no model: the table names it ``constructed``."""
    rows = read_rows(mock)
    rng = np.random.default_rng(seed)
    human = np.array([r.human for r in rows], dtype=float)
    sd = float(human.std())
    bias = {s: rng.normal(0, 0.5 * sd) for s in dict.fromkeys(r.system for r in rows)}
    with open(out, "w", encoding="utf-8") as f:
        for r, h in zip(rows, human, strict=True):
            score = 0.5 * h + bias[r.system] + rng.normal(0, 0.5 * sd)
            f.write(dataclasses.replace(r, method="constructed", score=round(float(score), 6)).to_json() + "\n")


def make_rows(sets: Sequence[str], data_dir: str, rows_dir: Path) -> None:
    """Each set scored by each cheap judge, through ``judge bench`` (the one way a judge is run), and the
    constructed judge (:func:`constructed`) from the mock's rows."""
    rows_dir.mkdir(parents=True, exist_ok=True)
    for name in sets:
        _cheap(name, data_dir, rows_dir)
        if not (rows_dir / f"{name}-constructed.jsonl").exists():
            constructed(rows_dir / f"{name}-mock.jsonl", rows_dir / f"{name}-constructed.jsonl")


def _cheap(name: str, data_dir: str, rows_dir: Path) -> None:
    """One set's rows of each cheap judge not written yet (a judge that cannot score the set is skipped)."""
    for judge, flags in CHEAP.items():
        out = rows_dir / f"{name}-{judge}.jsonl"
        if out.exists():
            continue
        done = subprocess.run([sys.executable, "-m", "judge", "bench", name, "--data-dir", data_dir, *flags,
                               "--no-progress", "-o", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
        if done.returncode != 0:
            out.unlink(missing_ok=True)
            print(f"{name} {judge}: skipped ({done.stderr.strip().splitlines()[-1]})", file=sys.stderr)


def reveal(rows_path: str, n: int, labels_path: str, seed: int) -> None:
    """Append the human ratings of n uniform random rows to a labels file, in the order drawn."""
    rows = [r for r in read_rows(rows_path) if r.human is not None and r.quality is not None]
    order = np.random.default_rng(seed).permutation(len(rows))[:n]
    for position, i in enumerate(order):
        r = rows[int(i)]
        append_label(labels_path, Label(r.id, {r.quality: r.human}, rater="revealed",  # type: ignore[dict-item]
                                        position=position))


def _order_agreement(est: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per draw: whether the order of ``est`` [D, G] is exactly ``truth``'s, and the share of pairs in order."""
    i, j = np.triu_indices(len(truth), 1)
    same = np.sign(est[:, i] - est[:, j]) == np.sign(truth[i] - truth[j])
    return same.all(axis=1), same.mean(axis=1)


def _kind(d: ppi.Draws, truth: np.ndarray, cols: np.ndarray) -> dict[str, Any]:
    """Coverage, share with an interval and width ratio over the draws and the estimands ``cols``."""
    low, high = d.ppi_low[:, cols], d.ppi_high[:, cols]
    nlow, nhigh = d.naive_low[:, cols], d.naive_high[:, cols]
    has = np.isfinite(low)
    t = truth[cols][None, :]
    tol = 1e-9
    covered = (low - tol <= t) & (t <= high + tol)
    ncovered = (nlow - tol <= t) & (t <= nhigh + tol)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = (high - low) / (nhigh - nlow)
        eff = d.effective_n[:, cols] / d.n_labels[:, cols]
    return {"estimands": len(cols), "with_ci": float(has.mean()),
            "coverage_ppi": float(covered[has].mean()) if has.any() else None,
            "coverage_labels": float(ncovered[has].mean()) if has.any() else None,
            "width_ratio": float(np.nanmedian(ratio[has])) if has.any() else None,
            "label_gain": float(np.nanmedian(eff[has])) if has.any() else None}


def run_one(path: Path, n: int, draws: int, n_boot: int, seed: int) -> dict[str, Any] | None:
    """Every draw of n labelled rows of one rows file, summarised."""
    rows = [r for r in read_rows(path) if r.score is not None and r.human is not None]
    if n >= len(rows):
        return None
    unit = scored_rows(rows)
    names, convs = list(dict.fromkeys(unit.groups)), list(dict.fromkeys(unit.conversations))
    g_ix, c_ix = {s: i for i, s in enumerate(names)}, {c: i for i, c in enumerate(convs)}
    group = np.array([g_ix[g] for g in unit.groups])
    cluster = np.array([c_ix[c] for c in unit.conversations])
    score = np.array([r.score for r in rows], dtype=float)
    human = np.array([r.human for r in rows], dtype=float)
    lay = ppi.layout(cluster, group, score)
    est_names, matrix = ppi.contrasts(names)
    truth_group = np.bincount(group, weights=human) / np.bincount(group)
    truth = matrix @ truth_group
    rng = np.random.default_rng(seed)
    counts = ppi.boot_counts(len(convs), n_boot, seed + 1)
    chunk = max(1, int(3e7 // (n_boot * max(len(est_names), len(convs)))))
    parts = []
    for start in range(0, draws, chunk):
        d = min(chunk, draws - start)
        picked = np.argsort(rng.random((d, len(rows))), axis=1)[:, :n]
        weight = np.zeros((d, len(rows)))
        np.put_along_axis(weight, picked, 1.0, axis=1)
        parts.append(ppi.estimate_draws(lay, weight, np.broadcast_to(human, weight.shape), matrix, counts,
                                        target="rows", fraction=np.full(d, n / len(rows))))
    d_all = ppi.Draws(*(np.concatenate([getattr(p, f) for p in parts]) for f in ppi.Draws.__dataclass_fields__))
    means, diffs = np.arange(len(names)), np.arange(len(names), len(est_names))
    exact_p, pairs_p = _order_agreement(d_all.ppi[:, means], truth_group)
    exact_n, pairs_n = _order_agreement(d_all.naive[:, means], truth_group)
    return {"rows": len(rows), "conversations": len(convs), "systems": len(names), "n": n, "draws": draws,
            "bootstrap": n_boot, "means": _kind(d_all, truth, means),
            "differences": _kind(d_all, truth, diffs) if len(diffs) else None,
            "ranking_exact_ppi": float(exact_p.mean()), "ranking_exact_labels": float(exact_n.mean()),
            "ranking_pairs_ppi": float(np.nanmean(pairs_p)), "ranking_pairs_labels": float(np.nanmean(pairs_n)),
            "lambda_median": float(np.median(d_all.lam[:, 0]))}


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.reveal:
        if args.labels is None:
            raise SystemExit("--reveal needs --labels FILE")
        reveal(args.reveal, args.n, args.labels, args.seed)
        return
    if args.markdown:
        print(coverage_markdown(json.loads(Path(args.output).read_text(encoding="utf-8"))))
        return
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    rows_dir = Path(args.rows_dir)
    if args.make_rows:
        make_rows(sets, args.data_dir, rows_dir)
    results = []
    for name in sets:
        for path in sorted(rows_dir.glob(f"{name}-*.jsonl")):
            judge = path.stem[len(name) + 1:]
            for i, n in enumerate(int(x) for x in args.ns.split(",")):
                start = time.time()
                r = run_one(path, n, args.draws, args.bootstrap, seed=1000 * i)
                if r is None:
                    continue
                results.append({"set": name, "judge": judge, **r, "seconds": round(time.time() - start, 1)})
                means = r["means"]
                print(f"{name} {judge} n={n}: means {means['coverage_ppi']} (labels {means['coverage_labels']}), "
                      f"width {means['width_ratio']}, {results[-1]['seconds']} s", flush=True)
    if args.update:
        kept = json.loads(Path(args.output).read_text(encoding="utf-8"))["results"]
        results = [r for r in kept if r["set"] not in sets] + results
        results.sort(key=lambda r: SETS.index(r["set"]) if r["set"] in SETS else len(SETS))  # stable: judges keep order
    summary = {"draws": args.draws, "bootstrap": args.bootstrap, "nominal": 0.95, "target": "rows",
               "results": results}
    Path(args.output).write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(coverage_markdown(summary))


if __name__ == "__main__":
    main()
