"""Spearman of classic scorers on the eight DSTC10 sets (overall keys), on the same seeded subsets as
`judge bench --limit N` (seed 0). Usage: python benchmarks/classic_measure.py DATA_DIR OUT.jsonl '[["length", {}, null], ["lm-maxprob", {"model": "smollm2", "threads": 1}, 20]]'
"""
import json
import sys
import time

from judge.cli.bench import subset
from judge.datasets import load_benchmark
from judge.datasets.benchmarks import DSTC10_SETS, dataset_info
from judge.errors import InputError
from judge.scorers.classic import create_classic
from judge.stats import correlations

data_dir, out_path = sys.argv[1], sys.argv[2]
scorers = json.loads(sys.argv[3])  # [[name, options, limit], ...]
out = open(out_path, "a")  # noqa: SIM115 - appended to row by row for the whole run
for name, options, limit in scorers:
    for ds in DSTC10_SETS:
        info = dataset_info(ds)
        items = [it for it in load_benchmark(ds, data_dir) if it.human(info.overall) is not None]
        items = subset(items, limit, 0)
        q = info.quality(info.overall)
        t = time.time()
        try:
            sc = create_classic(name, quality=q, **options)
            scores = list(sc.score(items))
        except InputError as e:
            out.write(json.dumps({"scorer": name, "dataset": ds, "skip": str(e)[:120]}) + "\n")
            out.flush()
            continue
        c = correlations([s.value for s in scores], [it.human(q.name) for it in items])
        row = {"scorer": name, "options": options, "dataset": ds, "n": c["spearman"].n,
               "spearman": round(c["spearman"].value, 3), "p": c["spearman"].p_value,
               "failed": sum(not s.ok for s in scores), "limit": limit, "s": round(time.time() - t, 1)}
        out.write(json.dumps(row) + "\n")
        out.flush()
