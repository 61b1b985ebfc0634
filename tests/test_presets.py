"""Every shipped preset (judge/methods/presets.toml) runs through ``judge score``, ``judge bench`` and ``judge run`` on a
file it is allowed on: the examples with a reference and a next user turn on every item (the presets that read
them need them), and the head, which is bound to its model, on conversations it did not learn from.

The presets that run a language model run on the product's mock backend here (the model is not what is
checked: the way through each command is); the real models of the classic scorers load once per process.
The head preset is bound to its model: the slow suite runs its table with SmolLM2 and a head fitted on it
through the three commands (tests/test_shipped_heads.py scores with the shipped head on Qwen2.5-Coder-1.5B),
and ``pytest -m long`` runs the three commands with the shipped head and its Qwen.
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


def _tables(names: list[str]) -> list[dict]:
    """The presets' own tables (the presets file is a methods file)."""
    return [m for m in tomllib.loads(PRESETS.read_text())["methods"] if m["name"] in names]


def _methods(tables: list[dict]) -> str:
    return "\n".join("[[methods]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in t.items()) for t in tables)


def _config(path: Path, data: Path, out: Path, names: list[str], extra: str = "",
            tables: list[dict] | None = None) -> Path:
    """A ``judge run`` config whose methods are the presets' own tables (or ``tables``, edited copies)."""
    head = f'name = "presets"\noutput = "{out}"\ndatasets = [{{ path = "{data}", name = "examples" }}]\n{extra}'
    path.write_text(head + "\n" + _methods(_tables(names) if tables is None else tables))
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


@pytest.mark.slow  # a fit on 8 items and three commands on 4 with SmolLM2
def test_the_head_preset_scores_benches_and_runs_on_smollm2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The head preset's own table, its model and head swapped for the embedded SmolLM2 and a head fitted on it
    (from one example system's file, conversations the scored file does not hold), through ``judge
    score``, ``judge bench`` and ``judge run`` with the real model, each on a fresh cache: rows with finite
    scores, bench's summary (it once scored every item, then died in the summary on a key the head's
    description lacks), the run's cell. The shipped head on its Qwen runs in tests/test_shipped_heads.py."""
    import math

    head = tmp_path / "smollm2-head.json"

    def judge(cache: str, *args: str) -> tuple[int, str, str]:
        monkeypatch.setenv("JUDGE_CACHE", str(tmp_path / f"{cache}.sqlite"))
        return _judge(*args, "--no-progress")

    code, _, err = judge("fit", "fit", str(ROOT / "examples" / "bot_v1.jsonl"), "--prompt", "yesno-criteria",
                         "-o", str(head))
    assert code == 0, err[-3000:]
    (table,) = _tables(HEADS)
    assert table["model"] == "qwen2.5-coder-1.5b"
    table = {k: v for k, v in table.items() if k != "model"} | {"head": str(head)}  # SmolLM2: the default model
    methods = tmp_path / "methods.toml"
    methods.write_text(_methods([table]))
    common = ("--methods-file", str(methods), "--method", "criteria-head", "--threads", "2", "--limit", "4")
    code, _, err = judge("score", "score", str(EXAMPLES), *common, "-o", str(tmp_path / "rows.jsonl"))
    assert code == 0, err[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and len({r["score"] for r in rows}) > 1
    assert all(r["error"] is None and math.isfinite(r["score"]) and r["method"] == "criteria-head" for r in rows)
    meta = json.loads((tmp_path / "rows.meta.json").read_text())
    assert meta["scorer"]["method"] == "head" and meta["scorer"]["trained_on"] == ["bot_v1:all"], meta
    code, out, err = judge("bench", "bench", str(EXAMPLES), *common, "--results", str(tmp_path / "bench"))
    assert code == 0, err[-3000:]
    assert (f"method criteria-head: prompt yesno-criteria, model smollm2 (embedded) (llamacpp), head {head}"
            in out and "spearman" in out), out
    config = _config(tmp_path / "run.toml", EXAMPLES, tmp_path / "run", HEADS, "limit = 4\n", tables=[table])
    code, _, err = judge("run", "run", str(config), "--threads", "2")
    assert code == 0, err[-3000:]
    (result,) = json.loads((tmp_path / "run" / "summary.json").read_text())["results"]
    assert (result["method"], result["n"], result["n_failed"]) == ("criteria-head", len(rows), 0)


@pytest.mark.long  # the real Qwen2.5-Coder-1.5B: the SmolLM2 test above takes the same way through the commands
def test_the_head_preset_scores_benches_and_runs_with_its_model(tmp_path: Path):
    """On rated conversations it did not learn from, with its own model: ``judge bench`` prints its summary
    (it once scored every item, then died in the summary on a key the head's description lacks)."""
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
