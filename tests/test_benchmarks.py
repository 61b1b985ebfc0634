"""The benchmark scripts run as their README documents them (smallest sizes, the embedded model)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_long_prompts_compares_llama_cpp_settings_on_the_same_items(data_dir):
    """Two timed DailyDialog-Zhao items, 1-shot, SmolLM2: the defaults against flash attention in ABBA
    order; the table has a ratio per setting (1.00x for the baseline) and the largest score difference
    from the first baseline pass (none between the two baseline passes: llama.cpp is deterministic)."""
    proc = subprocess.run([sys.executable, "benchmarks/long_prompts.py", "--data-dir", str(data_dir), "--dataset", "DZ",
                           "--items", "2", "--k", "1"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert sum(line.strip().startswith("pass ") for line in lines) == 4
    table = {line.split()[0]: line.split() for line in lines if line.startswith(("defaults", "flash_attn=true"))}
    assert table["defaults"][3] == "1.00x" and table["flash_attn=true"][3].endswith("x")
    # The same answers up to llama.cpp's numerics: flash attention moves a probability by a few hundredths.
    assert float(table["defaults"][4]) == 0.0 and float(table["flash_attn=true"][4]) < 0.1


def test_reference_identity_drops_the_replies_that_are_the_reference(tmp_path, data_dir):
    """A model-free run on Topical-USR (ROUGE-L against the reference, and length); the check leaves out
    exactly the items whose reply is one of their references, recomputes Spearman on the rest to the
    value scipy gives, and shows the reference-based scorer losing more than length does."""
    from scipy.stats import spearmanr

    from judge.datasets import load_benchmark
    from judge.harness import load_experiment, run_experiment
    from judge.results import cell_path, read_rows

    out = tmp_path / "res"
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'name = "r"\ndata_dir = "{data_dir}"\noutput = "{out}"\ndatasets = ["TU"]\nqualities = ["overall"]\n'
                   'limit = 80\n[[methods]]\ntype = "classic"\nscorer = "rouge-l"\n'
                   '[[methods]]\ntype = "classic"\nscorer = "length"\n')
    run_experiment(load_experiment(cfg), progress=False, plots=False, log=lambda m: None)
    proc = subprocess.run([sys.executable, "benchmarks/reference_identity.py", str(out), str(data_dir)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    cells = [[x.strip() for x in line.strip().strip("|").split("|")] for line in proc.stdout.splitlines()]
    table = {(c[0], c[1]): c for c in cells if len(c) == 6}
    items = {it.id: it for it in load_benchmark("topical-usr", data_dir)}
    rows = read_rows(cell_path(out, "rouge-l", "topical-usr", "Overall", 0))
    same = [r for r in rows if items[r["id"]].response in items[r["id"]].references]
    kept = [r for r in rows if r not in same]
    assert same and all(r["score"] == 1.0 for r in same)  # ROUGE-L of the reference against itself
    rouge = table[("rouge-l", "topical-usr")]
    assert int(rouge[2]) == len(rows) and int(rouge[4]) == len(kept)
    expected = spearmanr([r["score"] for r in kept], [r["human"] for r in kept]).statistic
    assert float(rouge[5]) == pytest.approx(expected, abs=5e-4)
    length = table[("length", "topical-usr")]
    drop = {name: float(c[3]) - float(c[5]) for name, c in (("rouge", rouge), ("length", length))}
    assert drop["rouge"] > drop["length"]


def test_classic_measure_runs_as_documented_and_matches_judge_bench(tmp_path, data_dir):
    """docs/classic.md's command on two sets with a 20-item limit: one row per set, each the Spearman
    `judge bench --scorer length --limit 20` gets on the same seeded subset (the rows it writes)."""
    import json

    from scipy.stats import spearmanr

    helped = subprocess.run([sys.executable, "benchmarks/classic_measure.py", "--help"], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert helped.returncode == 0 and "DATA_DIR" in helped.stdout and "--sets" in helped.stdout, helped.stderr
    out = tmp_path / "classic.jsonl"
    proc = subprocess.run([sys.executable, "benchmarks/classic_measure.py", str(data_dir), str(out),
                           '[["length", {}, 20]]', "--sets", "fed-turn,topical-usr"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    rows = {r["dataset"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert sorted(rows) == ["fed-turn", "topical-usr"]
    for dataset, row in rows.items():
        bench_out = tmp_path / f"{dataset}.jsonl"
        bench = subprocess.run([sys.executable, "-m", "judge", "bench", "--data-dir", str(data_dir), "--dataset", dataset,
                                "--scorer", "length", "--limit", "20", "-o", str(bench_out)],
                               cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert bench.returncode == 0, bench.stderr
        scored = [json.loads(line) for line in bench_out.read_text().splitlines()]
        assert row["n"] == len(scored) == 20 and row["failed"] == 0 and row["limit"] == 20
        expected = spearmanr([r["score"] for r in scored], [r["human"] for r in scored]).statistic
        assert row["spearman"] == pytest.approx(expected, abs=5e-4)
