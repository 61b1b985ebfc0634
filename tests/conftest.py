"""Shared fixtures: the benchmark data folder beside the repository and the real embedded model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from judge.accounting.rates import Rate

ROOT = Path(__file__).resolve().parents[1]
#: The benchmark files, beside the repository; ``JUDGE_TEST_DATA`` points elsewhere (the suite's own
#: test of the missing-data message uses it).
DATA_DIR = Path(os.environ.get("JUDGE_TEST_DATA") or ROOT.parent / "shared" / "data")
#: What a newcomer runs to get them.
FETCH = f"judge data download --data-dir {DATA_DIR}"
MISSING = f"benchmark data not found at {DATA_DIR}"


def data_missing() -> bool:
    return not DATA_DIR.is_dir()


def skip_unless_required(why: str | None, required_by: str, what: str) -> None:
    """Skip the tests of ``what`` when they cannot run here (``why``), or fail them when the environment variable
    ``required_by`` is set (CI sets it where it installed what they need, so a broken install is not a skip)."""
    if why is None:
        return
    if os.environ.get(required_by):
        pytest.fail(f"the {what} tests cannot run: {why}")
    pytest.skip(f"the {what} tests cannot run here: {why}")


def pytest_sessionstart(session: pytest.Session) -> None:
    """One message at the start of the run (at any verbosity), instead of one error per test that reads the data."""
    if data_missing():
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = (f"judge: {MISSING}: the tests that read it are skipped. Fetch it with `{FETCH}` "
                   "(`judge data list` shows the files and where they come from).")
        if reporter is not None:
            reporter.write_line(message, yellow=True)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A ``long`` test is a ``slow`` one that CI leaves out (``pytest -m "slow and not long"``) to stay within its
    time: marking it ``long`` is enough, and it never reaches the README's command (``-m "not slow"``). This
    runs before ``-m`` selects, so both expressions see the mark."""
    for item in items:
        if item.get_closest_marker("long") is not None and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if data_missing():
        pytest.skip(f"{MISSING} (fetch it with `{FETCH}`)")
    return DATA_DIR


@pytest.fixture(scope="session")
def turn_examples(tmp_path_factory) -> Path:
    """The example file's turn-level records, each with a reference (ROUGE-L needs one): a small rated
    file that model-free ensembles can learn weights on."""
    import json

    records = [r for r in map(json.loads, (ROOT / "examples" / "dialogues.jsonl").read_text().splitlines())
               if "response" in r]
    assert len(records) >= 10
    path = tmp_path_factory.mktemp("examples") / "turns.jsonl"
    path.write_text("".join(json.dumps({**r, "reference": r.get("reference") or "Sorry, I am not sure."}) + "\n"
                            for r in records))
    return path


@pytest.fixture(scope="session")
def smollm2():
    """The real embedded default model (SmolLM2-135M-Instruct via llama.cpp), loaded once per session."""
    from judge.backends import create_backend
    from judge.core.config import GenerateConfig

    backend = create_backend("llamacpp", None, GenerateConfig(threads=2))
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def reuse():
    """SmolLM2 reusing the KV prefix with ``n_batch=32``, so that prompts of a few dozen tokens reuse whole
    batches (the prefix-reuse and likelihood tests compare it with ``scratch``)."""
    from judge.backends import create_backend
    from judge.core.config import GenerateConfig

    backend = create_backend("llamacpp", None, GenerateConfig(threads=2), n_batch=32)
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def scratch():
    """SmolLM2 evaluating every prompt from an empty KV cache (``reuse_prefix=False``), same batches."""
    from judge.backends import create_backend
    from judge.core.config import GenerateConfig

    backend = create_backend("llamacpp", None, GenerateConfig(threads=2), reuse_prefix=False, n_batch=32)
    yield backend
    backend.close()


@pytest.fixture(scope="session", autouse=True)
def _isolated_home(tmp_path_factory):
    """Keep the whole suite (CLI subprocesses included) out of the user's home: HOME, XDG_CACHE_HOME,
    JUDGE_HOME and JUDGE_CACHE point into a temporary folder, so a test that drops one of them (or a
    future default under ~) still writes nothing to ~/.cache/judge or anywhere else in the real home."""
    import os

    home = tmp_path_factory.mktemp("home")
    isolated = {
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "JUDGE_HOME": str(home / ".cache" / "judge"),
        "JUDGE_CACHE": str(tmp_path_factory.mktemp("judge-cache") / "cache.sqlite"),
    }
    old = {key: os.environ.get(key) for key in isolated}
    os.environ.update(isolated)
    yield home
    for key, value in old.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    """A real OpenAI-compatible server, ``python -m llama_cpp.server``, serving the packaged SmolLM2 on a
    free loopback port; yields its base URL (``http://127.0.0.1:PORT/v1``) and stops it afterwards."""
    import socket
    import subprocess
    import time
    import urllib.request

    from judge.backends.llamacpp_cpu import llama_server_command
    from judge.models.packaged import resolve_model_path

    pytest.importorskip("llama_cpp.server.app", reason="needs llama-cpp-python[server]")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    cmd = llama_server_command(["--model", str(resolve_model_path(None)), "--host", "127.0.0.1", "--port", str(port),
                                "--n_ctx", "2048", "--n_threads", "2"])
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited ({proc.returncode}): {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base}/v1/models", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not become ready in 180 s: {log.read_text()[-2000:]}")
            time.sleep(0.3)
        yield f"{base}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def hf_smollm2(tmp_path_factory):
    """The same SmolLM2 GGUF loaded by the transformers backend (dequantised to fp32; slow, once per
    session) and saved as safetensors under a temporary cache (``.gguf_copy``) for fast reloads and vLLM."""
    pytest.importorskip("torch", reason="the transformers backend needs the [hf] extra (torch)")
    pytest.importorskip("transformers", reason="the transformers backend needs the [hf] extra")
    from judge.backends import create_backend
    from judge.core.config import GenerateConfig

    cache = tmp_path_factory.mktemp("gguf-cache")
    backend = create_backend("transformers", None, GenerateConfig(threads=2, batch_size=8), gguf_cache=str(cache))
    yield backend
    backend.close()


@pytest.fixture
def fixed_rate(monkeypatch):
    """``--check``'s time estimate reads a fixed rate instead of measuring the model here: calibrating a
    Qwen model costs 20 to 40 s, and what these tests check is the counted tokens and the cells (the
    calibration itself is tests/test_cost.py's)."""
    from judge.engine import cost

    monkeypatch.setattr(cost, "rates_for", lambda pool, specs, log, measure: dict.fromkeys(specs, FIXED_RATE))
    return FIXED_RATE


#: The rate the cost tests and ``fixed_rate`` read: 0.5 s per decode + 100 tokens/s.
FIXED_RATE = Rate("test", 2, 0.5, 0.01, "2026-01-01", "calibration")
