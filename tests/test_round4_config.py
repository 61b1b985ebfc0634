"""Round 4's committed candidates: both files parse, hold the same methods, and every method is
prepared against real dev-half items of each set (no model is loaded; the end-to-end run with SmolLM2
is in test_shipped_configs)."""

from __future__ import annotations

from pathlib import Path

from judge.datasets.source import resolve_source
from judge.datasets.split import split_items
from judge.engine import prepare
from judge.harness.config import load_experiment

CONFIGS = Path(__file__).resolve().parents[1] / "benchmarks" / "configs"


def test_dev_and_test_files_hold_the_same_candidates():
    dev = load_experiment(CONFIGS / "cpu_leaderboard_dev_q15_r4.toml")
    test = load_experiment(CONFIGS / "cpu_leaderboard_q15_r4_test.toml")
    assert (dev.split, test.split) == ("dev", "test")
    assert [m.describe() for m in dev.methods] == [m.describe() for m in test.methods]
    assert {a for a, _ in test.compare} == {m.name for m in test.methods} - {"q15-criteria"}
    kinds = {m.type for m in dev.methods}
    assert kinds == {"llm", "likelihood", "ensemble"}
    # Never weights fitted on the scored set; nothing reference-based or reading the next turn.
    assert all(m.fit in ("fixed", "lodo") for m in dev.methods)
    assert all(m.type != "classic" for m in dev.methods)


def test_every_candidate_prepares_on_every_dev_set(data_dir):
    dev = load_experiment(CONFIGS / "cpu_leaderboard_dev_q15_r4.toml")
    for ds in dev.datasets:
        src = resolve_source(ds.name, str(data_dir))
        items = [it for it in split_items(list(src.items), "dev") if it.human(src.quality.name) is not None][:20]
        assert items, ds.name
        for method in dev.methods:
            prepared = prepare(method, items, src.quality)
            assert prepared.spec.name == method.name
