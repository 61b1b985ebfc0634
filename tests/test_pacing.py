"""Pacing hosted requests (judge/backends/pacing.py): OpenAI's rate-limit header formats, the budget copy
and its refill rate, the adaptive concurrency, the user's --rpm cap, and end to end against the fault
server's simulated limit: no item fails, far fewer 429s than without pacing, and the server's rate held."""

from __future__ import annotations

import time

import pytest

from judge.backends import create_backend
from judge.backends.layer import innermost
from judge.backends.pacing import Budget, Cap, Pacer, parse_duration, read_budget
from judge.core.config import GenerateConfig
from judge.data.items import USER, Item, Turn
from judge.prompts.templates import get_prompt
from judge.scorers.llm import LLMJudge
from tests.fault_server import FaultServer, RateLimit, go_duration

pytest.importorskip("openai")


@pytest.mark.parametrize(("text", "seconds"), [("6m0s", 360.0), ("1s", 1.0), ("20ms", 0.02), ("1.5s", 1.5),
                                               ("1h2m3.5s", 3723.5), ("300us", 0.0003), ("0.5", 0.5), ("12", 12.0)])
def test_reset_headers_in_openais_formats(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", [None, "", "soon", "5 s", "1s2", "m1s"])
def test_unreadable_reset_headers_are_none(text):
    assert parse_duration(text) is None


def test_the_fault_server_writes_durations_as_go_does():
    assert [go_duration(s) for s in (360, 1, 0.02, 1.5, 61.25)] == ["6m0s", "1s", "20ms", "1.5s", "1m1.25s"]
    assert all(parse_duration(go_duration(s)) == pytest.approx(s) for s in (360, 1, 0.02, 1.5, 61.25))


def test_a_budget_refills_at_the_rate_its_headers_imply():
    headers = {"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0",
               "x-ratelimit-reset-requests": "1m0s"}
    b = read_budget(headers, "requests", now=100.0, in_flight=0)
    assert b is not None and b.rate == pytest.approx(1.0)  # 60 used, whole again in 60 s: one a second
    assert b.wait_for(1, 100.0) == pytest.approx(1.0)
    assert b.available(130.0) == pytest.approx(30.0) and b.available(1000.0) == 60.0
    b.take(1, 101.0)
    assert b.available(101.0) == pytest.approx(0.0)
    # in-flight requests the server may not have counted yet come off what it says is left
    assert read_budget({**headers, "x-ratelimit-remaining-requests": "10"}, "requests", 0.0, 3).remaining == 7
    # without a limit there is no rate: wait for the reset
    nolimit = Budget(0, None, None, 0.0, 5.0)
    assert nolimit.wait_for(1, 1.0) == pytest.approx(4.0) and nolimit.wait_for(1, 6.0) == 0.0
    assert read_budget({}, "requests", 0.0, 0) is None


def test_concurrency_halves_on_429s_once_a_second_and_climbs_back():
    clock = [0.0]
    p = Pacer(16, clock=lambda: clock[0])
    tickets = [p.acquire(10) for _ in range(8)]  # a burst of 429s from requests already in flight: one decrease
    for t in tickets:
        p.settle(t, None, limited=True)
    assert p.limit == 8 and p.stats.decreases == 1 and p.stats.limited == 8
    clock[0] = 2.0
    p.settle(p.acquire(10), None, limited=True)
    assert p.limit == 4
    for _ in range(4 + 5 + 6):  # a streak as long as the limit raises it by one
        p.settle(p.acquire(10), {"x-ratelimit-remaining-requests": "500", "x-ratelimit-limit-requests": "600",
                                 "x-ratelimit-reset-requests": "10s"})
    assert p.limit == 7 and p.stats.increases == 3
    fixed = Pacer(4, adaptive=False)
    fixed.settle(fixed.acquire(1), None, limited=True)
    assert fixed.limit == 4


def test_answers_out_of_order_never_raise_the_budget_and_later_sends_come_off_it():
    clock = [0.0]
    p = Pacer(8, clock=lambda: clock[0])
    first, second, third = p.acquire(1), p.acquire(1), p.acquire(1)
    head = {"x-ratelimit-limit-requests": "600", "x-ratelimit-reset-requests": "60s"}
    p.settle(second, {**head, "x-ratelimit-remaining-requests": "100"})  # one request (the third) sent after it
    assert p._requests is not None and p._requests.remaining == 99
    p.settle(first, {**head, "x-ratelimit-remaining-requests": "150"})  # older and reporting more: ignored
    assert p._requests.remaining == pytest.approx(99)
    p.settle(third, {**head, "x-ratelimit-remaining-requests": "40"})  # newest: it sets the budget
    assert p._requests.remaining == 40


def test_a_cap_spaces_amounts_evenly():
    cap = Cap(per_minute=120)  # two a second
    cap.take(1, 10.0)
    assert cap.wait_for(1, 10.0) == pytest.approx(0.5)
    cap.take(1, 10.5)
    assert cap.wait_for(1, 10.6) == pytest.approx(0.4)


def _judge(srv: FaultServer, **options) -> LLMJudge:
    cfg = GenerateConfig(concurrency=options.pop("concurrency", 16), max_retries=6, timeout=10.0, cache=False)
    backend = create_backend("openai", "fault-model", cfg, base_url=srv.base_url, backoff=0.05, max_backoff=0.5,
                             **options)
    return LLMJudge(get_prompt("yesno"), backend, batch_size=1000)


def _items(n: int, tag: str) -> list[Item]:
    return [Item(id=f"{tag}{i}", level="turn", context=(Turn(USER, f"Question {i} ({tag}): any tips for chess?"),),
                 response=f"Answer {i}: play short games and review them.") for i in range(n)]


@pytest.mark.slow
def test_paced_requests_stay_under_the_servers_limit_and_no_item_fails():
    """120 requests a minute at 20x speed: 40 a second after a burst of 120. Paced, the run keeps to the
    rate with almost no 429; unpaced (16 always in flight) it meets the limit over and over."""
    n = 240
    results = {}
    for pace in (True, False):
        with FaultServer(latency=0.02, limit=RateLimit(requests_per_minute=120, time_scale=20)) as srv:
            judge = _judge(srv, pace=pace)
            t0 = time.monotonic()
            scores = list(judge.score(_items(n, f"p{pace}")))
            results[pace] = (time.monotonic() - t0, sum(not s.ok for s in scores), srv.limited)
            judge.backend.close()
    (paced_s, paced_failed, paced_429), (_, _, unpaced_429) = results[True], results[False]
    assert paced_failed == 0
    assert paced_429 <= 5 and unpaced_429 >= 20, results
    ideal = (n - 120) / 40
    assert paced_s >= ideal * 0.8, results  # it cannot beat the server's rate ...
    assert paced_s <= ideal * 2.5 + 1.0, results  # ... and comes close to it


def test_a_retry_after_holds_every_request_when_paced():
    with FaultServer() as srv:
        srv.script("<wait>", "429:1")
        judge = _judge(srv, concurrency=2)
        its = _items(1, "w") + _items(1, "x")
        its[0] = Item(id="w", level="turn", context=its[0].context, response=its[0].response + " <wait>")
        t0 = time.monotonic()
        assert all(s.ok for s in judge.score(its))
        assert time.monotonic() - t0 >= 0.95
        assert innermost(judge.backend).pacer.stats.limited == 1
        judge.backend.close()


def test_rpm_caps_what_is_sent():
    with FaultServer() as srv:
        judge = _judge(srv, rpm=1200)  # 20 a second
        t0 = time.monotonic()
        assert all(s.ok for s in judge.score(_items(21, "r")))
        times = sorted(r.time for r in srv.requests)
        assert times[-1] - times[0] >= 0.95 and time.monotonic() - t0 >= 0.95
        judge.backend.close()


@pytest.mark.slow
def test_a_token_limit_is_paced_too():
    with FaultServer(limit=RateLimit(tokens_per_minute=3000, time_scale=20)) as srv:  # 1,000 tokens a second
        judge = _judge(srv)
        scores = list(judge.score(_items(60, "t")))
        assert all(s.ok for s in scores)
        assert srv.limited <= 5
        judge.backend.close()
