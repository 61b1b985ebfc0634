"""Every shipped preset (judge/methods/presets.toml) runs through ``judge score``, ``judge bench`` and ``judge run`` on a
file it is allowed on: the examples with a reference and a next user turn on every item (the presets that read
them need them), and the head, which is bound to its model, on conversations it did not learn from.

The presets that run a language model run on the product's mock backend here (the model is not what is
checked: the way through each command is); the real models of the classic scorers load once per process.
The head preset needs its own model, Qwen2.5-Coder-1.5B: the slow suite runs it.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from judge.cli import main
from judge.engine.named import PRESETS, load_methods

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "dialogues.jsonl"
PRESET_NAMES = list(load_methods(PRESETS))
#: Bound to the model they were fitted on: run with that model (slow suite), never on the mock backend.
HEADS = [n for n, spec in load_methods(PRESETS).items() if spec.type == "head"]


def _judge(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def allowed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The examples' turn-level items, each with a reference and the user's next turn."""
    path = tmp_path_factory.mktemp("presets") / "examples.jsonl"
    records = [json.loads(line) for line in EXAMPLES.read_text().splitlines()]
    turns = [{**r, "reference": r.get("reference") or r["response"], "next_user": "Thanks, that helps."}
             for r in records if "dialog" not in r]
    path.write_text("".join(json.dumps(r) + "\n" for r in turns))
    return path


def _config(path: Path, data: Path, out: Path, names: list[str], extra: str = "") -> Path:
    """A ``judge run`` config whose methods are the presets' own tables (the presets file is a methods file)."""
    tables = [m for m in tomllib.loads(PRESETS.read_text())["methods"] if m["name"] in names]
    lines = [f'name = "presets"\noutput = "{out}"\ndatasets = [{{ path = "{data}", name = "examples" }}]\n{extra}']
    for table in tables:
        lines.append("[[methods]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in table.items()))
    path.write_text("\n".join(lines))
    return path


def test_every_preset_is_run_by_these_tests():
    """A new preset joins the mock run below, or (bound to a model) the slow one."""
    assert set(PRESET_NAMES) == set(_mock_presets()) | set(HEADS) and HEADS == ["criteria-head"]


def _mock_presets() -> list[str]:
    return [n for n in PRESET_NAMES if n not in HEADS]


@pytest.mark.slow
def test_every_preset_scores_benches_and_runs_on_the_mock_backend(allowed: Path, tmp_path: Path):
    n = len(allowed.read_text().splitlines())
    for name in _mock_presets():
        out = tmp_path / f"{name}.jsonl"
        code, _, err = _judge("score", str(allowed), "--method", name, "--backend", "mock", "-o", str(out))
        assert code == 0, (name, err)
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert len(rows) == n and all(r["error"] is None and r["method"] == name for r in rows), name
        code, text, err = _judge("bench", str(allowed), "--method", name, "--backend", "mock",
                                 "--results", str(tmp_path / f"bench-{name}"))
        assert code == 0, (name, err)
        assert f"method {name}: " in text and "spearman" in text, (name, text)
    config = _config(tmp_path / "run.toml", allowed, tmp_path / "run", _mock_presets())
    code, _, err = _judge("run", str(config), "--backend", "mock", "--no-progress")
    assert code == 0, err
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert {r["method"] for r in summary["results"]} == set(_mock_presets())
    assert all(r["n"] == n and not r["n_failed"] for r in summary["results"])


@pytest.mark.long  # the real Qwen2.5-Coder-1.5B (the qwen-1-5b extra, installed with the test extra)
def test_the_head_preset_scores_benches_and_runs_with_its_model(tmp_path: Path):
    """On rated conversations it did not learn from, with its own model: ``judge bench`` prints its summary
    (issue 53: it scored every item, then died in the summary on a key the head's description lacks)."""
    def judge(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "judge", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=900)

    common = ("--method", "criteria-head", "--threads", "2", "--limit", "4")
    proc = judge("score", str(EXAMPLES), *common, "-o", str(tmp_path / "rows.jsonl"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len((tmp_path / "rows.jsonl").read_text().splitlines()) == 4
    proc = judge("bench", str(EXAMPLES), *common, "--results", str(tmp_path / "bench"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "method criteria-head: prompt yesno-criteria, model qwen2.5-coder-1.5b (llamacpp), head " \
           "criteria-qwen2.5-coder-1.5b" in proc.stdout and "spearman" in proc.stdout, proc.stdout
    config = _config(tmp_path / "run.toml", EXAMPLES, tmp_path / "run", HEADS, "limit = 4\n")
    proc = judge("run", str(config), "--threads", "2", "--no-progress")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (result,) = json.loads((tmp_path / "run" / "summary.json").read_text())["results"]
    assert (result["method"], result["n"], result["n_failed"]) == ("criteria-head", 4, 0)
