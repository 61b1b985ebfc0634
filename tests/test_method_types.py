"""A method type from outside the package, registered once, runs through ``judge run`` (a TOML config),
``judge score`` and ``judge serve`` (a real HTTP server on 127.0.0.1) with no change to ``judge``.

The type is ``tests/fixtures/toy_method.py``; its one registration is an entry point in the group
``judge.methods`` of a distribution written to a temporary folder on ``PYTHONPATH``, as an installed
plugin would declare it. Each command runs in a subprocess that finds it there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RATED = ROOT / "tests" / "fixtures" / "rated_0to2.jsonl"
METHODS = """
[[methods]]
name = "words2"
type = "wordcount"
options = { scale = 2 }

[[methods]]
name = "length"
scorer = "length"

[[methods]]
name = "both"
type = "ensemble"
members = ["words2", "length"]
combine = "mean"
"""


@pytest.fixture()
def plugin_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a process where the toy type is installed: its module and its entry point."""
    site = tmp_path / "site"
    dist = site / "toy_method_type-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-method-type\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[judge.methods]\nwordcount = toy_method:WordCountType\n")
    paths = [str(site), str(ROOT / "tests" / "fixtures"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def _judge(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def _words(record: dict) -> int:
    return len((record.get("response") or "").split())


@pytest.mark.slow
def test_a_toy_type_runs_in_a_judge_run_config(plugin_env: dict[str, str], tmp_path: Path):
    config = tmp_path / "toy.toml"
    config.write_text(f'datasets = [{{ path = "{RATED}", name = "toy", quality = "overall" }}]\nbootstrap = 50\n'
                      + METHODS)
    out = tmp_path / "results"
    proc = _judge(plugin_env, "run", str(config), "-o", str(out), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["methods"]["words2"]["type"], summary["methods"]["words2"]["scale"]) == ("wordcount", 2)
    records = {r["id"]: r for r in map(json.loads, RATED.read_text().splitlines())}
    cells = list((out / "items" / "words2").rglob("seed0.jsonl"))
    assert len(cells) == 1
    rows = [json.loads(line) for line in cells[0].read_text().splitlines()]
    assert {r["id"]: r["score"] for r in rows} == {i: 2.0 * _words(rec) for i, rec in records.items()}
    assert {r["method"] for r in summary["results"]} == {"words2", "length", "both"}


def test_a_toy_type_is_refused_with_its_own_message(plugin_env: dict[str, str], tmp_path: Path):
    config = tmp_path / "toy.toml"
    config.write_text(f'datasets = [{{ path = "{RATED}", name = "toy", quality = "overall" }}]\n'
                      '[[methods]]\ntype = "wordcount"\noptions = { scale = "big" }\n')
    proc = _judge(plugin_env, "run", str(config), "--check")
    assert proc.returncode != 0
    assert "methods[0].options.scale: must be a number, got 'big'" in proc.stderr
    config.write_text(f'datasets = [{{ path = "{RATED}", name = "toy", quality = "overall" }}]\n'
                      '[[methods]]\ntype = "wordcount"\nprompt = "yesno"\n')
    proc = _judge(plugin_env, "run", str(config), "--check")
    assert "methods[0].prompt: unknown key" in proc.stderr


def test_a_toy_type_runs_in_judge_score(plugin_env: dict[str, str], tmp_path: Path):
    methods = tmp_path / "methods.toml"
    methods.write_text(METHODS)
    out = tmp_path / "rows.jsonl"
    proc = _judge(plugin_env, "score", str(RATED), "--methods-file", str(methods), "--method", "words2",
                  "--quality", "overall", "-o", str(out), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    records = [json.loads(line) for line in RATED.read_text().splitlines()]
    assert [r["score"] for r in rows] == [2.0 * _words(rec) for rec in records]
    assert {r["method"] for r in rows} == {"words2"}


def test_a_toy_type_is_served(plugin_env: dict[str, str], tmp_path: Path):
    from tests.test_serve import call, example_records, start_server

    methods = tmp_path / "methods.toml"
    methods.write_text(METHODS)
    srv = start_server(tmp_path, "--methods-file", str(methods), "--method", "words2", env=plugin_env)
    try:
        record = example_records()[0]
        status, body = call(srv, "POST", "/v1/score", record)
        assert status == 200, body
        row = json.loads(body)
        assert row["method"] == "words2" and row["score"] == 2.0 * _words(record)
        status, body = call(srv, "GET", "/v1/info")
        assert status == 200 and json.loads(body)["spec"]["type"] == "wordcount"
    finally:
        srv.stop()


def test_a_table_takes_the_keys_its_type_declares():
    """The keys of a TOML table are its type's fields: a likelihood table may say seeds and allow_future
    (fields of the type), never a prompt (another type's field)."""
    from judge.core.errors import InputError
    from judge.engine.spec import method_type
    from judge.harness.config import parse_experiment

    (spec,) = parse_experiment({"datasets": ["TU"], "methods": [
        {"type": "likelihood", "backend": "mock", "seeds": [0, 1], "allow_future": True}]}).methods
    assert (spec.seeds, spec.allow_future, spec.settings.signal) == ((0, 1), True, "pmi")
    assert {"seeds", "allow_future", "signal", "backend"} <= method_type("likelihood").table_keys()
    with pytest.raises(InputError, match=r"methods\[0\]\.prompt: unknown key"):
        parse_experiment({"datasets": ["TU"], "methods": [{"type": "likelihood", "prompt": "yesno"}]})


def test_a_backend_lacking_what_a_type_needs_is_named():
    from judge.backends.base import Capabilities

    caps = Capabilities(full_vocab=True, hidden_states=True)
    assert caps.lacks({"hidden_states"}) == [] and caps.lacks(["sequence_logprobs"]) == ["sequence_logprobs"]
    with pytest.raises(ValueError, match="no such capability: telepathy"):
        caps.lacks({"telepathy"})
