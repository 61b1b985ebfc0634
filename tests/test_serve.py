"""``judge serve``: the real service (``python -m judge serve`` in a subprocess on a free loopback port,
the real SmolLM2 via llama.cpp, a real SQLite cache) checked against ``judge score`` and under load,
bad input, a wrong token and SIGTERM. The worker's cross-client batching is checked on the
:class:`Batcher` itself with a plain scoring function (llama.cpp never merges requests)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "dialogues.jsonl"
TOKEN_ENV = "JUDGE_SERVE_TEST_TOKEN"
TOKEN = "s3cret-token-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def example_records() -> list[dict]:
    return [json.loads(line) for line in EXAMPLES.read_text().splitlines() if line.strip()]


@dataclass
class Server:
    proc: subprocess.Popen
    port: int
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=120)


def start_server(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Server:
    """``judge serve --port 0`` as a user starts it; returns once /healthz answers."""
    log = tmp_path / "serve.log"
    cmd = [sys.executable, "-m", "judge", "serve", "--port", "0", "--threads", "2", *args]
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    deadline = time.monotonic() + 120
    port = None
    while True:
        if proc.poll() is not None:
            pytest.fail(f"judge serve exited ({proc.returncode}): {log.read_text()[-3000:]}")
        if port is None:
            for line in log.read_text().splitlines():
                if line.startswith("judge serve: listening on http://127.0.0.1:"):
                    port = int(line.rsplit(":", 1)[1])
        if port is not None:
            try:
                if call(Server(proc, port, log), "GET", "/healthz")[0] == 200:
                    return Server(proc, port, log)
            except OSError:
                pass
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"judge serve not ready in 120 s: {log.read_text()[-3000:]}")
        time.sleep(0.2)


def call(server: Server, method: str, path: str, body: bytes | dict | None = None,
         headers: dict[str, str] | None = None, timeout: float = 300) -> tuple[int, bytes]:
    """One HTTP request with urllib: (status, body) whatever the status."""
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    req = urllib.request.Request(server.base + path, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def healthy(server: Server) -> bool:
    return call(server, "GET", "/healthz")[0] == 200


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    """One service for the module: bearer token required, its own fresh cache file."""
    tmp = tmp_path_factory.mktemp("serve")
    srv = start_server(tmp, "--quality", "overall", "--token-env", TOKEN_ENV,
                       env={TOKEN_ENV: TOKEN, "JUDGE_CACHE": str(tmp / "cache.sqlite")})
    yield srv
    srv.stop()
    assert TOKEN not in srv.log.read_text()  # tokens are never logged


# -- same rows as judge score ---------------------------------------------------------------------
@pytest.mark.slow  # real SmolLM2 end to end: 15-25 s, kept out of the README's 10-minute command
def test_rows_equal_judge_score(server, tmp_path):
    """The example file sent as one batch gives judge score's rows byte for byte (groups are per request,
    as per file); each item sent alone gives the same score."""
    out = tmp_path / "scores.jsonl"
    proc = subprocess.run([sys.executable, "-m", "judge", "score", str(EXAMPLES), "-o", str(out), "--no-cache",
                           "--threads", "2"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    expected = out.read_text().splitlines()
    records = example_records()
    status, body = call(server, "POST", "/v1/score/batch", {"items": records}, AUTH)
    assert status == 200, body
    rows = json.loads(body)["rows"]
    from judge.core.io import dumps

    assert [dumps(row) for row in rows] == expected
    assert body.decode() == '{"rows": [' + ", ".join(expected) + "]}"
    worst = 0.0
    for record, line in zip(records, expected, strict=True):
        status, body = call(server, "POST", "/v1/score", record, AUTH)
        assert status == 200, body
        got, want = json.loads(body), json.loads(line)
        worst = max(worst, abs(got["score"] - want["score"]))
        assert {k: v for k, v in got.items() if k != "group"} == {k: v for k, v in want.items() if k != "group"}
    assert worst <= 1e-6


# -- load -------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_32_clients_x_4_requests(server):
    records = example_records()[:4]
    results: dict[str, tuple[int, bytes]] = {}
    lock = threading.Lock()

    def client(c: int) -> None:
        for r in range(4):
            rid = f"client{c}-req{r}"
            record = {**records[(c + r) % len(records)], "id": rid}
            try:
                outcome = call(server, "POST", "/v1/score", record, AUTH, timeout=300)
            except OSError as exc:  # recorded, so a lost request fails the test below
                outcome = (0, repr(exc).encode())
            with lock:
                results[rid] = outcome

    threads = [threading.Thread(target=client, args=(c,)) for c in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads)
    assert len(results) == 128
    for rid, (status, body) in results.items():
        assert status == 200, (rid, body)
        row = json.loads(body)
        assert row["id"] == rid and row["error"] is None and 0.0 <= row["score"] <= 1.0
    status, text = call(server, "GET", "/metrics", headers=AUTH)
    assert status == 200
    metrics = dict(line.rsplit(" ", 1) for line in text.decode().splitlines() if not line.startswith("#"))
    assert int(metrics['judge_requests_total{endpoint="/v1/score",status="200"}']) >= 128
    assert int(metrics["judge_cache_hits_total"]) >= 124  # four distinct prompts: the rest come from the cache
    assert float(metrics['judge_request_duration_seconds_count{endpoint="/v1/score"}']) >= 128


# -- bad input --------------------------------------------------------------------------------------
TURN = [{"speaker": "user", "text": "Any tips for a first marathon?"}]
BAD = [
    ("malformed JSON", "/v1/score", b'{"id": "a", "context": [', 400, "invalid JSON"),
    ("not UTF-8", "/v1/score", b'{"id": "\xff"}', 400, "not UTF-8"),
    ("missing response", "/v1/score", {"id": "a", "context": TURN}, 422,
     "request, record item, field 'response': missing required field"),
    ("missing id", "/v1/score", {"context": TURN, "response": "Go slow."}, 422, "field 'id': missing required field"),
    ("typo in a key", "/v1/score", {"id": "a", "contxt": TURN, "response": "x"}, 422, "did you mean 'context'"),
    ("unknown speaker", "/v1/score", {"id": "a", "context": [{"speaker": "bot9", "text": "hi"}], "response": "x"},
     422, "field 'context[0].speaker': unknown speaker"),
    ("empty dialog", "/v1/score", {"id": "a", "dialog": []}, 422, "field 'dialog': empty dialog"),
    ("empty batch", "/v1/score/batch", {"items": []}, 422, "field 'items': no items"),
    ("batch without items", "/v1/score/batch", {"item": []}, 422, "field 'item': unknown key"),
    ("bad record in a batch", "/v1/score/batch", {"items": [{"id": "a", "context": TURN, "response": "x"},
                                                            {"id": "b", "context": "hi", "response": "x"}]},
     422, "record items[1], field 'context': expected an array of turns"),
    ("duplicate ids in a batch", "/v1/score/batch", {"items": [{"id": "a", "dialog": TURN}, {"id": "a", "dialog": TURN}]},
     422, "duplicate id 'a'"),
    ("over --max-batch", "/v1/score/batch", {"items": [{"id": f"i{i}", "dialog": TURN} for i in range(65)]},
     413, "65 items is over the limit of 64"),
    ("10 MB body", "/v1/score", b"x" * 10_000_000, 413, "over the limit of 1048576 bytes"),
]


@pytest.mark.parametrize(("path", "body", "status", "message"), [case[1:] for case in BAD],
                         ids=[case[0] for case in BAD])
def test_bad_input_gets_status_and_message(server, path, body, status, message):
    got, text = call(server, "POST", path, body, AUTH)
    assert got == status, text
    payload = json.loads(text)
    assert message in payload["error"] and payload["status"] == status
    assert healthy(server)


def test_empty_context_is_scored_like_in_a_file(server):
    """An empty context is an opening turn to the JSONL loader (docs/data-format.md), so it is scored, not refused."""
    status, text = call(server, "POST", "/v1/score", {"id": "opening", "context": [], "response": "Hello!"}, AUTH)
    assert status == 200, text
    row = json.loads(text)
    assert row["id"] == "opening" and row["error"] is None and row["score"] is not None
    assert healthy(server)


def test_item_too_long_is_a_row_with_error(server):
    """An item the model cannot take fails alone: 200 and its row with ``error``, as judge score writes it."""
    record = {"id": "long", "context": TURN, "response": "word " * 12000}  # over the 8192-token window
    status, text = call(server, "POST", "/v1/score", record, AUTH)
    assert status == 200, text
    row = json.loads(text)
    assert row["score"] is None and row["error"]
    assert healthy(server)


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN},
                                     {"Authorization": f"Basic {TOKEN}"}], ids=["none", "wrong", "no-scheme", "basic"])
@pytest.mark.parametrize("path", ["/v1/score", "/v1/info", "/metrics"])
def test_token_required_everywhere_but_healthz(server, headers, path):
    method, body = ("POST", {"id": "a", "dialog": TURN}) if path == "/v1/score" else ("GET", None)
    status, text = call(server, method, path, body, headers)
    assert status == 401, text
    assert "bearer token" in json.loads(text)["error"]
    assert call(server, "GET", "/healthz")[0] == 200  # no token needed


def test_info_describes_the_judge(server):
    status, text = call(server, "GET", "/v1/info", headers=AUTH)
    assert status == 200
    info = json.loads(text)
    assert info["spec"]["prompt"] == "yesno" and info["spec"]["selector"] == "none"
    assert info["scorer"]["model"] == "smollm2-135m-instruct" and info["quality"] == "overall"
    assert info["versions"]["dialogue-judge"] and info["versions"]["llama-cpp-python"]
    assert info["batching"] is False and info["auth"] is True
    assert TOKEN not in text.decode()


# -- shutdown ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_sigterm_mid_load_answers_every_accepted_request(tmp_path):
    cache = tmp_path / "cache.sqlite"
    srv = start_server(tmp_path, "--quality", "overall", env={"JUDGE_CACHE": str(cache)})
    records = example_records()[:6]
    results: dict[str, tuple[int, bytes]] = {}
    first = threading.Event()

    def client(record: dict) -> None:
        try:
            results[record["id"]] = call(srv, "POST", "/v1/score", record, timeout=300)
        except OSError as exc:
            results[record["id"]] = (0, repr(exc).encode())
        first.set()

    threads = [threading.Thread(target=client, args=(r,)) for r in records]
    for t in threads:
        t.start()
    assert first.wait(timeout=300)
    assert len(results) < len(records), "the load was over before SIGTERM; nothing was tested"
    srv.proc.send_signal(signal.SIGTERM)
    for t in threads:
        t.join(timeout=300)
    code = srv.proc.wait(timeout=120)
    log = srv.log.read_text()
    assert code in (0, -signal.SIGTERM), log
    assert "judge serve: stopped (queue drained, backend and cache closed)" in log
    # Every request was sent (and accepted) before SIGTERM: each got its full row.
    assert sorted(results) == sorted(r["id"] for r in records)
    for rid, (status, body) in results.items():
        assert status == 200, (rid, body, log)
        row = json.loads(body)
        assert row["id"] == rid and row["score"] is not None
    # The cache was closed cleanly (WAL checkpointed and removed) and holds every answer.
    assert not Path(str(cache) + "-wal").exists()
    with sqlite3.connect(cache) as db:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        assert sum(db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables) >= len(records)


# -- command line checks (no model loads) ---------------------------------------------------------
@pytest.mark.parametrize(("args", "env", "message"), [
    (["--host", "0.0.0.0"], {}, "--allow-remote"),
    (["--token-env", "JUDGE_SERVE_UNSET_VAR"], {}, "JUDGE_SERVE_UNSET_VAR is unset or empty"),
    (["--max-batch", "0"], {}, "field '--max-batch': must be >= 1"),
    (["--k", "2", "--selector", "random", "--quality", "overall"], {}, "--pool FILE"),
    (["--member", "prompt=yesno", "--member", "scorer=length"], {}, "(--reference-set FILE)"),
    (["--reference-set", str(EXAMPLES)], {}, "only an ensemble ranks items against a reference set"),
    (["--member", "prompt=yesno,k=2,selector=random", "--member", "scorer=length", "--quality", "overall",
      "--reference-set", str(EXAMPLES)], {}, "--pool FILE"),
], ids=["remote-host", "token-unset", "max-batch", "k-without-pool", "ensemble-without-reference",
        "reference-without-ensemble", "ensemble-member-k-without-pool"])
def test_cli_refuses_bad_options(args, env, message):
    proc = subprocess.run([sys.executable, "-m", "judge", "serve", "--port", "0", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env={**os.environ, **env})
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr


@pytest.mark.slow  # real SmolLM2 end to end: 15-25 s, kept out of the README's 10-minute command
def test_ensemble_is_served_against_its_reference_set(tmp_path):
    """An ensemble (SmolLM2 yes/no + length, rank-mean) served with the example file as its reference
    set gives each request item the row ``judge score`` gives it in that file, as a batch or alone:
    the item is ranked among the same reference either way. A reply the reference does not hold is
    ranked among it too (its percentiles stay in [0, 1])."""
    ensemble = ["--member", "prompt=yesno", "--member", "scorer=length", "--name", "yesno+length"]
    cache = str(tmp_path / "cache.sqlite")
    out = tmp_path / "scores.jsonl"
    proc = subprocess.run([sys.executable, "-m", "judge", "score", str(EXAMPLES), "-o", str(out), "--threads", "2",
                           "--quality", "overall", *ensemble], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "JUDGE_CACHE": cache})
    assert proc.returncode == 0, proc.stderr
    expected = [json.loads(line) for line in out.read_text().splitlines()]
    srv = start_server(tmp_path, "--quality", "overall", "--reference-set", str(EXAMPLES), *ensemble,
                       env={"JUDGE_CACHE": cache})
    try:
        records = example_records()
        status, body = call(srv, "POST", "/v1/score/batch", {"items": records})
        assert status == 200, body
        strip = ("group",)
        got = [{k: v for k, v in row.items() if k not in strip} for row in json.loads(body)["rows"]]
        assert got == [{k: v for k, v in row.items() if k not in strip} for row in expected]
        status, body = call(srv, "POST", "/v1/score", records[3])
        assert status == 200, body
        assert json.loads(body)["score"] == expected[3]["score"]
        new = {**records[0], "id": "unseen", "response": records[0]["response"] + " " + "and so on " * 40}
        status, body = call(srv, "POST", "/v1/score", new)
        assert status == 200, body
        row = json.loads(body)
        assert row["error"] is None and 0.0 <= row["score"] <= 1.0
        assert row["score"] != expected[0]["score"]  # forty more words move the length member to the top
        status, body = call(srv, "GET", "/v1/info")
        assert json.loads(body)["scorer"]["members"] == ["yesno-none-k0", "length"]
    finally:
        srv.stop()


@pytest.mark.slow
def test_served_cv_ensemble_says_which_weights_it_uses(tmp_path, turn_examples):
    """A ``fit = "cv"`` ensemble of model-free members served against a rated reference set: /v1/info
    gives the weights it learned there (those ``judge score --fit cv`` records for the same file), and
    a reply outside the set is scored with the weights fitted on the whole set."""
    from judge.datasets import load_items
    from judge.scorers.classic import create_classic
    from judge.scorers.ensemble import percentile

    ensemble = ["--member", "scorer=rouge-l", "--member", "scorer=length", "--fit", "cv", "--quality", "overall"]
    out = tmp_path / "scores.jsonl"
    proc = subprocess.run([sys.executable, "-m", "judge", "score", str(turn_examples), "-o", str(out), *ensemble],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    recorded = json.loads(out.with_suffix(".meta.json").read_text())["fitted"]
    srv = start_server(tmp_path, "--reference-set", str(turn_examples), *ensemble)
    try:
        status, body = call(srv, "GET", "/v1/info")
        assert status == 200 and json.loads(body)["fitted"] == recorded
        first = json.loads(turn_examples.read_text().splitlines()[0])
        new = {**first, "id": "unseen", "response": "Maybe bake a loaf with flour, water, salt and yeast overnight."}
        status, body = call(srv, "POST", "/v1/score", new)
        assert status == 200, body
    finally:
        srv.stop()
    items = load_items(str(turn_examples))
    (tmp_path / "unseen.jsonl").write_text(json.dumps(new) + "\n")
    [unseen] = load_items(str(tmp_path / "unseen.jsonl"))
    w = recorded["whole_reference"]
    expected = 0.0
    for wi, name in zip(w, ("rouge-l", "length"), strict=True):
        ref = sorted(s.value for s in create_classic(name).score(items))
        expected += wi * percentile(ref, next(iter(create_classic(name).score([unseen]))).value)
    assert json.loads(body)["score"] == pytest.approx(expected / sum(w), abs=2e-6)


@pytest.mark.parametrize("args, kind", [
    (("--backend", "mock", "--quality", "overall"), {"kind": "reference-free", "uses_future": False, "reads": []}),
    (("--scorer", "rouge-l"), {"kind": "reference-based", "uses_future": False, "reads": ["reference"]}),
    (("--member", "scorer=length", "--member", "scorer=rouge-l", "--fit", "cv", "--quality", "overall"),
     {"kind": "supervised", "uses_future": False, "reads": ["reference"], "supervised": True}),
], ids=["mock-yesno", "rouge-l", "cv-ensemble"])
@pytest.mark.slow
def test_info_gives_the_served_judges_kind(tmp_path, turn_examples, args, kind):
    """``/v1/info`` of a running ``judge serve`` says what kind of judge answers: reference-free (the
    yes/no prompt on the mock backend), reference-based (ROUGE-L reads the reference) or supervised (an
    ensemble whose weights were learned on its reference set's ratings), as ``judge score`` records it."""
    reference = ("--reference-set", str(turn_examples)) if "--member" in args else ()
    out = tmp_path / "scores.jsonl"
    proc = subprocess.run([sys.executable, "-m", "judge", "score", str(turn_examples), "-o", str(out), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.with_suffix(".meta.json").read_text())["kind"] == kind
    srv = start_server(tmp_path, *args, *reference)
    try:
        status, body = call(srv, "GET", "/v1/info")
        assert status == 200, body
        assert json.loads(body)["kind"] == kind
    finally:
        srv.stop()


def test_import_judge_does_not_import_the_web_stack():
    code = ("import sys, judge, judge.cli, judge.cli.serve, judge.serve, judge.serve.service; "
            "print(sorted(m for m in ('starlette', 'uvicorn', 'fastapi') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


# -- batching across clients with a backend that batches ------------------------------------------
@pytest.mark.slow
def test_concurrent_requests_share_model_calls_on_a_batching_backend(tmp_path):
    """--backend openai (batching) against tests/fault_server.py, a real OpenAI-compatible HTTP server
    answering after 0.3 s: requests from 16 concurrent clients are merged into fewer scoring calls,
    and each still gets its own row, equal to the score it gets when sent alone."""
    sys.path.insert(0, str(ROOT))
    from tests.fault_server import FaultServer

    fault = FaultServer(latency=0.3).start()
    try:
        srv = start_server(tmp_path, "--backend", "openai", "--base-url", fault.base_url, "--model", "fault",
                           "--api-key-env", "JUDGE_SERVE_FAKE_KEY", "--concurrency", "16", "--no-cache",
                           env={"JUDGE_SERVE_FAKE_KEY": "not-a-real-key"})
        try:
            records = [{"id": f"q{i}", "context": TURN, "response": f"Answer number {i}."} for i in range(16)]
            results: dict[str, tuple[int, bytes]] = {}

            def client(record: dict) -> None:
                results[record["id"]] = call(srv, "POST", "/v1/score", record, timeout=120)

            threads = [threading.Thread(target=client, args=(r,)) for r in records]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=300)
            assert sorted(results) == sorted(r["id"] for r in records)
            rows = {rid: json.loads(body) for rid, (status, body) in results.items() if status == 200}
            assert len(rows) == 16 and all(row["error"] is None for row in rows.values())
            text = call(srv, "GET", "/metrics")[1].decode()
            metrics = dict(line.rsplit(" ", 1) for line in text.splitlines() if not line.startswith("#"))
            batches = int(metrics["judge_scoring_batches_total"])
            assert int(metrics["judge_scoring_batched_requests_total"]) == 16
            assert batches < 16  # merged: with one call per request this would be 16
            alone = json.loads(call(srv, "POST", "/v1/score", records[5])[1])
            assert alone["score"] == rows["q5"]["score"]
        finally:
            srv.stop()
    finally:
        fault.stop()


# -- the worker: batching across clients, isolation of failures ---------------------------------
def test_batcher_merges_waiting_requests_and_isolates_failures():
    """With a batching backend, requests queued while the worker is busy are scored in one call; a
    call that raises is retried request by request, so only the bad request fails. The scoring
    function is plain Python (rows from item ids) because llama.cpp, the model here, never merges."""
    from judge.data.items import Item
    from judge.serve.batcher import Batcher

    calls: list[list[str]] = []
    gate = threading.Event()

    def score(items):
        ids = [it.id for it in items]
        calls.append(ids)
        if len(calls) == 1:
            gate.wait(timeout=30)  # the worker is busy: later requests queue up
        if "boom" in ids:
            raise RuntimeError("backend broke on boom")
        return [{"id": i} for i in ids]

    def item(i: str) -> Item:
        return Item(id=i, level="dialog", dialog=())

    async def main() -> list:
        batcher = Batcher(score, merge=True, max_items=64)
        batcher.start()
        try:
            first = asyncio.ensure_future(batcher.submit([item("first")]))
            while not calls:
                await asyncio.sleep(0.01)
            rest = [asyncio.ensure_future(batcher.submit([item(f"r{n}a"), item(f"r{n}b")])) for n in range(5)]
            bad = asyncio.ensure_future(batcher.submit([item("boom")]))
            await asyncio.sleep(0.1)
            gate.set()
            return await asyncio.gather(first, *rest, bad, return_exceptions=True)
        finally:
            batcher.close()

    results = asyncio.run(main())
    assert results[0] == [{"id": "first"}]
    for n, rows in enumerate(results[1:6]):
        assert rows == [{"id": f"r{n}a"}, {"id": f"r{n}b"}]
    assert isinstance(results[6], RuntimeError)
    assert calls[1] == [f"r{n}{s}" for n in range(5) for s in "ab"] + ["boom"]  # one merged call
    assert calls[2:] == [[f"r{n}a", f"r{n}b"] for n in range(5)] + [["boom"]]  # then one by one
