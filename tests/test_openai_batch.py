"""The Batch API client (judge/backends/openai_batch.py) against tests/fault_server.py's /v1/files and
/v1/batches: rows from a batch equal rows from the synchronous run, a process killed while it waits and
run again creates exactly one batch, an expired batch's missing requests are resubmitted once, output
lines in shuffled order are matched by custom_id, input files split at the provider's limits, the
provider's validation errors, and the file format of ``vllm run-batch``."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from judge.backends import create_backend
from judge.backends.layer import innermost
from judge.backends.openai_batch import (
    BatchRequest,
    batch_request,
    fill_cache,
    read_batch_results,
    split_files,
    state_path_for,
    write_batch_file,
)
from judge.backends.requests import Request
from judge.core.config import GenerateConfig
from judge.core.errors import BackendError, InputError
from judge.data.items import SYSTEM, USER, Item, Turn
from judge.engine.cache import Cache, CachedBackend
from judge.prompts.templates import get_prompt
from judge.records.rows import Row, item_row
from judge.scorers.llm import LLMJudge
from tests.fault_server import FaultServer, answer

pytest.importorskip("openai")

ROOT = Path(__file__).resolve().parents[1]
CTX = (Turn(USER, "Any tips for a first marathon?"), Turn(SYSTEM, "Start slow and build up."), Turn(USER, "How slow?"))


def items(n: int, marker: str = "") -> list[Item]:
    return [Item(id=f"b{i}", level="turn", context=CTX, response=f"About a minute per km slower ({i}). {marker}".strip())
            for i in range(n)]


def judge_on(srv: FaultServer, cache: Path, chat: bool = True) -> LLMJudge:
    cfg = GenerateConfig(concurrency=4, max_retries=2, timeout=5.0, cache_path=str(cache))
    inner = create_backend("openai", "fault-model", cfg, base_url=srv.base_url, backoff=0.01, max_backoff=0.05)
    judge = LLMJudge(get_prompt("yesno"), CachedBackend(inner, Cache(cache)), batch_size=64)
    judge.chat = chat
    return judge


def asks(judge: LLMJudge, its: list[Item]) -> list[Request]:
    return [Request("label", judge.build_prompt(it)[0], tuple(judge.candidates), judge.top_n) for it in its]


def rows(judge: LLMJudge, its: list[Item]) -> list[Row]:
    return [item_row(it, s, "m", None) for it, s in zip(its, judge.score(its))]


@pytest.mark.parametrize("chat", [True, False], ids=["chat", "completions"])
def test_a_batch_run_gives_the_rows_of_the_synchronous_run(tmp_path, chat):
    its = items(12)
    with FaultServer() as srv:
        sync = judge_on(srv, tmp_path / "sync.sqlite", chat)
        expected = rows(sync, its)
        sent = len(srv.requests)
        judge = judge_on(srv, tmp_path / "batch.sqlite", chat)
        report = fill_cache(judge.backend, asks(judge, its), tmp_path / "state.json", poll_s=0.02, log=lambda m: None)
        assert (report.asked, report.hits, report.stored, report.failed, report.missing) == (12, 0, 12, {}, set())
        assert len(srv.batches) == 1 and len(srv.requests) == sent  # nothing went synchronously
        got = rows(judge, its)
        assert len(srv.requests) == sent  # the run found every answer in the cache
        assert got == expected
        assert innermost(judge.backend).usage.batch_requests == 12
        # a second fill finds everything cached: no new batch
        again = fill_cache(judge.backend, asks(judge, its), tmp_path / "state.json", poll_s=0.02, log=lambda m: None)
        assert (again.hits, len(srv.batches)) == (12, 1)
        for j in (sync, judge):
            j.backend.close()


def test_the_state_file_is_written_before_any_wait_and_holds_no_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-state-test-0123456789")
    its = items(3)
    seen: list[str] = []
    with FaultServer() as srv:
        judge = judge_on(srv, tmp_path / "c.sqlite")
        state = tmp_path / "state.json"

        def log(msg: str) -> None:
            seen.append(msg)
            if "in_progress" in msg or "validating" in msg:  # waiting: the batch is recorded already
                recorded = json.loads(state.read_text())
                assert recorded["batches"][0]["id"] in srv.batches
        fill_cache(judge.backend, asks(judge, its), state, poll_s=0.02, log=log)
        text = state.read_text()
        assert "sk-state-test" not in text and "Bearer" not in text
        assert any("waited" in m and "completed" in m for m in seen), seen
        judge.backend.close()


def test_output_lines_in_any_order_are_matched_by_custom_id(tmp_path):
    its = items(30)
    with FaultServer() as srv:
        judge = judge_on(srv, tmp_path / "c.sqlite")
        fill_cache(judge.backend, asks(judge, its), tmp_path / "s.json", poll_s=0.02, log=lambda m: None)
        batch = next(iter(srv.batches.values()))
        sent = [json.loads(line)["custom_id"] for line in srv.files[batch["input_file_id"]]["_bytes"].decode().splitlines()]
        back = [json.loads(line)["custom_id"] for line in srv.files[batch["output_file_id"]]["_bytes"].decode().splitlines()]
        assert sorted(back) == sorted(sent) and back != sent  # shuffled by the server
        sync = judge_on(srv, tmp_path / "sync.sqlite")
        assert rows(judge, its) == rows(sync, its)
        judge.backend.close()
        sync.backend.close()


@pytest.mark.slow
def test_an_expired_batch_is_resubmitted_once_then_left(tmp_path):
    its = items(10)
    with FaultServer() as srv:
        srv.expire_batches(1)
        judge = judge_on(srv, tmp_path / "c.sqlite")
        logs: list[str] = []
        report = fill_cache(judge.backend, asks(judge, its), tmp_path / "s.json", poll_s=0.02, log=logs.append)
        assert report.stored == 10 and not report.missing
        first, second = srv.batches.values()
        assert first["status"] == "expired" and second["status"] == "completed"
        assert second["request_counts"]["total"] == 5  # only the expired half went again
        assert any("submitting them once more" in m for m in logs)
        # both expire: the second's missing requests are left (the run sends them synchronously)
        srv.expire_batches(2)
        judge2 = judge_on(srv, tmp_path / "c2.sqlite")
        report = fill_cache(judge2.backend, asks(judge2, its), tmp_path / "s2.json", poll_s=0.02, log=lambda m: None)
        assert len(srv.batches) == 4
        assert report.stored == 5 + 2 and len(report.missing) == 3  # 5 of 10, then 2 of the 5 again
        # --batch-fallback sync: nothing resubmitted, the expired half left to the run
        srv.expire_batches(1)
        judge3 = judge_on(srv, tmp_path / "c3.sqlite")
        report = fill_cache(judge3.backend, asks(judge3, its), tmp_path / "s3.json", poll_s=0.02, resubmit=False,
                            log=lambda m: None)
        assert len(srv.batches) == 5 and report.stored == 5 and len(report.missing) == 5
        for j in (judge, judge2, judge3):
            j.backend.close()


def test_failed_requests_are_retried_once_then_reported(tmp_path):
    its = items(4) + items(2, "<boom>")
    its = [Item(id=f"x{i}", level=it.level, context=it.context, response=it.response) for i, it in enumerate(its)]
    with FaultServer(batch_fail_marker="<boom>") as srv:
        judge = judge_on(srv, tmp_path / "c.sqlite")
        report = fill_cache(judge.backend, asks(judge, its), tmp_path / "s.json", poll_s=0.02, log=lambda m: None)
        assert len(srv.batches) == 2  # the 500s went once more
        assert report.stored == 4 and len(report.failed) == 2
        assert all(r == "API request failed: HTTP 500: injected 500" for r in report.failed.values())
        judge.backend.close()


def test_input_files_split_at_the_limits_on_requests_and_bytes(tmp_path):
    reqs = [BatchRequest(f"id{i}", "/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "x" * 50}]})
            for i in range(10)]
    size = len(reqs[0].line().encode())
    assert [len(f) for f in split_files(reqs, max_requests=4)] == [4, 4, 2]
    assert [len(f) for f in split_files(reqs, max_bytes=3 * size)] == [3, 3, 3, 1]
    mixed = reqs[:3] + [BatchRequest("c", "/v1/completions", {"model": "m", "prompt": "p"})]
    assert [[r.url for r in f] for f in split_files(mixed)] == [["/v1/chat/completions"] * 3, ["/v1/completions"]]
    with pytest.raises(BackendError, match="more than a batch file may hold"):
        split_files(reqs, max_bytes=size - 1)
    its = items(9)
    with FaultServer(max_batch_requests=4) as srv:
        judge = judge_on(srv, tmp_path / "c.sqlite")
        report = fill_cache(judge.backend, asks(judge, its), tmp_path / "s.json", poll_s=0.02, max_requests=4,
                            log=lambda m: None)
        assert report.stored == 9 and [b["request_counts"]["total"] for b in srv.batches.values()] == [4, 4, 1]
        judge.backend.close()


def test_the_provider_validates_the_input_as_openai_does(tmp_path):
    import openai

    with FaultServer(batch_validate_s=0.0) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="k")
        with pytest.raises(openai.BadRequestError, match=r"Must be \.jsonl"):
            client.files.create(file=("in.txt", b"{}"), purpose="batch")
        good = {"custom_id": "a", "method": "POST", "url": "/v1/chat/completions",
                "body": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}}
        lines = [good, good, {**good, "custom_id": "b", "url": "/v1/completions"}, {"custom_id": "c"},
                 {**good, "custom_id": "d", "body": {"model": "other", "messages": []}}]
        data = ("\n".join(json.dumps(x) for x in lines) + "\nnot json\n").encode()
        f = client.files.create(file=("in.jsonl", data), purpose="batch")
        with pytest.raises(openai.BadRequestError, match="completion_window"):
            client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="1h")  # type: ignore[arg-type]
        b = client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h")
        b = client.batches.retrieve(b.id)
        assert b.status == "failed"
        got = [(e.line, e.code) for e in b.errors.data]
        assert got == [(2, "duplicate_custom_id"), (3, "url_mismatch"), (4, "missing_required_parameter"),
                       (5, "model_mismatch"), (6, "invalid_json_line")]
        empty = client.files.create(file=("e.jsonl", b""), purpose="batch")
        e = client.batches.create(input_file_id=empty.id, endpoint="/v1/chat/completions", completion_window="24h")
        assert client.batches.retrieve(e.id).errors.data[0].code == "empty_file"
        # cancelling: the requests not run come back as batch_cancelled
        ok = client.files.create(file=("ok.jsonl", (json.dumps(good) + "\n").encode()), purpose="batch")
        c = client.batches.create(input_file_id=ok.id, endpoint="/v1/chat/completions", completion_window="24h")
        assert client.batches.cancel(c.id).status == "cancelling"
        c = client.batches.retrieve(c.id)
        assert c.status == "cancelled"
        assert json.loads(client.files.content(c.error_file_id).content)["error"]["code"] == "batch_cancelled"


def test_a_failed_batch_is_an_error_naming_its_lines(tmp_path):
    with FaultServer() as srv:
        judge = judge_on(srv, tmp_path / "c.sqlite")
        srv.max_batch_requests = 2
        with pytest.raises(BackendError, match="failed its validation: line None: too_many_tasks"):
            fill_cache(judge.backend, asks(judge, items(3)), tmp_path / "s.json", poll_s=0.02, log=lambda m: None)
        judge.backend.close()


def test_vllm_run_batch_files_are_written_and_read_back(tmp_path):
    its = items(4)
    with FaultServer() as srv:
        judge = judge_on(srv, tmp_path / "c.sqlite")
        inner = innermost(judge.backend)
        reqs = [batch_request(inner, r.prompt, r.top_n, f"k{i}") for i, r in enumerate(asks(judge, its))]
        assert write_batch_file(tmp_path / "in.jsonl", reqs) == 4
        lines = [json.loads(x) for x in (tmp_path / "in.jsonl").read_text().splitlines()]
        assert lines[0]["method"] == "POST" and lines[0]["url"] == "/v1/chat/completions"
        assert lines[0]["body"]["max_tokens"] == 1 and lines[0]["body"]["logprobs"] is True
        # what vllm run-batch writes: the response body, or an error without one
        sync = judge_on(srv, tmp_path / "s.sqlite")
        expected = rows(sync, its)
        out = []
        for line in reversed(lines):
            body = answer(srv, line["body"]["messages"][-1]["content"], line["body"], True, True)
            out.append({"id": "vllm-x", "custom_id": line["custom_id"],
                        "response": {"status_code": 200, "request_id": "r", "body": body}, "error": None})
        out.append({"id": "vllm-y", "custom_id": "gone", "response": None, "error": "engine died"})
        (tmp_path / "out.jsonl").write_text("".join(json.dumps(x) + "\n" for x in out))
        results = read_batch_results(tmp_path / "out.jsonl")
        answers = [inner.answer_from_batch(results[f"k{i}"], judge.candidates, judge.top_n) for i in range(4)]
        for it, a, row in zip(its, answers, expected):
            assert judge.to_score(it, [], a).value == pytest.approx(row.score, abs=1e-6)
        assert inner.answer_from_batch(results["gone"], judge.candidates, 20).reason == \
            "batch request failed: error: engine died"
        (tmp_path / "bad.jsonl").write_text('{"custom_id": "a"}\n{"custom_id": "a"}\n')
        with pytest.raises(InputError, match=r"bad.jsonl, line 2, field 'custom_id': custom_id 'a' appears twice"):
            read_batch_results(tmp_path / "bad.jsonl")
        judge.backend.close()
        sync.backend.close()


KILLED = textwrap.dedent("""
    import sys
    from pathlib import Path
    from judge.backends import create_backend
    from judge.backends.openai_batch import fill_cache
    from judge.engine.cache import Cache, CachedBackend
    from judge.core.config import GenerateConfig
    from judge.prompts.templates import get_prompt
    from judge.scorers.llm import LLMJudge
    from tests.test_openai_batch import asks, items

    url, cache, state = sys.argv[1:4]
    cfg = GenerateConfig(cache_path=cache)
    judge = LLMJudge(get_prompt("yesno"), CachedBackend(create_backend("openai", "fault-model", cfg, base_url=url),
                                                        Cache(cache)), batch_size=64)
    report = fill_cache(judge.backend, asks(judge, items(8)), state, poll_s=0.05)
    print("stored", report.stored, "batches", len(report.batches), flush=True)
""")


@pytest.mark.slow
def test_a_process_killed_while_waiting_reattaches_and_creates_exactly_one_batch(tmp_path):
    with FaultServer(batch_run_s=1.5) as srv:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        args = [sys.executable, "-c", KILLED, srv.base_url, str(tmp_path / "c.sqlite"), str(tmp_path / "s.json")]
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not srv.batches and time.monotonic() < deadline:  # it has submitted and is waiting
            time.sleep(0.05)
        time.sleep(0.3)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert len(srv.batches) == 1 and next(iter(srv.batches.values()))["status"] != "completed"
        again = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stderr
        assert "attaching to 1 batch(es) submitted before (8 of the 8 requests)" in again.stderr
        assert "stored 8 batches 1" in again.stdout
        assert len(srv.batches) == 1  # exactly one batch: nothing was submitted twice
        assert len(srv.requests) == 0  # and nothing went synchronously


def test_state_path_is_beside_the_cache_per_server_and_model(tmp_path):
    cfg = GenerateConfig()
    a = create_backend("openai", "m1", cfg, base_url="http://127.0.0.1:9/v1")
    b = create_backend("openai", "m2", cfg, base_url="http://127.0.0.1:9/v1")
    pa, pb = state_path_for(tmp_path / "c.sqlite", a), state_path_for(tmp_path / "c.sqlite", b)
    assert pa.parent == tmp_path / "batches" and pa != pb
    a.close()
    b.close()


def test_a_batch_created_but_not_recorded_is_found_by_its_input_file(tmp_path):
    """Killed between creating the batch and writing its id: the state holds the file id only; the rerun finds
    the batch among the server's by that file and attaches to it instead of creating another."""
    its = items(5)
    with FaultServer() as srv:
        judge = judge_on(srv, tmp_path / "c.sqlite")
        inner = innermost(judge.backend)
        from judge.engine.cache import request_key

        reqs = [batch_request(inner, r.prompt, r.top_n, request_key(inner, r)) for r in asks(judge, its)]
        data = "".join(r.line() for r in reqs).encode()
        f = inner.api(lambda c: c.files.create(file=("judge-batch-1.jsonl", data), purpose="batch"), "upload")
        inner.api(lambda c: c.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions",
                                             completion_window="24h"), "create")
        state = {"version": 1, "server": srv.base_url, "model": "fault-model", "batches": [
            {"key": "1", "custom_ids": [r.custom_id for r in reqs], "endpoint": "/v1/chat/completions", "round": 1,
             "input_file_id": f.id, "id": None, "status": None, "read": False}]}
        (tmp_path / "s.json").write_text(json.dumps(state))
        report = fill_cache(judge.backend, asks(judge, its), tmp_path / "s.json", poll_s=0.02, log=lambda m: None)
        assert report.stored == 5 and len(srv.batches) == 1
        judge.backend.close()


def test_the_documented_batch_example_runs(tmp_path, monkeypatch):
    """docs/backends-api.md, "The Batch API": its Python example, run as written against the fault server
    (OPENAI_BASE_URL) on an empty cache, puts every answer in the cache and scores from it."""
    section = (ROOT / "docs" / "backends-api.md").read_text().split("## The Batch API", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code, "the section shows an example"
    with FaultServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("JUDGE_CACHE", str(tmp_path / "cache.sqlite"))
        monkeypatch.chdir(ROOT)
        scope: dict = {}
        exec(code[1].replace("poll_s=30", "poll_s=0.05"), scope)  # the provider's wait, shortened
        assert scope["report"].stored == 12 and not scope["report"].missing
        assert all(s.ok for s in scope["scores"]) and len(scope["scores"]) == 12
        assert len(srv.batches) == 1 and not srv.requests  # one batch, nothing sent synchronously
        assert (tmp_path / "batches").is_dir()


def test_a_batch_file_run_elsewhere_fills_the_cache_from_its_results(tmp_path):
    """--batch-file / --batch-results: the pending requests written for another runner, its output read back
    into the cache (in any order, one line missing), then the run scores from the cache as a synchronous run."""
    from judge.backends.openai_batch import store_results, write_pending

    its = items(6)
    with FaultServer() as srv:
        judge = judge_on(srv, tmp_path / "c.sqlite")
        written = write_pending(judge.backend, asks(judge, its), tmp_path / "in.jsonl")
        assert written.asked == 6 and len(written.missing) == 6
        lines = [json.loads(x) for x in (tmp_path / "in.jsonl").read_text().splitlines()]
        out = [{"id": f"vllm-{i}", "custom_id": line["custom_id"], "error": None,
                "response": {"status_code": 200, "request_id": f"r{i}",
                             "body": answer(srv, line["body"]["messages"][-1]["content"], line["body"], True, True)}}
               for i, line in enumerate(lines[1:])]  # the runner lost the first request
        (tmp_path / "out.jsonl").write_text("".join(json.dumps(x) + "\n" for x in reversed(out)))
        report = store_results(judge.backend, asks(judge, its), tmp_path / "out.jsonl")
        assert report.stored == 5 and report.missing == {lines[0]["custom_id"]}
        sync = judge_on(srv, tmp_path / "s.sqlite")
        assert rows(judge, its) == rows(sync, its)
        assert len(srv.requests) == 6 + 1  # the sync run's six, and the one the runner lost
        judge.backend.close()
        sync.backend.close()


def test_batches_split_under_the_queue_limit_and_a_refused_one_goes_again(tmp_path):
    """The model's queue holds fewer tokens than the client believes: the first batch is refused at validation
    (token_limit_exceeded), nothing of it runs, and the run goes on in smaller parts, each submitted when the
    one before has finished; each prompt paid once. With the limit given (batch_queue_tokens), no refusal."""
    from tests.batch_queue import QueueServer, paid

    its = items(12)
    fast = {"batch_validate_s": 0.005, "batch_run_s": 0.02, "batch_finalize_s": 0.005}
    with FaultServer() as probe:
        need = sum(len(r.prompt.text) // 4 for r in asks(judge_on(probe, tmp_path / "p.sqlite"), its))
    limit = int(need * 0.6)  # the server's count: the whole run does not fit, half of it does
    with QueueServer(queue_limit=limit, **fast) as srv:
        judge = judge_on(srv, tmp_path / "c.sqlite")
        logs: list[str] = []
        report = fill_cache(judge.backend, asks(judge, its), tmp_path / "s.json", poll_s=0.01,
                            queue_tokens=100 * need, log=logs.append)
        assert (report.stored, report.failed, report.missing) == (12, {}, set())
        refused = [b for b in srv.batches.values() if b["status"] == "failed"]
        assert len(refused) == 1 and refused[0]["errors"]["data"][0]["code"] == "token_limit_exceeded"
        assert refused[0]["output_file_id"] is None and srv.input_tokens(refused[0]) > limit
        assert any("refused: the model's queue is full (Enqueued token limit reached" in m for m in logs)
        done = [b for b in srv.batches.values() if b["status"] == "completed"]
        assert len(done) >= 2 and all(srv.input_tokens(b) <= limit for b in done)
        counts = paid(srv)
        assert len(counts) == 12 and set(counts.values()) == {1} and not srv.requests
        judge.backend.close()
    with QueueServer(queue_limit=limit, **fast) as srv:
        judge = judge_on(srv, tmp_path / "c2.sqlite")
        report = fill_cache(judge.backend, asks(judge, its), tmp_path / "s2.json", poll_s=0.01, queue_tokens=2 * need,
                            log=lambda m: None)
        assert report.stored == 12 and len(srv.batches) > 1
        assert all(b["status"] == "completed" for b in srv.batches.values())  # the bound kept under the limit
        assert set(paid(srv).values()) == {1} and len(paid(srv)) == 12
        judge.backend.close()


def test_the_queue_limit_table_is_dated_and_sourced_and_an_option_overrides_it():
    import tomllib

    from judge.accounting.batch_limits import load_queue_limits, queue_limit

    rows = tomllib.loads((ROOT / "judge" / "accounting" / "batch_limits.toml").read_text())["models"]
    assert len(rows) >= 5 and all(r["checked"] and "OpenAI" in r["source"] for r in rows)
    table = load_queue_limits()
    assert table["gpt-4o-mini"].enqueued_tokens == 2_000_000 and table["gpt-4o"].enqueued_tokens == 90_000
    assert queue_limit("gpt-4o-mini", 5_000).enqueued_tokens == 5_000 and queue_limit("fault-model") is None
    with pytest.raises(InputError, match="batch_queue_tokens"):
        create_backend("openai", "m", GenerateConfig(), base_url="http://127.0.0.1:9/v1", batch=True,
                       batch_queue_tokens=0)


def test_an_orphaned_batch_is_found_past_the_first_page_of_the_list(tmp_path):
    """Killed between creating the batch and writing its id, with 250 newer batches on the account: the list
    pages (limit 100, after, has_more) until the batch made from the recorded file is found."""
    from tests.batch_queue import QueueServer

    its = items(3)
    with QueueServer() as srv:
        judge = judge_on(srv, tmp_path / "c.sqlite")
        inner = innermost(judge.backend)
        from judge.engine.cache import request_key

        reqs = [batch_request(inner, r.prompt, r.top_n, request_key(inner, r), r.candidates) for r in asks(judge, its)]
        data = "".join(r.line() for r in reqs).encode()
        f = inner.api(lambda c: c.files.create(file=("judge-batch-1.jsonl", data), purpose="batch"), "upload")
        inner.api(lambda c: c.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions",
                                             completion_window="24h"), "create")
        mine = next(iter(srv.batches.values()))
        for n in range(250):  # newer batches of other work, already done
            bid = f"batch-other-{n:03d}"
            srv.batches[bid] = {**mine, "id": bid, "input_file_id": f"file-other-{n}", "status": "completed",
                                "_n": 1 + n}
        state = {"version": 1, "server": srv.base_url, "model": "fault-model", "batches": [
            {"key": "1", "custom_ids": [r.custom_id for r in reqs], "endpoint": "/v1/chat/completions", "round": 1,
             "input_file_id": f.id, "id": None, "status": None, "read": False}]}
        (tmp_path / "s.json").write_text(json.dumps(state))
        report = fill_cache(judge.backend, asks(judge, its), tmp_path / "s.json", poll_s=0.02, log=lambda m: None)
        assert report.stored == 3 and len(srv.batches) == 251  # found on the third page: none created
        judge.backend.close()


def test_a_run_waits_while_another_runs_batch_holds_the_queue(tmp_path):
    """Two runs on one cache asking different prompts, the queue holding one run's batch at a time: the second
    waits for the first one's batch to finish (reading it into the cache), then submits its own."""
    import threading

    from judge.backends.openai_batch import BatchRequest as Line
    from tests.batch_queue import QueueServer, paid

    first, second = items(6), [Item(id=f"o{i}", level=it.level, context=it.context, response=it.response + " Other.")
                               for i, it in enumerate(items(6))]
    fast = {"batch_validate_s": 0.01, "batch_run_s": 0.2, "batch_finalize_s": 0.01}
    with QueueServer(**fast) as srv:
        probe = judge_on(srv, tmp_path / "p.sqlite")
        one = sum(Line("x", *innermost(probe.backend).request(r.prompt, r.top_n)).bound()[0] for r in asks(probe, first))
        probe.backend.close()
        reports: dict[str, object] = {}

        def run(name: str, its: list[Item]) -> None:
            judge = judge_on(srv, tmp_path / "c.sqlite")
            try:
                reports[name] = fill_cache(judge.backend, asks(judge, its), tmp_path / "s.json", poll_s=0.01,
                                           queue_tokens=int(one * 1.05), log=lambda m: None)
            finally:
                judge.backend.close()

        a = threading.Thread(target=run, args=("a", first))
        a.start()
        while not srv.batches:
            time.sleep(0.01)
        b = threading.Thread(target=run, args=("b", second))
        b.start()
        a.join(30)
        b.join(30)
        x, y = srv.batches.values()
        assert x["status"] == y["status"] == "completed" and y["created_at"] >= x["created_at"]
        assert (x["request_counts"]["total"], y["request_counts"]["total"]) == (6, 6)
        assert len(paid(srv)) == 12 and set(paid(srv).values()) == {1}
        assert all(reports[n].stored == 6 for n in "ab")  # type: ignore[attr-defined]


def test_the_docs_hold_the_generated_table_of_hosted_options():
    """docs/backends-api.md holds the table of every hosted option exactly as :class:`HostedOptions` generates it, and
    each flag it names is one of ``judge score``'s."""
    from judge.backends.hosted import HOSTED
    from judge.cli import build_parser

    text = (Path(__file__).resolve().parents[1] / "docs" / "backends-api.md").read_text(encoding="utf-8")
    assert HOSTED.markdown("`options` key") in text
    score = build_parser().parse_args(["score", "x.jsonl", "--no-pace", "--max-cost", "1", "--batch"])
    assert HOSTED.given(score) == {"pace": False, "max_cost": 1.0, "batch": True}


def test_an_unknown_or_mistyped_hosted_option_is_refused_naming_it():
    from judge.backends.hosted import HostedOptions

    with pytest.raises(InputError, match=r"max_cots.*did you mean 'max_cost'"):
        HostedOptions.of({"max_cots": 1})
    with pytest.raises(InputError, match=r"rpm.*must be a number"):
        HostedOptions.of({"rpm": "fast"})
    with pytest.raises(InputError, match=r"--rpm.*> 0"):
        HostedOptions.of({"rpm": 0})
    assert HostedOptions.of({"rpm": 60, "batch": True}) == HostedOptions(rpm=60.0, batch=True)
