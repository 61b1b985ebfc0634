"""``harness_speed``: `judge run` against the same cells scored the way `judge score` scores them.

The grid is the paper's Table 3 shape: FED-Turn, all 9 qualities, FED rating prompts, 3 manual
examples, the embedded SmolLM2 on llama.cpp, cache off (so both passes run the model for every
prompt). Pass "run" is the harness (`run_experiment`: cell files fsynced row by row, meta files,
summary, reports without plots); pass "score" is what `judge score -o FILE` does per quality
(prepare, build, stream rows into one atomic JSONL). Both use the same seeded items. Passes run
ABBA (run, score, score, run) so drift in machine load hits both alike; the figure is the ratio of
mean wall times, plus items/s, the largest score difference and peak RSS.

    python benchmarks/harness_speed.py --limit 20 --threads 2
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.core.config import GenerateConfig
from judge.core.io import atomic_write_text
from judge.datasets.benchmarks import dataset_info
from judge.engine import MethodSpec, prepare
from judge.engine.session import RunOptions, Session
from judge.harness.config import DatasetSpec, Experiment
from judge.harness.runner import plan, run_experiment
from judge.records.results import cell_path
from judge.records.rows import Row, read_rows


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def experiment(data_dir: str, out: str, limit: int, threads: int | None) -> Experiment:
    info = dataset_info("fed-turn")
    spec = MethodSpec(name="manual-3shot", prompt="fed", selector="manual", k=3,
                      generate=GenerateConfig(threads=threads, cache=False))
    return Experiment(path="harness_speed", name="harness-speed", data_dir=data_dir, output=out, limit=limit,
                      limit_seed=0, datasets=(DatasetSpec(info.name, tuple(q.name for q in info.qualities)),),
                      methods=(spec,), bootstrap=200)


def run_pass(exp: Experiment) -> tuple[float, dict[tuple[str, str], float | None]]:
    t0 = time.perf_counter()
    run_experiment(exp, progress=False, plots=False, log=lambda _m: None)
    wall = time.perf_counter() - t0
    scores = {}
    for ds in exp.datasets:
        for q in ds.qualities:
            for r in read_rows(cell_path(Path(exp.output), exp.methods[0].name, ds.name, q, 0)):
                scores[(q, r.id)] = r.score
    return wall, scores


def score_pass(exp: Experiment, out: Path) -> tuple[float, dict[tuple[str, str], float | None]]:
    """Per quality, exactly the calls `judge score` makes: prepare, build, rows into an atomic JSONL."""
    t0 = time.perf_counter()
    scores = {}
    with Session(RunOptions(progress=False)) as session:
        for cell in plan(exp):
            prep = prepare(cell.method, cell.items, cell.quality, pool=cell.pool)
            rows: list[Row] = []
            session.rows(prep, cell.items, rows.append, quality=cell.quality.name)
            atomic_write_text(out / f"{cell.quality.name}.jsonl", "".join(r.to_json() + "\n" for r in rows))
            scores.update({(cell.quality.name, r.id): r.score for r in rows})
    return time.perf_counter() - t0, scores


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=20, help="items per quality (seeded subset)")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    args = ap.parse_args()
    load = os.getloadavg()
    walls: dict[str, list[float]] = {"run": [], "score": []}
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, kind in enumerate(("run", "score", "score", "run")):
            exp = experiment(args.data_dir, f"{tmp}/run{i}", args.limit, args.threads)
            if kind == "run":
                wall, scores = run_pass(exp)
            else:
                out = Path(tmp) / f"score{i}"
                out.mkdir()
                wall, scores = score_pass(exp, out)
            walls[kind].append(wall)
            results.setdefault(kind, scores)
    n = len(results["run"])
    diffs = [abs((results["run"][key] or 0) - (results["score"][key] or 0)) for key in results["run"]]
    mean_run, mean_score = statistics.fmean(walls["run"]), statistics.fmean(walls["score"])
    print(f"FED-Turn, 9 qualities x {args.limit} items = {n} scores per pass, 3 manual examples, SmolLM2 "
          f"(llama.cpp, {args.threads or os.cpu_count()} threads), cache off; load {load[0]:.1f} -> "
          f"{os.getloadavg()[0]:.1f}")
    print("| pass | wall s (each) | mean s | items/s | ratio to score |")
    print("|---|---|---|---|---|")
    for kind, mean in (("judge run (harness)", mean_run), ("judge score path", mean_score)):
        key = "run" if kind.startswith("judge run") else "score"
        print(f"| {kind} | {', '.join(f'{w:.1f}' for w in walls[key])} | {mean:.1f} | {n / mean:.3f} | "
              f"{mean / mean_score:.2f}x |")
    print(f"max |score diff| {max(diffs):.2e} over {n} scores; same ids: {set(results['run']) == set(results['score'])}")
    print(f"peak RSS {peak_rss_mb():.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
