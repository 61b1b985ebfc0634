"""Any annotated file is a benchmark: `judge bench FILE`, `--scale`, and sets given by path in `judge run`
configs, as a user runs them (subprocesses, real files). What is tested is how a set is found, read and
rated, not a model: the commands run on the mock backend (`--backend mock`, milliseconds an item), and
the real model's bench and run paths are tested in tests/test_engine.py and tests/test_shipped_configs.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
RATED = FIXTURES / "rated_0to2.jsonl"  # 8 items, overall on a declared 0-2 scale, two empty responses


def _cli(*args: str) -> subprocess.CompletedProcess:
    """``judge ARGS`` as a user runs it; ``bench`` on the mock backend (``run`` configs name it themselves)."""
    mock = ["--backend", "mock"] if args[0] == "bench" else []
    return subprocess.run([sys.executable, "-m", "judge", *args, *mock], cwd=ROOT, env={**os.environ}, capture_output=True,
                          text=True, timeout=900)


@pytest.mark.slow
def test_bench_a_users_jsonl_by_path_with_its_declared_scale(tmp_path):
    out = tmp_path / "rows.jsonl"
    proc = _cli("bench", str(RATED), "--selector", "bm25-context", "--k", "2", "--threads", "2", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "dataset   rated_0to2" in proc.stdout and "quality overall" in proc.stdout
    # 8 items of 4 conversations (two replies per context): below the floor, no interval and no p
    assert "n         8 items, 4 conversations" in proc.stdout and "too few conversations (4)" in proc.stdout
    assert "95% CI" not in proc.stdout and "p=" not in proc.stdout
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 8 and all(r["error"] is None and len(r["examples"]) == 2 for r in rows)
    # Empty responses are scored like any other and flagged.
    flagged = {r["id"] for r in rows if "empty_response" in r["flags"]}
    assert flagged == {r["id"] for r in map(json.loads, RATED.read_text().splitlines()) if not r["response"].strip()}


@pytest.mark.slow
def test_scale_flag_declares_a_scale_the_file_does_not(tmp_path):
    lines = [json.loads(x) for x in RATED.read_text().splitlines()]
    for x in lines:
        x.pop("scales", None)
    bare = tmp_path / "bare.jsonl"
    bare.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    proc = _cli("bench", str(bare), "--threads", "2", "--limit", "4")
    assert proc.returncode == 2 and "scale" in proc.stderr and "overall" in proc.stderr, proc.stderr
    proc = _cli("bench", str(bare), "--threads", "2", "--limit", "4", "--scale", "overall=0:2")
    assert proc.returncode == 0, proc.stderr
    assert "n         4" in proc.stdout
    # A declared scale the ratings do not fit is refused, naming the record and field.
    proc = _cli("bench", str(bare), "--threads", "2", "--scale", "overall=0:1")
    assert proc.returncode == 2 and "scores.overall" in proc.stderr, proc.stderr


@pytest.mark.slow
def test_bench_a_dstc10_file_under_an_unregistered_name(tmp_path, data_dir):
    records = json.loads((data_dir / "dstc10_track5" / "dailydialog-zhao_eval.json").read_text())[::60]
    path = tmp_path / "mybot_eval.json"
    path.write_text(json.dumps(records))
    proc = _cli("bench", str(path), "--threads", "2")
    assert proc.returncode == 2 and "--quality" in proc.stderr  # several qualities, none called overall
    proc = _cli("bench", str(path), "--threads", "2", "--quality", "appropriateness", "--scale", "appropriateness=1:5")
    assert proc.returncode == 0, proc.stderr
    assert "dataset   mybot" in proc.stdout and f"n         {len(records)}" in proc.stdout


@pytest.mark.slow
def test_the_two_newer_dstc10_sets_by_name():
    for name, quality in (("PZ", "appropriateness"), ("convai2-grade", "relevance")):
        proc = _cli("bench", "--dataset", name, "--data-dir", str(FIXTURES), "--threads", "2", "--limit", "6")
        assert proc.returncode == 0, proc.stderr
        assert f"quality {quality}" in proc.stdout and "n         6" in proc.stdout


@pytest.mark.slow
def test_run_config_with_a_set_given_by_path(tmp_path, data_dir):
    config = tmp_path / "team.toml"
    config.write_text(
        f'datasets = ["DGR", {{ path = "{RATED}", name = "team-bot", quality = "overall" }}]\n'
        '[[methods]]\nname = "zero"\nprompt = "yesno"\nbackend = "mock"\n'
        '[[methods]]\ntype = "classic"\nscorer = "length"\n')
    out = tmp_path / "r"
    proc = _cli("run", str(config), "--data-dir", str(data_dir), "--limit", "6", "-o", str(out), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    team = next(d for d in summary["datasets"] if d["name"] == "team-bot")
    assert team["qualities"] == ["overall"] and team["path"].endswith("rated_0to2.jsonl")
    res = {(r["method"], r["dataset"]): r for r in summary["results"]}
    assert res[("zero", "team-bot")]["n"] == 6 and res[("length", "team-bot")]["spearman"] is not None
    assert "team-bot" in (out / "leaderboard.md").read_text()
