"""Packaged models split into part wheels: assembly, checksum, refusal, the extras and `judge models`.

The Qwen2.5-Coder-0.5B parts (the ``qwen-0-5b`` extra, part of the ``test`` extra) are assembled for
real; the 1.5B model is left to the benchmark. Small files stand in for the parts where a test needs
parts it can break (a wrong hash, a kill in the middle of an assembly).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from judge.core.errors import BackendError
from judge.models import packaged as models
from judge.models.packaged import (
    QWEN_05B,
    QWEN_15B,
    ChecksumError,
    ModelPart,
    SplitModel,
    assemble,
    ensure_assembled,
)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "dialogues.jsonl"


def _small_parts(tmp_path: Path, sizes=(300_000, 1_000_000, 12_345)) -> tuple[list[Path], str]:
    """Part files of random bytes and the sha256 of their concatenation."""
    parts, h = [], hashlib.sha256()
    for i, n in enumerate(sizes, 1):
        data = os.urandom(n)
        p = tmp_path / "parts" / f"part{i:02d}.bin"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        h.update(data)
        parts.append(p)
    return parts, h.hexdigest()


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock"))


def test_assemble_concatenates_in_order_and_remembers_the_hash(tmp_path):
    parts, sha = _small_parts(tmp_path)
    dest = tmp_path / "cache" / "m.gguf"
    assert assemble(parts, dest, sha, size=1_312_345) == dest
    assert dest.read_bytes() == b"".join(p.read_bytes() for p in parts)
    assert _leftovers(dest.parent) == ["m.gguf"]
    assert dest.stat().st_mode & 0o777 == 0o644
    assert models._read_memo().get(models._memo_key(dest)) == sha  # the hash is remembered
    # Another order gives another file, refused.
    with pytest.raises(ChecksumError):
        assemble(parts[::-1], tmp_path / "cache" / "r.gguf", sha)


def test_assemble_refuses_a_mismatch_and_leaves_nothing(tmp_path):
    parts, sha = _small_parts(tmp_path)
    actual = sha
    wrong = "0" * 64
    dest = tmp_path / "cache" / "m.gguf"
    with pytest.raises(ChecksumError) as err:
        assemble(parts, dest, wrong)
    msg = str(err.value)
    assert str(dest) in msg and actual in msg and wrong in msg and "refused and removed" in msg
    assert not dest.exists() and _leftovers(dest.parent) == []
    with pytest.raises(ChecksumError, match="add up to 1312345 bytes, the pinned file has 1312346"):
        assemble(parts, dest, sha, size=1_312_346)
    assert not dest.exists()


_KILL_SCRIPT = """
import sys
from pathlib import Path
from judge.models.packaged import assemble
*parts, dest, sha = sys.argv[1:]
assemble([Path(p) for p in parts], Path(dest), sha)
"""


def test_killed_assembly_leaves_no_model_file(tmp_path):
    # The second part is a FIFO nobody writes to: the assembler has written part 1 to its temp file
    # and blocks there, mid-assembly, until it is killed.
    parts, sha = _small_parts(tmp_path)
    fifo = tmp_path / "parts" / "stuck.bin"
    os.mkfifo(fifo)
    dest = tmp_path / "cache" / "m.gguf"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", _KILL_SCRIPT, str(parts[0]), str(fifo), str(parts[2]),
                             str(dest), sha], cwd=ROOT, env=env)
    try:
        deadline = time.monotonic() + 60
        while not list(dest.parent.glob(".m.gguf.*.partial")):
            assert proc.poll() is None, "the assembler exited before reaching the stuck part"
            assert time.monotonic() < deadline, "the assembler never started writing"
            time.sleep(0.05)
        time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    (partial,) = dest.parent.glob(".m.gguf.*.partial")
    assert not dest.exists()
    # The next assembly (with the real parts) removes the dead one's temp file and finishes.
    assemble(parts, dest, sha)
    assert dest.read_bytes() == b"".join(p.read_bytes() for p in parts)
    assert not partial.exists() and _leftovers(dest.parent) == ["m.gguf"]


def test_missing_parts_name_the_pip_command(tmp_path):
    absent = SplitModel("ghost-model", "ghost.gguf", "0" * 64, 10, "ghost",
                        (ModelPart("judge-no-such-part1", "1.0", "judge_no_such_part1", "data/part01.bin"),))
    with pytest.raises(BackendError, match=r"ghost-model is not installed \(missing judge-no-such-part1==1.0\). "
                                           r"Install it with: pip install 'dialogue-judge\[ghost\]'.*unknown publisher"):
        ensure_assembled(absent, cache_dir=tmp_path)
    assert models.installed_state(absent, cache_dir=tmp_path) == "not installed"


def test_extras_pin_exactly_the_parts_judge_checks():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for model in (QWEN_05B, QWEN_15B):
        assert extras[model.extra] == [f"{p.distribution}=={p.version}" for p in model.parts]
    assert extras["qwen"] == ["dialogue-judge[qwen-0-5b]", "dialogue-judge[qwen-1-5b]"]
    # Both: the 1.5B runs the shipped head's preset (tests/test_shipped_heads.py, slow suite).
    assert "dialogue-judge[qwen-0-5b]" in extras["test"] and "dialogue-judge[qwen-1-5b]" in extras["test"]


# -- the real Qwen2.5-Coder-0.5B parts ------------------------------------------------------------------

@pytest.fixture(scope="module")
def qwen05() -> Path:
    """The 0.5B model assembled from its installed part wheels into this session's $JUDGE_HOME."""
    t0 = time.perf_counter()
    path = models.resolve_model_path("qwen2.5-coder-0.5b")
    print(f"assembled {path.name} in {time.perf_counter() - t0:.1f} s")
    return path


def test_qwen05_assembles_to_the_pinned_file(qwen05):
    assert qwen05 == models.models_dir() / QWEN_05B.filename
    assert qwen05.stat().st_size == QWEN_05B.size
    assert models.sha256_file(qwen05) == QWEN_05B.sha256
    assert models.installed_state(QWEN_05B) == "assembled"


def test_qwen05_is_not_rehashed_on_every_load(qwen05, monkeypatch):
    calls = []
    real = models.sha256_file

    def counting(path):
        calls.append(path)
        return real(path)

    monkeypatch.setattr(models, "sha256_file", counting)
    assert models.resolve_model_path("qwen2.5-coder-0.5b") == qwen05
    assert calls == []  # size and mtime unchanged: the remembered check stands
    os.utime(qwen05)  # a new mtime: checked again
    assert models.resolve_model_path("qwen2.5-coder-0.5b") == qwen05
    assert calls == [qwen05]


@pytest.mark.slow
def test_qwen05_tampered_part_is_refused(qwen05, tmp_path):
    real_parts = models.part_paths(QWEN_05B)
    bad = tmp_path / "part06.bin"
    data = bytearray(real_parts[-1].read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit, same size
    bad.write_bytes(bytes(data))
    cache = tmp_path / "cache"
    with pytest.raises(ChecksumError) as err:
        ensure_assembled(QWEN_05B, cache_dir=cache, parts=[*real_parts[:-1], bad])
    msg = str(err.value)
    assert str(cache / QWEN_05B.filename) in msg and QWEN_05B.sha256 in msg
    got = hashlib.sha256(b"".join(p.read_bytes() for p in [*real_parts[:-1], bad])).hexdigest()
    assert got in msg
    assert not (cache / QWEN_05B.filename).exists() and _leftovers(cache) == []


def test_qwen05_tampered_cached_file_is_replaced(qwen05, tmp_path, capfd):
    cache = tmp_path / "cache"
    cache.mkdir()
    fake = cache / QWEN_05B.filename
    fake.write_bytes(b"GGUF not the pinned model")
    path = ensure_assembled(QWEN_05B, cache_dir=cache)
    assert path == fake and fake.stat().st_size == QWEN_05B.size
    assert models.sha256_file(fake) == QWEN_05B.sha256
    assert "does not match" in capfd.readouterr().err


def _judge(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600, check=False)


def test_judge_models_lists_packaged_models(qwen05):
    proc = _judge("models")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for name in ("smollm2-135m-instruct (default)", "qwen2.5-coder-0.5b: assembled, 491 MB",
                 "qwen2.5-coder-1.5b:", QWEN_05B.sha256, QWEN_15B.sha256, "pip install 'dialogue-judge[qwen-1-5b]'"):
        assert name in out
    assert out.count("unknown publisher") == 2
    records = {r["name"]: r for r in json.loads(_judge("models", "--json").stdout)}
    assert records["qwen2.5-coder-0.5b"]["state"] == "assembled"
    assert records["qwen2.5-coder-0.5b"]["parts"] == 6 and records["qwen2.5-coder-1.5b"]["parts"] == 22
    data = tomllib.loads((ROOT / "judge" / "models" / "models_data.toml").read_text())["models"]
    from judge.report.model_figures import read_quality

    assert records["qwen2.5-coder-0.5b"]["measured"] == {**data["qwen2.5-coder-0.5b"],
                                                         "quality": read_quality()["qwen2.5-coder-0.5b"]}
    bad = _judge("models", "assemble", "smollm2-135m-instruct")
    assert bad.returncode == 2 and "qwen2.5-coder-0.5b" in bad.stderr


@pytest.mark.long
def test_qwen05_ranks_the_example_dialogues(qwen05):
    # Measured: 32 of the 36 (good, bad) pairs in order (SmolLM2, the default: 24; the 1.5B: 36).
    proc = _judge("score", str(EXAMPLES), "--model", "qwen2.5-coder-0.5b", "--threads", "2", "--no-cache")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert {r["method"] for r in rows} == {"yesno-none-k0"} and not any(r["error"] for r in rows)
    items = {json.loads(line)["id"]: json.loads(line) for line in EXAMPLES.read_text().splitlines()}
    score = {r["id"]: r["score"] for r in rows}
    good = [i for i, it in items.items() if it["system"] == "demo-good"]
    bad = [i for i, it in items.items() if it["system"] == "demo-bad"]
    assert len(score) == len(items) == 12 and len(good) == len(bad) == 6
    in_order = sum(score[g] > score[b] for g in good for b in bad)
    assert in_order >= 30, f"{in_order}/36 pairs in order: {score}"
    # Two responses to the very same context: the good one wins where the 0.5B separates them. The
    # museum pair is clear (.266 against .248); the bakery pair is a near tie for this model (.2097 against
    # .2111 without llama.cpp's extra buffers, the AMX fallback; the other way round with them), so it is
    # held only to the backends' tolerance.
    pairs = {}
    for group in ("bakery", "museum"):
        (g,) = [i for i in good if items[i].get("group") == group]
        (b,) = [i for i in bad if items[i].get("group") == group]
        pairs[group] = score[g] - score[b]
    assert pairs["museum"] > 0.01 and pairs["bakery"] > -0.02, pairs


@pytest.mark.long
def test_criteria_prompt_runs_on_a_packaged_qwen(qwen05):
    """The README's recommended command (`--prompt yesno-criteria` on a packaged Qwen), on the 0.5B
    that CI installs. Measured: 24 of 36 pairs in order (the 1.5B is where this prompt pays off,
    docs/journal.md); every item scored."""
    proc = _judge("score", str(EXAMPLES), "--model", "qwen2.5-coder-0.5b", "--prompt", "yesno-criteria",
                  "--threads", "2", "--no-cache")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(rows) == 12 and not any(r["error"] for r in rows)
    items = {json.loads(line)["id"]: json.loads(line) for line in EXAMPLES.read_text().splitlines()}
    score = {r["id"]: r["score"] for r in rows}
    good = [i for i, it in items.items() if it["system"] == "demo-good"]
    bad = [i for i, it in items.items() if it["system"] == "demo-bad"]
    assert sum(score[g] > score[b] for g in good for b in bad) >= 20


@pytest.mark.slow
def test_readme_best_cpu_ensemble_runs_on_a_packaged_qwen(qwen05, turn_examples, tmp_path):
    """The README's best-method command (criteria prompt + optional reference similarity + optional
    next-user sentiment), on the 0.5B that CI installs and turn records that carry references: every
    item is scored, the reference similarity joins, and the next-user member is left out (no record
    has a next user turn), as the output's meta says, with the method's kind."""
    out = tmp_path / "rows.jsonl"
    proc = _judge("score", str(turn_examples), "--model", "qwen2.5-coder-0.5b", "--member", "prompt=yesno-criteria",
                  "--allow-future",
                  "--member", "scorer=embedding-reference,optional=true",
                  "--member", "scorer=next-user-sentiment,optional=true", "--threads", "2", "--no-cache", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) >= 10 and not any(r["error"] for r in rows)
    assert len({r["score"] for r in rows}) > 2
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert meta["spec"]["optional"] == ["embedding-reference", "next-user-sentiment"]
    assert list(meta["scorer"]["left_out"]) == ["next-user-sentiment"], meta
    # Reference-based and uses-future: listed under the stronger caveat, uses-future.
    assert meta["kind"] == {"kind": "uses-future", "uses_future": True, "reads": ["next_user", "reference"]}
