"""The stand-in OpenAI server (tests/fault_server.py, rules in tests/openai_rules.py) refuses what OpenAI refuses,
with OpenAI's status, error body and code, on both paths: a request alone, and the same body as a line of a
batch (a line of the error file; the batch itself completes). It fails a batch past its model's enqueued-token
limit at validation, pages its lists, and the judge's own request bodies pass it."""

from __future__ import annotations

import io
import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from judge.backends import Failure, LabelDist, Prompt, create_backend
from judge.backends.layer import innermost
from judge.core.config import GenerateConfig
from judge.core.errors import InputError
from tests.fault_server import FaultServer, prompt_tokens

openai = pytest.importorskip("openai")

CHAT = {"model": "m", "messages": [{"role": "user", "content": "Is this reply good?"}], "max_tokens": 1}
PLAIN = {"model": "m", "prompt": "Is this reply good?", "max_tokens": 1}
#: (case, endpoint, body, HTTP status, error code, error param): every rule, broken once.
REFUSED: list[tuple[str, str, dict[str, Any], int, str | None, str | None]] = [
    ("completions logprobs above 5", "completions", {**PLAIN, "logprobs": 20}, 400, "integer_above_max_value", "logprobs"),
    ("completions logprobs below 0", "completions", {**PLAIN, "logprobs": -1}, 400, "integer_below_min_value", "logprobs"),
    ("completions logprobs a boolean", "completions", {**PLAIN, "logprobs": True}, 400, "invalid_type", "logprobs"),
    ("chat top_logprobs above 20", "chat", {**CHAT, "logprobs": True, "top_logprobs": 21}, 400,
     "integer_above_max_value", "top_logprobs"),
    ("chat top_logprobs below 0", "chat", {**CHAT, "logprobs": True, "top_logprobs": -1}, 400,
     "integer_below_min_value", "top_logprobs"),
    ("chat top_logprobs without logprobs", "chat", {**CHAT, "top_logprobs": 5}, 400, None, "top_logprobs"),
    ("chat top_logprobs with logprobs false", "chat", {**CHAT, "logprobs": False, "top_logprobs": 5}, 400, None,
     "top_logprobs"),
    ("chat logprobs an integer", "chat", {**CHAT, "logprobs": 5}, 400, "invalid_type", "logprobs"),
    ("max_tokens with max_completion_tokens", "chat", {**CHAT, "max_completion_tokens": 8}, 400,
     "invalid_parameter_combination", "max_tokens"),
    ("max_completion_tokens on completions", "completions", {**PLAIN, "max_completion_tokens": 8}, 400, None, None),
    ("max_tokens a string", "chat", {**CHAT, "max_tokens": "1"}, 400, "invalid_type", "max_tokens"),
    ("chat max_tokens 0", "chat", {**CHAT, "max_tokens": 0}, 400, "integer_below_min_value", "max_tokens"),
    ("n 0", "chat", {**CHAT, "n": 0}, 400, "integer_below_min_value", "n"),
    ("n above 128", "completions", {**PLAIN, "n": 129}, 400, "integer_above_max_value", "n"),
    ("n a decimal", "chat", {**CHAT, "n": 2.5}, 400, "invalid_type", "n"),
    ("temperature above 2", "chat", {**CHAT, "temperature": 2.5}, 400, "decimal_above_max_value", "temperature"),
    ("temperature below 0", "completions", {**PLAIN, "temperature": -0.1}, 400, "decimal_below_min_value",
     "temperature"),
    ("temperature a string", "chat", {**CHAT, "temperature": "hot"}, 400, "invalid_type", "temperature"),
    ("messages missing", "chat", {"model": "m"}, 400, "missing_required_parameter", "messages"),
    ("an unknown argument", "chat", {**CHAT, "logprob": True}, 400, None, None),
]
#: Bodies at the edges of the same rules, which OpenAI takes.
TAKEN = [("completions", {**PLAIN, "logprobs": 5, "temperature": 2, "n": 128}),
         ("completions", {**PLAIN, "logprobs": 0, "max_tokens": 0}),
         ("chat", {**CHAT, "logprobs": True, "top_logprobs": 20, "temperature": 0}),
         ("chat", {**{k: v for k, v in CHAT.items() if k != "max_tokens"}, "max_completion_tokens": 4, "n": 1}),
         ("chat", {**CHAT, "logprobs": None, "top_logprobs": None, "seed": 3})]
URL = {"chat": "/v1/chat/completions", "completions": "/v1/completions"}


def call(srv: FaultServer, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    """One plain HTTP exchange with the server: status and JSON body."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(srv.base_url.removesuffix("/v1") + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def client(srv: FaultServer) -> Any:
    return openai.OpenAI(base_url=srv.base_url, api_key="k", max_retries=0)


def start(c: Any, lines: list[dict[str, Any]], endpoint: str) -> str:
    """Upload ``lines`` as a batch input file and create a batch of them (with client ``c``): its id."""
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    f = c.files.create(file=("in.jsonl", io.BytesIO(data)), purpose="batch")
    return str(c.batches.create(input_file_id=f.id, endpoint=endpoint, completion_window="24h").id)


def ended(c: Any, bid: str) -> Any:
    """Batch ``bid`` once it has ended."""
    for _ in range(200):
        batch = c.batches.retrieve(bid)
        if batch.status in ("completed", "failed", "expired", "cancelled"):
            return batch
        time.sleep(0.02)
    raise AssertionError(f"batch {bid} still {batch.status}")


def run_batch(c: Any, lines: list[dict[str, Any]], endpoint: str) -> Any:
    """A batch of ``lines``, once it has ended."""
    return ended(c, start(c, lines, endpoint))


def file_lines(c: Any, fid: str | None) -> dict[str, dict[str, Any]]:
    if fid is None:
        return {}
    text = c.files.content(fid).text
    return {row["custom_id"]: row for row in map(json.loads, text.splitlines())}


@pytest.mark.parametrize("case,endpoint,body,status,code,param", REFUSED, ids=[c[0] for c in REFUSED])
def test_a_request_alone_is_refused_with_openais_status_body_and_code(case, endpoint, body, status, code, param):
    with FaultServer() as srv:
        got, answer = call(srv, "POST", URL[endpoint], body)
    assert got == status, answer
    assert set(answer) == {"error"} and set(answer["error"]) == {"message", "type", "param", "code"}
    assert (answer["error"]["type"], answer["error"]["code"], answer["error"]["param"]) == \
        ("invalid_request_error", code, param)
    assert answer["error"]["message"]


def test_the_same_bodies_inside_a_batch_are_lines_of_its_error_file_with_the_same_answers():
    for endpoint in ("chat", "completions"):
        cases = [c for c in REFUSED if c[1] == endpoint and "model" in c[2] and c[2]["model"] == "m"]
        good = [b for e, b in TAKEN if e == endpoint]
        lines = [{"custom_id": c[0], "method": "POST", "url": URL[endpoint], "body": c[2]} for c in cases]
        lines += [{"custom_id": f"ok-{i}", "method": "POST", "url": URL[endpoint], "body": b} for i, b in enumerate(good)]
        with FaultServer(batch_run_s=0.05) as srv:
            alone = {c[0]: call(srv, "POST", URL[endpoint], c[2]) for c in cases}
            c = client(srv)
            batch = run_batch(c, lines, URL[endpoint])
            assert batch.status == "completed" and batch.errors is None  # a refused body does not fail its batch
            errors, output = file_lines(c, batch.error_file_id), file_lines(c, batch.output_file_id)
        assert set(errors) == {c[0] for c in cases} and set(output) == {f"ok-{i}" for i in range(len(good))}
        for case, (status, body) in alone.items():
            row = errors[case]
            assert row["error"] is None
            assert (row["response"]["status_code"], row["response"]["body"]) == (status, body), case
        assert all(row["response"]["status_code"] == 200 for row in output.values())
        assert (batch.request_counts.completed, batch.request_counts.failed) == (len(good), len(cases))


def test_edges_of_each_range_are_taken():
    with FaultServer() as srv:
        for endpoint, body in TAKEN:
            status, answer = call(srv, "POST", URL[endpoint], body)
            assert status == 200, (body, answer)


def test_a_reasoning_models_refusal_is_kept_alone_and_inside_a_batch():
    body = {**CHAT, "max_tokens": 16}
    with FaultServer(reasoning=True, batch_run_s=0.05) as srv:
        status, alone = call(srv, "POST", URL["chat"], body)
        c = client(srv)
        batch = run_batch(c, [{"custom_id": "r", "method": "POST", "url": URL["chat"], "body": body}], URL["chat"])
        row = file_lines(c, batch.error_file_id)["r"]
    assert (status, alone["error"]["code"], alone["error"]["param"]) == (400, "unsupported_parameter", "max_tokens")
    assert (row["response"]["status_code"], row["response"]["body"]) == (status, alone)


def lines_of(n: int, words: int, model: str = "m") -> list[dict[str, Any]]:
    return [{"custom_id": f"{model}-{i}", "method": "POST", "url": URL["completions"],
             "body": {"model": model, "prompt": f"{i} " + "word " * words, "max_tokens": 1}} for i in range(n)]


def tokens(lines: list[dict[str, Any]]) -> int:
    return sum(prompt_tokens(line["body"]["prompt"]) for line in lines)


def test_a_batch_past_the_enqueued_token_limit_fails_at_validation_and_fits_once_the_queue_drains():
    first, second = lines_of(4, 50), lines_of(4, 50)
    limit = tokens(first) + tokens(second) - 1  # each fits alone, not both at once
    with FaultServer(enqueued_tokens={"m": limit}, batch_run_s=0.25) as srv:
        c = client(srv)
        ids = [start(c, lines, URL["completions"]) for lines in (first, second)]
        time.sleep(0.1)  # both validated: the first holds its tokens, the second finds no room
        a, b = (c.batches.retrieve(i) for i in ids)
        assert a.status == "in_progress" and b.status == "failed"
        assert b.errors is not None and [(e.code, e.line, e.param) for e in b.errors.data] == \
            [("token_limit_exceeded", None, None)]
        assert f"Limit: {limit:,} enqueued tokens" in (b.errors.data[0].message or "")
        assert ended(c, ids[0]).status == "completed"
        # the queue is empty again; another model has no limit; a batch larger than the limit never fits
        again = [start(c, lines, URL["completions"]) for lines in (second, lines_of(2, 50, "other"), lines_of(1, 4 * limit))]
        assert [ended(c, i).status for i in again] == ["completed", "completed", "failed"]


def test_batch_and_file_lists_page_newest_first_with_after_and_has_more():
    with FaultServer(batch_validate_s=10.0) as srv:
        c = client(srv)
        data = "".join(json.dumps(line) + "\n" for line in lines_of(1, 3)).encode()
        f = c.files.create(file=("in.jsonl", io.BytesIO(data)), purpose="batch")
        made = [c.batches.create(input_file_id=f.id, endpoint=URL["completions"], completion_window="24h").id
                for _ in range(25)]
        status, first = call(srv, "GET", "/v1/batches")
        assert status == 200 and [b["id"] for b in first["data"]] == made[::-1][:20]  # default limit 20
        assert (first["has_more"], first["first_id"], first["last_id"]) == (True, made[-1], made[5])
        status, rest = call(srv, "GET", f"/v1/batches?after={first['last_id']}&limit=100")
        assert [b["id"] for b in rest["data"]] == made[4::-1] and rest["has_more"] is False
        assert [b.id for b in c.batches.list(limit=7)] == made[::-1]  # the SDK follows the cursor to the end
        for bad, code in (("0", "integer_below_min_value"), ("101", "integer_above_max_value"), ("x", "invalid_type")):
            status, answer = call(srv, "GET", f"/v1/batches?limit={bad}")
            assert (status, answer["error"]["code"], answer["error"]["param"]) == (400, code, "limit")
        other = c.files.create(file=("notes.txt", io.BytesIO(b"x")), purpose="assistants")
        status, files = call(srv, "GET", "/v1/files")
        assert [x["id"] for x in files["data"]] == [other.id, f.id] and files["has_more"] is False
        _, page = call(srv, "GET", "/v1/files?purpose=batch&order=asc&limit=1")
        assert [x["id"] for x in page["data"]] == [f.id] and page["has_more"] is False
        _, page = call(srv, "GET", "/v1/files?limit=1")
        assert [x["id"] for x in page["data"]] == [other.id] and page["has_more"] is True


def test_errors_of_routes_and_json_have_openais_shape():
    with FaultServer() as srv:
        for method, path, body in (("POST", "/v1/embedding", CHAT), ("GET", "/v1/nothing", None),
                                   ("GET", "/v1/batches/batch-none", None), ("GET", "/v1/files/file-none", None)):
            status, answer = call(srv, method, path, body)
            assert status == 404 and set(answer["error"]) == {"message", "type", "param", "code"}, answer


@pytest.mark.parametrize("endpoint,top_n,declared", [("completions", 20, 5), ("chat", 20, 20), ("chat", 50, 20),
                                                     ("completions", 3, 3)])
def test_the_client_caps_top_logprobs_at_the_endpoints_maximum_and_declares_it(endpoint, top_n, declared):
    with FaultServer() as srv:
        api = create_backend("openai", "fault-model", GenerateConfig(top_n=top_n, max_retries=0), base_url=srv.base_url,
                             endpoint=endpoint)
        try:
            assert api.capabilities.top_n == declared
            prompt = Prompt("Is the reply good? Answer:", chat=endpoint == "chat")
            url, body = innermost(api).request(prompt, top_n)
            assert url == URL[endpoint]
            assert body.get("top_logprobs" if endpoint == "chat" else "logprobs") == declared
            dist = api.label_logprobs([prompt], ["Yes", "No"], top_n=top_n)[0]
            assert isinstance(dist, LabelDist), dist  # answered, not a Failure
            assert len(dist.top) <= declared and dist.complete is False
        finally:
            api.close()
        assert [r.action for r in srv.requests] == ["ok"]  # the body passed the server's rules


def test_plain_prompts_of_an_auto_backend_are_read_from_the_top_5():
    with FaultServer() as srv:
        api = create_backend("openai", "fault-model", GenerateConfig(chat=False, max_retries=0), base_url=srv.base_url)
        try:
            assert api.capabilities.top_n == 5
            auto = create_backend("openai", "fault-model", GenerateConfig(max_retries=0), base_url=srv.base_url)
            assert auto.capabilities.top_n == 20  # chat unless told otherwise
            dist = auto.label_logprobs([Prompt("Good? Answer:", chat=False)], ["Yes", "No"], top_n=20)[0]
            auto.close()
            assert srv.requests[-1].body["logprobs"] == 5 and srv.requests[-1].action == "ok"
            assert set(dist.logprobs) == {"Yes", "No"}
        finally:
            api.close()


def test_a_backend_told_its_server_gives_more_asks_for_more_and_openai_says_why_not():
    with FaultServer() as srv:
        api = create_backend("openai", "fault-model", GenerateConfig(max_retries=0), base_url=srv.base_url,
                             endpoint="completions", max_top_logprobs=20)
        try:
            assert api.capabilities.top_n == 20 and api.settings()["max_top_logprobs"] == 20
            dist = api.label_logprobs([Prompt("Good? Answer:")], ["Yes", "No"], top_n=20)[0]
        finally:
            api.close()
    assert isinstance(dist, Failure) and "HTTP 400" in dist.reason and "Expected a value <= 5, but got 20" in dist.reason
    for bad in (0, True, "20"):
        with pytest.raises(InputError, match="max_top_logprobs"):
            create_backend("openai", "fault-model", GenerateConfig(), base_url="http://127.0.0.1:9/v1",
                           max_top_logprobs=bad)
