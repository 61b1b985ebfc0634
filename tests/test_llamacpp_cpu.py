"""The AMX guard of the llama.cpp backend: a probe in a child process, remembered per llama.cpp build,
and loading without llama.cpp's extra buffer types where a signal killed the probe."""

from __future__ import annotations

import json

import llama_cpp
import pytest

from judge.backends import Prompt
from judge.backends.llamacpp import LlamaCppBackend
from judge.backends.llamacpp_cpu import cpu_advertises_amx, extra_buffers_usable, without_extra_buffers
from judge.core.config import GenerateConfig
from judge.models.packaged import resolve_model_path

FLAGS = "processor\t: 0\nflags\t\t: fpu sse avx2 avx512f amx_bf16 amx_tile amx_int8\n"


def test_amx_is_read_from_the_flags_line_only():
    assert cpu_advertises_amx(FLAGS)
    assert not cpu_advertises_amx("flags\t\t: fpu sse avx2 avx512f\n")
    assert not cpu_advertises_amx("model name\t: amx_tile lookalike\nflags\t\t: fpu\n")


def test_probe_answer_is_remembered_per_build(tmp_path, monkeypatch):
    """The answer lands in the JSON file under this build's key; a second call reads it without a child
    process (a stored False is honoured, which a fresh probe on a working build would never give)."""
    monkeypatch.setattr("judge.backends.llamacpp_cpu.cpu_advertises_amx", lambda cpuinfo=None: True)
    first = extra_buffers_usable(llama_cpp, resolve_model_path(None), tmp_path)
    stored = json.loads((tmp_path / "llamacpp-cpu-probe.json").read_text())
    assert list(stored.values()) == [first]
    key = next(iter(stored))
    (tmp_path / "llamacpp-cpu-probe.json").write_text(json.dumps({key: False}))
    assert extra_buffers_usable(llama_cpp, resolve_model_path(None), tmp_path) is False


@pytest.mark.parametrize(("returncode", "usable"), [(0, True), (-4, False), (-11, False), (-7, False), (1, True)])
def test_a_probe_killed_by_a_trap_signal_turns_extra_buffers_off(tmp_path, monkeypatch, returncode, usable):
    """SIGILL, SIGSEGV (a general protection fault on some Xeon guests) and SIGBUS mean the kernels are
    trapped; a clean exit, or a Python error (which the real load would raise too), keeps the defaults."""
    import subprocess

    monkeypatch.setattr("judge.backends.llamacpp_cpu.cpu_advertises_amx", lambda cpuinfo=None: True)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, returncode, b"", b""))
    assert extra_buffers_usable(llama_cpp, resolve_model_path(None), tmp_path) is usable


def test_no_probe_without_amx(tmp_path, monkeypatch):
    monkeypatch.setattr("judge.backends.llamacpp_cpu.cpu_advertises_amx", lambda cpuinfo=None: False)
    assert extra_buffers_usable(llama_cpp, resolve_model_path(None), tmp_path) is True
    assert not (tmp_path / "llamacpp-cpu-probe.json").exists()


def test_loading_without_extra_buffers_sets_the_field_and_restores_the_default():
    original = llama_cpp.llama_cpp.llama_model_default_params
    with without_extra_buffers(llama_cpp):
        assert llama_cpp.llama_cpp.llama_model_default_params().use_extra_bufts is False
    assert llama_cpp.llama_cpp.llama_model_default_params is original
    assert original().use_extra_bufts is True


def test_a_model_without_extra_buffers_scores_like_the_default_and_keys_apart(tmp_path, monkeypatch):
    """The fallback path with the real model: answers within the backend tolerance, and a cache key of its own."""
    prompt = [Prompt("Is the sky blue on a clear day? Answer yes or no:", chat=False)]
    default = LlamaCppBackend(None, GenerateConfig(threads=2))
    monkeypatch.setattr("judge.backends.llamacpp.extra_buffers_usable", lambda *a: False)
    plain = LlamaCppBackend(None, GenerateConfig(threads=2))
    try:
        a = default.label_logprobs(prompt, [" yes", " no"])[0]
        b = plain.label_logprobs(prompt, [" yes", " no"])[0]
        assert a.logprobs == pytest.approx(b.logprobs, abs=0.02)
        # The default loads with extra buffers unless this machine's probe said otherwise (AMX trapped).
        assert ("extra_buffers" in default.settings()) is (not default.extra_buffers)
        assert plain.settings()["extra_buffers"] is False
    finally:
        default.close()
        plain.close()


@pytest.mark.slow
def test_llama_server_runs_without_extra_buffers_where_the_probe_failed(monkeypatch, tmp_path):
    """The server the API tests and benchmarks start has no option for extra buffers: where the probe
    failed, the command sets them off in the server's process, which then answers a real completion."""
    import socket
    import subprocess
    import time
    import urllib.request

    from judge.backends.llamacpp_cpu import llama_server_command

    monkeypatch.setattr("judge.backends.llamacpp_cpu.extra_buffers_usable", lambda *a: False)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = llama_server_command(["--model", str(resolve_model_path(None)), "--host", "127.0.0.1",
                                "--port", str(port), "--n_ctx", "512", "--n_threads", "2"])
    assert cmd[1] == "-c" and "use_extra_bufts = False" in cmd[2]
    log = tmp_path / "server.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 180
        body = json.dumps({"prompt": "The capital of France is", "max_tokens": 1, "logprobs": 2}).encode()
        while True:
            assert proc.poll() is None, log.read_text()[-2000:]
            try:
                req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=body,
                                             headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=60) as r:
                    answer = json.loads(r.read())
                break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()[-2000:]
                time.sleep(0.5)
        assert answer["choices"][0]["logprobs"]["top_logprobs"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
