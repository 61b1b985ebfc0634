"""The committed candidates of rounds 4 to 7: each round's dev and test files parse, hold the same
methods, and every method is prepared against real dev-half items of each set (no model is loaded;
the end-to-end runs with SmolLM2 are in test_shipped_configs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.datasets.source import resolve_source
from judge.datasets.split import split_items
from judge.engine import prepare
from judge.engine.kinds import method_kinds
from judge.engine.spec import SCORED_SET
from judge.harness.config import load_experiment

CONFIGS = Path(__file__).resolve().parents[1] / "benchmarks" / "configs"
#: dev file, test file, the method types the round holds
ROUNDS = {
    "r4": ("cpu_leaderboard_dev_q15_r4.toml", "cpu_leaderboard_q15_r4_test.toml", {"llm", "likelihood", "ensemble"}),
    "r5": ("cpu_leaderboard_dev_q15_r5.toml", "cpu_leaderboard_q15_r5_test.toml", {"llm", "ensemble"}),
    "r6": ("cpu_leaderboard_dev_q15_r6.toml", "cpu_leaderboard_q15_r6_test.toml", {"llm", "ensemble"}),
    "r7": ("cpu_leaderboard_dev_q15_r7.toml", "cpu_leaderboard_q15_r7_test.toml", {"llm", "likelihood", "ensemble"}),
}


@pytest.mark.parametrize("round_", sorted(ROUNDS))
def test_dev_and_test_files_hold_the_same_candidates(round_):
    dev_file, test_file, types = ROUNDS[round_]
    dev = load_experiment(CONFIGS / dev_file)
    test = load_experiment(CONFIGS / test_file)
    assert (dev.split, test.split) == ("dev", "test")
    assert [m.describe() for m in dev.methods] == [m.describe() for m in test.methods]
    assert {m.type for m in dev.methods} == types
    # Never weights fitted on the scored set; nothing reference-based or reading the next turn.
    assert not any(m.kind.trained_on(m) == SCORED_SET for m in dev.methods)
    assert all(method_kinds(m).kind == "reference-free" and not method_kinds(m).uses_future for m in dev.methods)


def test_round_4_compares_every_candidate_with_the_criteria_prompt():
    test = load_experiment(CONFIGS / ROUNDS["r4"][1])
    assert {a for a, _ in test.compare} == {m.name for m in test.methods} - {"q15-criteria"}


def test_round_5_gates_every_candidate_on_its_paired_test_with_the_criteria_prompt():
    dev = load_experiment(CONFIGS / ROUNDS["r5"][0])
    assert dev.compare == load_experiment(CONFIGS / ROUNDS["r5"][1]).compare
    references = {"q15-criteria", "q15-relevant"}
    assert {a for a, _ in dev.compare} == {m.name for m in dev.methods} - references
    assert {b for _, b in dev.compare} == {"q15-criteria"}
    alone = [m for m in dev.methods if m.type == "llm" and m.settings.context == "none"]
    assert len(alone) == 2
    # every contrast subtracts a reply-alone member
    for m in dev.methods:
        if m.type == "ensemble":
            assert [w < 0 for w in m.settings.weights] == [x.kind.context_view(x) == "none" for x in m.settings.members], m.name


def test_round_6_gates_every_listwise_candidate_on_its_paired_test_with_the_criteria_prompt():
    dev = load_experiment(CONFIGS / ROUNDS["r6"][0])
    assert dev.compare == load_experiment(CONFIGS / ROUNDS["r6"][1]).compare
    assert {a for a, _ in dev.compare} == {m.name for m in dev.methods} - {"q15-criteria"}
    assert {b for _, b in dev.compare} == {"q15-criteria"}
    # every candidate lists the other replies (itself or a member), and the reference point does not
    assert {m.name for m in dev.methods if method_kinds(m).listwise} == {m.name for m in dev.methods} - {"q15-criteria"}


@pytest.mark.parametrize("round_", sorted(ROUNDS))
def test_every_candidate_prepares_on_every_dev_set(round_, data_dir):
    dev = load_experiment(CONFIGS / ROUNDS[round_][0])
    for ds in dev.datasets:
        src = resolve_source(ds.name, str(data_dir))
        items = [it for it in split_items(list(src.items), "dev") if it.human(src.quality.name) is not None][:20]
        assert items, ds.name
        for method in dev.methods:
            prepared = prepare(method, items, src.quality)
            assert prepared.spec.name == method.name


def test_round_7_gates_every_follow_up_candidate_on_its_paired_test_with_the_criteria_prompt():
    dev = load_experiment(CONFIGS / ROUNDS["r7"][0])
    assert dev.compare == load_experiment(CONFIGS / ROUNDS["r7"][1]).compare
    assert {a for a, _ in dev.compare} == {m.name for m in dev.methods} - {"q15-criteria"}
    assert {b for _, b in dev.compare} == {"q15-criteria"}
    # every candidate is the follow-up signal or holds it
    fed = {m.name for m in dev.methods if m.describe().get("signal") == "followup"
           or any(x.describe().get("signal") == "followup" for x in m.kind.members(m))}
    assert fed == {m.name for m in dev.methods} - {"q15-criteria"}
