"""``joint_bootstrap``: how much resampling shared conversations together widens the DSTC10 average's CI.

FED-Turn and FED-Dial rate the same test conversations, and the DailyDialog sets a few of the same
dialogues; the average's bootstrap resamples them together (one draw per conversation across the sets that
rate it: :func:`judge.stats.correlation.average_ci`). This scores one model-free method (``length`` by default) on the
eight DSTC10 test halves as the published runs sample them (up to 200 items per set, seed 0) and prints the
bootstrap SD and 95% CI of its 8-set average both ways: every set resampled on its own (the rule before
shared conversations were resampled together) and shared conversations together (today's), with the ratio of the SDs. No model loads; seconds.

    python benchmarks/joint_bootstrap.py --data-dir ../shared/data --resamples 4000
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.datasets import load_benchmark
from judge.datasets.benchmarks import DSTC10_SETS, dataset_info
from judge.datasets.split import conversation_of, split_items
from judge.harness.runner import seeded_subset
from judge.scorers.classic import create_classic
from judge.stats import correlation as stats


def parts(data_dir: str, scorer_name: str, limit: int) -> list[stats.AveragePart]:
    """One part per set: the scorer's scores on the seeded test-half sample, the ratings, the groups and the
    conversations as every set names them."""
    scorer = create_classic(scorer_name)
    out = []
    for name in DSTC10_SETS:
        quality = dataset_info(name).overall
        items = [it for it in seeded_subset(split_items(load_benchmark(name, data_dir), "test"), limit, 0)
                 if it.human(quality) is not None]
        out.append(stats.AveragePart(name, ([s.value for s in scorer.score(items)],),
                                     [it.human(quality) for it in items], [it.group for it in items],
                                     [conversation_of(it) for it in items]))
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    p.add_argument("--scorer", default="length", help="a model-free classic scorer (default: length)")
    p.add_argument("--limit", type=int, default=200)
    p.add_argument("--resamples", type=int, default=4000)
    args = p.parse_args()
    joint = parts(args.data_dir, args.scorer, args.limit)
    alone = [stats.AveragePart(x.dataset, x.preds, x.human, x.groups) for x in joint]
    rows = []
    for label, chosen in (("each set on its own", alone), ("shared conversations together", joint)):
        point, reps, n, units, *_ = stats._average_replicates(chosen, "spearman", args.resamples, 0)
        ci = stats.average_ci(chosen, n_boot=args.resamples)
        sd = float(np.nanstd(reps[0]))
        rows.append(sd)
        print(f"{label:<31} average {point[0]:+.4f}  bootstrap SD {sd:.4f}  95% CI [{ci.low:+.4f}, {ci.high:+.4f}]  "
              f"{n} items, {units} conversations")
    print(f"resampled together: {stats.resampled_together(joint)}; SD ratio {rows[1] / rows[0]:.3f} "
          f"({args.scorer}, {args.resamples} resamples)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
