"""``--method NAME`` (shipped presets and ``--methods-file``) in judge score, bench and serve.

The user's methods file here holds model-free classic scorers, so these run the real CLI, real data
and a real HTTP server without loading a language model; the presets are checked to parse and prepare.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judge.core.errors import InputError, UnknownNameError
from judge.datasets import load_items
from judge.engine import prepare
from judge.engine.kinds import check_live, method_kinds
from judge.engine.named import PRESETS, load_methods, named_method

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "dialogues.jsonl"
METHODS = """
[[methods]]
name = "words"
type = "classic"
scorer = "length"
"""


def _judge(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=ROOT, env={**os.environ}, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture()
def methods_file(tmp_path: Path) -> Path:
    path = tmp_path / "methods.toml"
    path.write_text(METHODS)
    return path


def test_every_preset_parses_and_prepares():
    methods = load_methods(PRESETS)
    assert {"yesno", "criteria", "pmi", "criteria-pmi", "criteria-pmi-pmimax", "criteria-ref-user"} <= set(methods)
    items = [it for it in load_items(str(EXAMPLES)) if it.level == "turn"]
    for name in ("yesno", "criteria", "pmi", "criteria-pmi", "criteria-pmi-pmimax"):
        assert prepare(methods[name], items).spec.name == name
    assert named_method("criteria-pmi").settings.members[1].type == "likelihood"


def test_preset_kinds_come_from_what_their_methods_read():
    """Reports classify a preset by its members' declarations; the one that reads the next user turn opts
    in with allow_future (so judge score and bench run it, labelled uses-future) and is refused by serve."""
    methods = load_methods(PRESETS)
    for name in ("yesno", "criteria", "pmi", "criteria-pmi", "criteria-pmi-pmimax"):
        kinds = method_kinds(methods[name])
        assert (kinds.label, methods[name].allow_future) == ("reference-free", False), name
    ref_user = methods["criteria-ref-user"]
    assert method_kinds(ref_user).label == "uses-future, reference-based"  # its kind first (docs/harness.md)
    assert ref_user.allow_future and methods["next-user"].allow_future
    items = [it for it in load_items(str(EXAMPLES)) if it.level == "turn"]
    assert prepare(ref_user, items).spec.name == "criteria-ref-user"  # turn level: refused without allow_future
    with pytest.raises(InputError, match="judge serve refuses it"):
        check_live(ref_user, method_kinds(ref_user))


def test_serve_refuses_the_preset_that_reads_the_next_user_turn():
    proc = _judge("serve", "--method", "criteria-ref-user", "--port", "0")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "judge serve refuses it" in proc.stderr


def test_unknown_names_and_bad_files_are_named(tmp_path: Path):
    with pytest.raises(UnknownNameError, match="criteria"):
        named_method("critera")
    bad = tmp_path / "bad.toml"
    bad.write_text('[[methods]]\nname = "x"\npromt = "yesno"\n')
    with pytest.raises(InputError, match=r"bad\.toml.*prompt"):
        load_methods(bad)


def test_score_runs_a_named_method_of_a_file(methods_file: Path, tmp_path: Path):
    out = tmp_path / "rows.jsonl"
    proc = _judge("score", str(EXAMPLES), "--methods-file", str(methods_file), "--method", "words", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    direct = tmp_path / "direct.jsonl"
    assert _judge("score", str(EXAMPLES), "--scorer", "length", "--name", "words", "-o", str(direct)).returncode == 0
    assert rows == [json.loads(x) for x in direct.read_text().splitlines()]


def test_method_and_prompt_flags_clash(methods_file: Path):
    proc = _judge("score", str(EXAMPLES), "--methods-file", str(methods_file), "--method", "words", "--prompt", "yesno")
    assert proc.returncode == 2 and "--method names the whole method" in proc.stderr


@pytest.mark.slow
def test_bench_runs_a_named_method(methods_file: Path, data_dir: Path):
    proc = _judge("bench", "--dataset", "FT", "--data-dir", str(data_dir), "--limit", "30",
                  "--methods-file", str(methods_file), "--method", "words")
    assert proc.returncode == 0, proc.stderr
    assert "method words: scorer length" in proc.stdout and "spearman" in proc.stdout


def test_serve_runs_a_named_method(methods_file: Path, tmp_path: Path):
    from tests.test_serve import call, example_records, start_server

    srv = start_server(tmp_path, "--methods-file", str(methods_file), "--method", "words")
    try:
        status, body = call(srv, "POST", "/v1/score", example_records()[0])
        assert status == 200, body
        row = json.loads(body)
        assert row["method"] == "words" and row["score"] == len(example_records()[0]["response"].split())
    finally:
        srv.stop()


def test_runtime_flags_apply_to_every_model_the_method_runs():
    """--backend, --model, --threads, --n-ctx, --no-cache and --backend-option reach both members of an
    ensemble preset; the method's own prompt and signal stay."""
    from judge.cli import build_parser
    from judge.cli.options import spec_from_args

    args = build_parser().parse_args(["score", str(EXAMPLES), "--method", "criteria-pmi", "--backend", "mock",
                                      "--model", "m.gguf", "--threads", "1", "--n-ctx", "1024", "--no-cache",
                                      "--backend-option", "n_batch=64"])
    spec = spec_from_args(args)
    criteria, pmi = spec.settings.members
    assert (criteria.settings.prompt, pmi.type, pmi.settings.signal) == ("yesno-criteria", "likelihood", "pmi")
    for member in spec.settings.members:
        assert (member.backend, member.model, dict(member.options)) == ("mock", "m.gguf", {"n_batch": 64})
        gen = member.generate
        assert (gen.threads, gen.max_context, gen.cache, gen.batch_size) == (1, 1024, False, 16)
    untouched = spec_from_args(build_parser().parse_args(["score", str(EXAMPLES), "--method", "criteria-pmi"]))
    assert untouched == named_method("criteria-pmi")


def test_method_defining_flags_are_refused_not_ignored(methods_file: Path):
    """Every flag that would change what the method is gets named, instead of being quietly dropped."""
    proc = _judge("score", str(EXAMPLES), "--method", "criteria", "--top-k", "5", "--selector", "bm25", "--k", "2",
                  "--no-group-guard", "--fit", "cv")
    assert proc.returncode == 2
    assert "drop --top-k, --selector, --k, --no-group-guard, --fit" in proc.stderr


def test_a_preset_runs_on_the_mock_backend_like_its_prompt(tmp_path: Path):
    """``--method criteria --backend mock`` scores the rows ``--prompt yesno-criteria`` scores (names aside)."""
    named, direct = tmp_path / "named.jsonl", tmp_path / "direct.jsonl"
    assert _judge("score", str(EXAMPLES), "--method", "criteria", "--backend", "mock", "--name", "c",
                  "-o", str(named)).returncode == 0
    assert _judge("score", str(EXAMPLES), "--prompt", "yesno-criteria", "--backend", "mock", "--name", "c",
                  "-o", str(direct)).returncode == 0
    rows = [json.loads(x) for x in named.read_text().splitlines()]
    assert rows and rows == [json.loads(x) for x in direct.read_text().splitlines()]


def test_another_backend_without_a_model_drops_the_methods_model():
    """As ``judge run --backend``: a model named for one backend is not sent to another; its default runs."""
    from judge.engine.named import with_runtime

    spec = named_method("criteria-pmi")
    pinned = with_runtime(spec, model="qwen2.5-coder-1.5b")
    assert [m.model for m in pinned.settings.members] == ["qwen2.5-coder-1.5b"] * 2
    assert [m.model for m in with_runtime(pinned, backend="mock").settings.members] == [None, None]
    assert [m.model for m in with_runtime(pinned, backend="mock", model="m").settings.members] == ["m", "m"]
    assert with_runtime(pinned, generate={"threads": 1}).settings.members[0].model == "qwen2.5-coder-1.5b"
