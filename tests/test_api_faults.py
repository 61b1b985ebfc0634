"""The OpenAI-compatible backend against a real HTTP server on 127.0.0.1 that fails on purpose
(tests/fault_server.py): retries, Retry-After, per-item failures, a dying server, the sampling
fallback, the CLI's exit code and rerun-from-cache, and that the API key leaks nowhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judge.backends import create_backend
from judge.backends.layer import innermost
from judge.core.config import GenerateConfig
from judge.data.items import SYSTEM, USER, Item, Turn
from judge.prompts.templates import get_prompt
from judge.records.rows import item_row
from judge.scorers.llm import LLMJudge
from tests.fault_server import FaultServer, expected_goodness

pytest.importorskip("openai")
pytest.importorskip("tenacity")

ROOT = Path(__file__).resolve().parents[1]
CTX = (Turn(USER, "Can you recommend a book for a long flight?"), Turn(SYSTEM, "Sure, what genres do you like?"),
       Turn(USER, "Mostly science fiction."))
RETRIED = ["429", "500", "502", "503", "timeout", "reset", "malformed", "truncated", "badlogprobs"]


def item(i: int | str, marker: str = "") -> Item:
    return Item(id=f"it-{i}", level="turn", context=CTX, response=f"Try 'The Martian' ({i}). {marker}".strip())


def api_judge(srv: FaultServer, *, concurrency: int = 4, max_retries: int = 2, timeout: float = 5.0,
              **options) -> LLMJudge:
    cfg = GenerateConfig(concurrency=concurrency, max_retries=max_retries, timeout=timeout)
    backend = create_backend("openai", "fault-model", cfg, base_url=srv.base_url, backoff=0.01, max_backoff=0.05,
                             **options)
    return LLMJudge(get_prompt("yesno"), backend, batch_size=64)


def expected(judge: LLMJudge, it: Item) -> float:
    return expected_goodness(judge.build_prompt(it)[0].text)


@pytest.mark.parametrize("chat", [True, False], ids=["chat", "completions"])
def test_each_transient_fault_is_retried_and_the_item_scored(chat):
    # the "timeout" answer comes after 4 s, past the client's 1.5 s timeout (generous: shared CI machines)
    with FaultServer(sleep_s=4.0) as srv:
        for kind in RETRIED:
            srv.script(f"<{kind}>", kind)
        judge = api_judge(srv, timeout=1.5)
        judge.chat = chat
        items = [item(k, f"<{k}>") for k in RETRIED] + [item("plain")]
        scores = list(judge.score(items))
        assert [s.item_id for s in scores] == [it.id for it in items]
        for it, s in zip(items, scores):
            assert s.ok, (it.id, s.error)
            assert s.value == pytest.approx(expected(judge, it), abs=1e-9)
        for kind in RETRIED:
            assert srv.count(f"<{kind}>") == 2, kind  # the fault, then the retry that succeeded
        path = "/v1/chat/completions" if chat else "/v1/completions"
        assert {r.path for r in srv.requests} == {path}
        assert innermost(judge.backend).usage.retries == len(RETRIED)
        # answers that came back as JSON count for token usage: every item once, plus the broken-logprobs
        # answer that was retried (a server bills it too)
        assert innermost(judge.backend).usage.requests == len(items) + 1
        assert innermost(judge.backend).usage.prompt_tokens > 0
        judge.backend.close()


def test_completions_in_chat_logprobs_format_are_read():
    with FaultServer(content_format=True) as srv:
        judge = api_judge(srv)
        judge.chat = False
        it = item("fmt")
        s = next(judge.score([it]))
        assert s.ok and s.value == pytest.approx(expected(judge, it), abs=1e-9)
        assert srv.requests[0].path == "/v1/completions"
        judge.backend.close()


def test_persistent_faults_end_as_failures_with_reasons_and_nothing_is_dropped():
    with FaultServer() as srv:
        many = 10
        srv.script("<503>", *["503"] * many)
        srv.script("<reset>", *["reset"] * many)
        srv.script("<malformed>", *["malformed"] * many)
        srv.script("<429>", *["429"] * many)
        srv.script("<400>", "400")
        srv.script("<nolp>", "nologprobs")
        judge = api_judge(srv, max_retries=2)
        markers = ["<503>", "<reset>", "<malformed>", "<429>", "<400>", "<nolp>"]
        items = [item(i) for i in range(3)] + [item(m, m) for m in markers]
        scores = {s.item_id: s for s in judge.score(items)}
        assert set(scores) == {it.id for it in items}
        assert all(scores[f"it-{i}"].ok for i in range(3))
        errors = {m: scores[f"it-{m}"].error for m in markers}
        assert all(scores[f"it-{m}"].value is None for m in markers)
        assert "after 3 attempts: HTTP 503" in errors["<503>"]
        assert "after 3 attempts: connection error" in errors["<reset>"]
        assert "after 3 attempts: malformed JSON" in errors["<malformed>"]
        assert "after 3 attempts: HTTP 429" in errors["<429>"]
        assert errors["<400>"] == "API request failed: HTTP 400: injected 400"
        assert "no logprobs" in errors["<nolp>"] and "--sampling-fallback" in errors["<nolp>"]
        # transient kinds: 1 + max_retries attempts; a 400 or a valid answer without logprobs: no retry
        assert [srv.count(m) for m in markers] == [3, 3, 3, 3, 1, 1]
        judge.backend.close()


def test_retry_after_is_honoured():
    """Without pacing (pace=False: each request retries on its own); with pacing a Retry-After holds every
    request (tests/test_pacing.py)."""
    with FaultServer() as srv:
        srv.script("<wait>", "429:2")
        srv.script("<nowait>", "429")
        judge = api_judge(srv, concurrency=2, pace=False)
        t0 = time.monotonic()
        scores = list(judge.score([item("a", "<wait>"), item("b", "<nowait>")]))
        elapsed = time.monotonic() - t0
        assert all(s.ok for s in scores)

        def gap(marker: str) -> float:
            times = [r.time for r in srv.requests if marker in r.prompt]
            assert len(times) == 2
            return times[1] - times[0]

        assert gap("<wait>") >= 1.95  # the server asked for 2 s
        assert gap("<nowait>") < 1.0  # our own backoff (0.01 s base here) when no header is sent
        assert elapsed >= 1.95
        judge.backend.close()


def test_server_dying_mid_run_every_item_scored_or_failed():
    with FaultServer(latency=0.02) as srv:
        srv.script("<die>", "die")
        judge = api_judge(srv, concurrency=2, max_retries=1)
        items = [item(i, "<die>" if i == 12 else "") for i in range(30)]
        scores = list(judge.score(items))
        assert [s.item_id for s in scores] == [it.id for it in items]
        ok = [s for s in scores if s.ok]
        failed = [s for s in scores if not s.ok]
        assert len(ok) >= 10 and len(failed) >= 15
        assert all(s.error and "connection error" in s.error for s in failed)
        by_id = {it.id: it for it in items}
        for s in ok:
            assert s.value == pytest.approx(expected(judge, by_id[s.item_id]), abs=1e-9)
        judge.backend.close()


def test_sampling_fallback_marks_scores_estimated():
    with FaultServer(logprobs=False) as srv:
        judge = api_judge(srv, sampling_fallback=8)
        scores = list(judge.score([item(0), item(1)]))
        # the server's sampled answers cycle Yes, Yes, Yes, No for each prompt: 6 of 8 say yes
        assert all(s.ok and s.estimated for s in scores)
        assert all(s.value == pytest.approx(0.75) for s in scores)
        assert item_row(item(0), scores[0], "api", None).estimated is True
        assert all(r.body["temperature"] == 1.0 for r in srv.requests if "n" in r.body)
        judge.backend.close()
        plain = api_judge(srv)
        s = next(plain.score([item(2)]))
        assert s.value is None and "no logprobs" in s.error
        plain.backend.close()


def run_cli(args: list[str], env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def write_items(path: Path, n: int, marked: set[int], marker: str) -> Path:
    with open(path, "w") as f:
        for i in range(n):
            tail = f" {marker}" if i in marked else ""
            f.write(json.dumps({"id": f"d{i}", "context": [{"speaker": "user", "text": f"Question number {i}?"}],
                                "response": f"Answer {i}.{tail}"}) + "\n")
    return path


@pytest.mark.slow
def test_cli_exit_code_and_rerun_retries_only_failed_items(tmp_path):
    data = write_items(tmp_path / "items.jsonl", 8, {2, 5}, "<flaky>")
    cache = tmp_path / "cache.sqlite"
    with FaultServer() as srv:
        srv.script("<flaky>", *["503"] * 4)  # 2 items x 2 attempts each (--max-retries 1)
        args = ["score", str(data), "--backend", "openai", "--base-url", srv.base_url, "--model", "fault-model",
                "--max-retries", "1", "--concurrency", "3", "--cache-path", str(cache)]
        first = run_cli([*args, "-o", str(tmp_path / "a.jsonl")])
        assert first.returncode == 3, first.stderr
        rows = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
        assert [r["id"] for r in rows] == [f"d{i}" for i in range(8)]
        failed = {r["id"] for r in rows if r["score"] is None}
        assert failed == {"d2", "d5"}
        assert all("HTTP 503" in r["error"] for r in rows if r["id"] in failed)
        assert "2 of 8 items failed" in first.stderr
        assert "cache: 0 hits, 8 misses" in first.stderr
        assert srv.count() == 6 + 4
        before = srv.count()
        second = run_cli([*args, "-o", str(tmp_path / "b.jsonl")])
        assert second.returncode == 0, second.stderr
        assert srv.count() - before == 2  # only the two failed items went to the server again
        assert "cache: 6 hits, 2 misses" in second.stderr
        assert "API usage: 2 requests" in second.stderr
        rows2 = [json.loads(line) for line in (tmp_path / "b.jsonl").read_text().splitlines()]
        assert all(r["score"] is not None for r in rows2)
        assert [r for r in rows2 if r["id"] not in failed] == [r for r in rows if r["id"] not in failed]


@pytest.mark.slow
def test_api_key_never_leaks(tmp_path):
    key = "sk-judge-test-SECRET-1234"
    data = write_items(tmp_path / "items.jsonl", 6, {1}, "<echo>")
    write_items(tmp_path / "more.jsonl", 6, {3}, "<down>")
    cache = tmp_path / "cache.sqlite"
    out = tmp_path / "out.jsonl"
    with FaultServer(logprobs=True) as srv:
        srv.script("<echo>", "echo401")  # the server's error message repeats the key
        srv.script("<down>", *["503"] * 10)
        runs = []
        for src, extra in ((data, ["-o", str(out)]), (tmp_path / "more.jsonl", [])):
            runs.append(run_cli(["score", str(src), "--backend", "openai", "--base-url", srv.base_url,
                                 "--model", "fault-model", "--api-key-env", "JUDGE_TEST_KEY", "--max-retries", "1",
                                 "--cache-path", str(cache), *extra], {"JUDGE_TEST_KEY": key}))
        # the key was really sent (so it had a chance to leak) ...
        assert {r.authorization for r in srv.requests} == {f"Bearer {key}"}
    assert [r.returncode for r in runs] == [3, 3]
    err = json.loads(out.read_text().splitlines()[1])["error"]
    assert err.startswith("API request failed: HTTP 401") and "***" in err
    # ... and appears in no stdout, stderr, output, cache (database, WAL and shared-memory files)
    blobs = {f"run{i}.{name}": getattr(r, name).encode() for i, r in enumerate(runs) for name in ("stdout", "stderr")}
    for f in tmp_path.iterdir():
        if f.is_file() and f.name not in ("items.jsonl", "more.jsonl"):
            blobs[f.name] = f.read_bytes()
    assert any(name.startswith("cache.sqlite") for name in blobs)
    assert b"SECRET" not in b"".join(blobs.values())
    for name, blob in blobs.items():
        assert key.encode() not in blob, name
    assert key.encode() not in runs[1].stdout.encode()  # the stdout run carried the 503 failure rows
    assert '"error": "API request failed after 2 attempts: HTTP 503' in runs[1].stdout


def test_missing_key_variable_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    from judge.core.errors import BackendError

    with pytest.raises(BackendError, match="NO_SUCH_KEY_VAR"):
        create_backend("openai", "m", GenerateConfig(), base_url="http://127.0.0.1:9/v1", api_key_env="NO_SUCH_KEY_VAR")
    with pytest.raises(BackendError, match="model name"):
        monkeypatch.delenv("OPENAI_MODEL", raising=False)
        create_backend("openai", None, GenerateConfig(), base_url="http://127.0.0.1:9/v1")


@pytest.mark.slow
def test_cli_sampling_fallback_output_is_marked_estimated(tmp_path):
    data = write_items(tmp_path / "items.jsonl", 3, set(), "")
    with FaultServer(logprobs=False) as srv:
        base = ["score", str(data), "--backend", "openai", "--base-url", srv.base_url, "--model", "fault-model",
                "--no-cache"]
        res = run_cli([*base, "--sampling-fallback", "4"])
        off = run_cli(base)
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(rows) == 3 and all(r["estimated"] is True and r["score"] == 0.75 for r in rows)
    assert off.returncode == 3 and "no logprobs" in off.stdout


def test_retry_after_header_forms_and_settings_hold_no_credentials():
    import email.utils

    from judge.backends.openai_api import parse_retry_after

    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= parse_retry_after({"retry-after": date}) <= 31
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    backend = create_backend("openai", "m", GenerateConfig(), base_url="http://user:pw-SECRET@127.0.0.1:9/v1",
                             api_key="sk-judge-test-SECRET-1234")
    assert "SECRET" not in json.dumps(backend.settings())
    assert backend.settings()["base_url"] == "http://127.0.0.1:9/v1"
    backend.close()
