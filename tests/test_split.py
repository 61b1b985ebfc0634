"""Development / test halves: by conversation, stable, disjoint, and honoured by `judge run` and
`judge bench`. Real data from ../shared/data; no model is loaded except in the bench test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from judge.datasets import load_benchmark
from judge.datasets.split import split_items, split_of
from judge.errors import InputError
from judge.harness import load_experiment, plan
from judge.harness.config import parse_experiment

ROOT = Path(__file__).resolve().parents[1]
DSTC10 = ["TU", "DZ", "PU", "DGU", "DGR", "FT", "EG", "FD"]


@pytest.mark.parametrize("name", DSTC10)
def test_halves_are_disjoint_by_conversation_and_cover_the_set(name, data_dir):
    items = load_benchmark(name, data_dir)
    assert all(it.group for it in items)  # an item without one could not be kept to one half
    dev, test = split_items(items, "dev"), split_items(items, "test")
    assert sorted(it.id for it in dev + test) == sorted(it.id for it in items)
    dev_groups = {it.group for it in dev}
    assert not dev_groups & {it.group for it in test}, "a conversation is in both halves"
    assert 0.3 < len(dev) / len(items) < 0.7
    # Another split seed is another split.
    assert [it.id for it in split_items(items, "dev", seed=1)] != [it.id for it in dev]


def test_split_of_is_a_fixed_function_of_the_group():
    # Pinned: the halves must not move between versions, or a "test" number may have been chosen on.
    assert [split_of(f"conv:{i}") for i in range(8)] == ["test", "dev", "test", "dev", "dev", "test", "dev", "test"]
    assert {split_of(f"g{i}") for i in range(50)} == {"dev", "test"}
    with pytest.raises(InputError, match="must be one of dev, test"):
        split_items([], "train")


def test_run_scores_only_the_split_and_records_it(tmp_path, data_dir):
    cfg = tmp_path / "s.toml"
    cfg.write_text('datasets = ["FT", "DZ"]\nsplit = "test"\nlimit = 30\n[[methods]]\ntype = "classic"\n'
                   'scorer = "length"\n')
    exp = load_experiment(cfg).with_overrides(data_dir=str(data_dir))
    for cell in plan(exp):
        assert len(cell.items) == 30
        assert {split_of(it.group or "") for it in cell.items} == {"test"}
        # Examples may still come from the whole set (its dev half is labelled data too).
        assert len(cell.pool) > len(cell.items)
    dev = exp.with_overrides(split="dev")
    assert not {it.id for c in plan(dev) for it in c.items} & {it.id for c in plan(exp) for it in c.items}
    with pytest.raises(InputError, match="split: must be one of dev, test"):
        parse_experiment({"datasets": ["FT"], "split": "train", "methods": [{"prompt": "yesno"}]}, "x.toml")


def test_cli_run_and_bench_take_split(tmp_path, data_dir):
    env = {**os.environ}
    out = tmp_path / "res"
    cfg = ROOT / "benchmarks" / "configs" / "classic.toml"
    proc = subprocess.run([sys.executable, "-m", "judge", "run", str(cfg), "--data-dir", str(data_dir), "--check",
                           "--split", "dev", "--limit", "5", "-o", str(out)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "5 items" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "judge", "bench", "--data-dir", str(data_dir), "--dataset", "FD",
                           "--scorer", "length", "--split", "test", "--results", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    n_test = len(split_items(load_benchmark("FD", data_dir), "test"))
    assert f"items     {n_test} scored of 125 rated" in proc.stdout
    assert "test half of the conversations" in proc.stdout
    assert "drawn from the test half" in (out / "leaderboard.md").read_text()
