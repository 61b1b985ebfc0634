"""One run lifecycle (judge.engine.session): every command plans, opens, runs and closes through a Session.

On the product's mock backend (real SQLite caches in tmp_path): a session's rows of items and of pairs are the
engine's own rows; its counters outlive it; ``--check`` prints the cost table without loading anything; and the
options every command shares are refused the same way on ``judge compare`` (a provider batch on a Ray cluster, a
Ray actor flag without ``--ray``) before anything is sent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from judge.cli import main
from judge.core.config import GenerateConfig
from judge.data.pairs import pairs_between
from judge.datasets import load_items
from judge.engine import BackendPool, MethodSpec, build, prepare, run_rows
from judge.engine.compare import compare_rows, pair_items, prepare_pairs
from judge.engine.cost import Entry
from judge.engine.ray_options import RayOptions
from judge.engine.session import RunOptions, Session

ROOT = Path(__file__).resolve().parents[1]
V1, V2 = ROOT / "examples" / "bot_v1.jsonl", ROOT / "examples" / "bot_v2.jsonl"


def _specs(tmp_path: Path) -> tuple[MethodSpec, MethodSpec]:
    generate = GenerateConfig(cache_path=str(tmp_path / "cache.sqlite"))
    return (MethodSpec.from_mapping({"name": "yn", "prompt": "yesno", "backend": "mock", "generate": generate}),
            MethodSpec.from_mapping({"name": "pw", "type": "pairwise", "backend": "mock", "generate": generate}))


def test_a_sessions_rows_are_the_engines_and_its_counters_outlive_it(tmp_path: Path):
    point, pairwise = _specs(tmp_path)
    pairs = pairs_between(load_items(str(V1)), load_items(str(V2)), file_a=str(V1), file_b=str(V2)).pairs
    items = pair_items(pairs)
    prep, compared = prepare(point, items, None), prepare_pairs(pairwise, pairs, None)
    session = Session(RunOptions(progress=False, log=lambda msg: None))
    rows: list[dict[str, Any]] = []
    kept: list[dict[str, Any]] = []
    with session.plan([[Entry("yn", prep, items)], [Entry("pw", compared, pairs)]]):
        assert session.rows(prep, items, rows.append, kept.append, quality=None, seed=prep.seed) == 0
        assert session.rows(compared, pairs, rows.append, None, quality=None) == 0
    assert rows[:len(items)] == kept and len(rows) == len(items) + len(pairs)
    used = session.counters()
    assert used["cache_misses"] > 0 and used["cache_hits"] == 0
    expected: list[dict[str, Any]] = []
    pool = BackendPool()  # the engine's own calls, on the cache the session filled
    run_rows(build(prep, pool), items, "yn", None, expected.append, seed=prep.seed)
    compare_rows(build(compared, pool), pairs, "pw", None, expected.append)
    pool.close()
    assert rows == expected
    assert pool.counters()["cache_misses"] == 0


def test_check_counts_without_loading_and_ray_refuses_a_provider_batch(tmp_path: Path):
    point, _ = _specs(tmp_path)
    items = load_items(str(V1))
    prep = prepare(point, items, None)
    session = Session(RunOptions(ray=RayOptions("auto"), log=lambda msg: None))
    lines = session.check([[Entry("yn (8 items)", prep, items)]])
    assert lines[0].split() == ["cell", "items", "cached", "prompt", "tokens", "(after", "reuse)", "est.", "time"]
    assert lines[1].startswith("yn (8 items)") and lines[-1] == "total: 8 items, 0 prompt tokens"
    assert not (tmp_path / "cache.sqlite").exists()
    with pytest.raises(RuntimeError, match="not open"):
        session.build(prep)
    # Nothing here is batched: planning on a cluster is allowed, and nothing opens until the session does.
    assert session.plan([[Entry("yn", prep, items)]]) is session and session.counters() == {}


def test_compare_refuses_a_provider_batch_on_ray_and_an_actor_flag_without_ray(tmp_path: Path, capsys):
    hosted = ["compare", str(V1), str(V2), "--backend", "openai", "--model", "fault-model", "--base-url",
              "http://127.0.0.1:9/v1", "--cache-path", str(tmp_path / "c.sqlite"), "--against", "none", "--no-progress"]
    assert main([*hosted, "--batch", "--ray", "auto"]) == 2
    assert "field '--batch'" in capsys.readouterr().err and not (tmp_path / "c.sqlite").exists()
    assert main(["compare", str(V1), str(V2), "--backend", "mock", "--ray-cpus", "1"]) == 2
    assert "field '--ray-cpus': applies to a run on a Ray cluster" in capsys.readouterr().err


def test_compare_check_lists_the_pairs_and_the_pointwise_method(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.setenv("JUDGE_CACHE", str(tmp_path / "c.sqlite"))
    assert main(["compare", str(V1), str(V2), "--backend", "mock", "--check"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[:3] for line in out[1:3]] == [["pairwise", "(8", "pairs)"], ["criteria", "(16", "items)"]]
    assert not (tmp_path / "c.sqlite").exists()

