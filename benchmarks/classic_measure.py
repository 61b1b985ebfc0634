"""Spearman of classic scorers on the eight DSTC10 sets (overall keys), on the same seeded subsets as
`judge bench --limit N` (limit seed 0), one JSON line per scorer and set appended to OUT.jsonl.

Usage: python benchmarks/classic_measure.py DATA_DIR OUT.jsonl '[["length", {}, null], ["lm-maxprob", {"model": "smollm2", "threads": 1}, 20]]'
Each entry is [scorer, options, limit] (limit null: every rated item). --sets narrows the sets.
Each scorer is a classic MethodSpec built through a judge.engine Session, as `judge bench --scorer` does.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from judge.core.errors import InputError
from judge.datasets import load_benchmark
from judge.datasets.benchmarks import DSTC10_SETS, dataset_info
from judge.engine import MethodSpec, prepare
from judge.engine.session import RunOptions, Session
from judge.harness.runner import seeded_subset
from judge.stats.correlation import correlations


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data_dir", help="folder holding the benchmark files (e.g. ../shared/data)")
    p.add_argument("out", help="JSONL file the rows are appended to")
    p.add_argument("scorers", help='JSON list of [scorer, options, limit], e.g. \'[["length", {}, null]]\'')
    p.add_argument("--sets", default=",".join(DSTC10_SETS), help="comma-separated sets (default: the eight DSTC10 sets)")
    return p.parse_args(argv)


def measure(data_dir: str, name: str, options: dict[str, Any], limit: int | None, dataset: str) -> dict[str, Any]:
    """One row: the scorer's Spearman with the set's overall rating on `judge bench`'s seeded subset."""
    info = dataset_info(dataset)
    quality = info.quality(info.overall)
    # As the harness does: the seeded subset of the whole set, then its items rated for the quality.
    items = [it for it in seeded_subset(load_benchmark(dataset, data_dir), limit, 0) if it.human(quality.name) is not None]
    start = time.time()
    try:
        with Session(RunOptions(progress=False)) as session:
            scorer = session.build(prepare(MethodSpec(type="classic", scorer=name, options=options), items, quality))
            scores = list(scorer.score(items))
    except InputError as exc:
        return {"scorer": name, "dataset": dataset, "skip": str(exc)[:120]}
    c = correlations([s.value for s in scores], [it.human(quality.name) for it in items])
    return {"scorer": name, "options": options, "dataset": dataset, "n": c["spearman"].n,
            "spearman": round(c["spearman"].value, 3), "p": c["spearman"].p_value,
            "failed": sum(not s.ok for s in scores), "limit": limit, "s": round(time.time() - start, 1)}


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    scorers = json.loads(args.scorers)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    with open(args.out, "a") as out:  # appended row by row for the whole run
        for name, options, limit in scorers:
            for dataset in sets:
                out.write(json.dumps(measure(args.data_dir, name, options, limit, dataset)) + "\n")
                out.flush()


if __name__ == "__main__":
    main()
