"""Judges that reason first through an OpenAI-compatible API, against HTTP servers on 127.0.0.1.

``tests/fault_server.py`` answers as the two kinds of server do: a reasoning API (OpenAI's o-series and
GPT-5: HTTP 400 with OpenAI's own bodies for ``max_tokens``, ``logprobs``, ``top_logprobs`` and a
``temperature`` other than 1, hidden reasoning tokens in ``usage.completion_tokens_details``, answers in
text) and a chat server with log-probabilities. The same command line a user runs is run here
(``judge score FILE --backend openai --reason N --sampling-fallback 5``), and the scores are checked
against what the server was made to answer. The real ``llama_cpp.server`` on SmolLM2 is the last test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fault_server import FaultServer, expected_goodness, rationale, sampled_label

from judge import GenerateConfig, load_items, make_judge
from judge.backends.openai_api import answer_request
from judge.prompts.answers import YesNo, candidates
from judge.prompts.templates import get_prompt

pytest.importorskip("openai")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "dialogues.jsonl"


def _score(srv: FaultServer, model: str, *args: str, limit: int = 12) -> tuple[int, list[dict], str]:
    proc = subprocess.run(
        [sys.executable, "-m", "judge", "score", str(EXAMPLES), "--backend", "openai", "--base-url", srv.base_url,
         "--model", model, "--no-cache", "--format", "jsonl", "--limit", str(limit), "--max-retries", "0", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, "OPENAI_API_KEY": "test-key"})
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


def _rows(srv: FaultServer, model: str, *, limit: int = 12, chat: bool = True, **options: object) -> list[dict]:
    """The rows of the example file's first ``limit`` items scored in this process (``options``: the spec's
    ``reason`` and the backend's options), as ``judge score`` writes them."""
    from judge.engine import score_rows

    reason = options.pop("reason")
    judge = make_judge("yesno", backend="openai", model=model, base_url=srv.base_url, reason=reason,
                       config=GenerateConfig(cache=False, chat=chat, max_retries=0), **options)
    try:
        return [r.to_dict() for r in score_rows(judge, load_items(str(EXAMPLES))[:limit], "m", None)]
    finally:
        judge.backend.close()


def _prompts(n: int = 12, prompt: str = "yesno", chat: bool = True) -> dict[str, str]:
    """Each example item's prompt with a rationale asked for, as the server sees it (a chat's message)."""
    template = get_prompt(prompt)
    return {it.id: template.render_reasoned(it, tokens=1)[0] for it in load_items(str(EXAMPLES))[:n]}


def _sampled(prompt: str, n: int) -> dict[str, float]:
    """The label frequencies of ``n`` completions sampled with seeds 0..n-1 (None: no answer line)."""
    labels = [sampled_label(prompt, seed) for seed in range(n)]
    return {lab.lower(): labels.count(lab) / n for lab in ("Yes", "No") if labels.count(lab)}


@pytest.mark.parametrize("model, args, budget, hidden", [
    ("o4-mini", ("--reason", "2048", "--reasoning-effort", "low", "--sampling-fallback", "5"), 2048, 16),  # README's
    ("thinker-1", ("--reason", "256", "--sampling-fallback", "5"), 256, 48),  # the issue's
], ids=["known-by-name", "learned-from-400s"])
@pytest.mark.slow
def test_a_reasoning_api_scores_every_item_from_sampled_answers(model, args, budget, hidden):
    """o4-mini is known by name to need max_completion_tokens and no logprobs or temperature; thinker-1 is
    not, and the server's 400s teach the backend the same, once each, for the run. Every item is scored
    from five sampled completions' final answers, marked estimated; none fails for a parameter."""
    with FaultServer(reasoning=True) as srv:
        code, rows, err = _score(srv, model, *args)
    assert code == 0, err
    prompts = _prompts()
    assert len(rows) == 12 and all(r["error"] is None and r["estimated"] and not r["complete"] for r in rows)
    for row in rows:
        expected = _sampled(prompts[row["id"]], 5)
        assert {k: v for k, v in row["label_probs"].items() if v} == pytest.approx(expected)
        assert row["unparsed"] == sum(sampled_label(prompts[row["id"]], s) is None for s in range(5))
        assert row["rationale"] in {rationale("Yes"), rationale("No")} and row["n_generated_tokens"] > 5 * hidden
    assert "of them reasoning" in err  # the usage line counts reasoning tokens apart
    refused = [r for r in srv.requests if {"max_tokens", "logprobs", "top_logprobs"} & set(r.body)
               or r.body.get("temperature", 1.0) != 1.0]
    if model == "o4-mini":
        assert not refused and "refused" not in err
    else:  # the requests in flight when the first refusals came (concurrency 4), then never again
        assert 0 < len(refused) <= 4 * 3 and all(r in srv.requests[:20] for r in refused)
        assert "the server refused" in err and "max_tokens (sent max_completion_tokens instead)" in err
    assert all(r.body.get("max_completion_tokens") == budget + 8 for r in srv.requests if r not in refused)


def test_the_stand_in_refuses_with_openais_own_bodies():
    """What the stand-in answers a reasoning model's refused parameters with, through OpenAI's own client:
    400 ``unsupported_parameter`` for max_tokens, 400 ``unsupported_value`` for a temperature other than 1,
    403 with null param and code for log-probabilities (the bodies OpenAI's API returns)."""
    import openai

    with FaultServer(reasoning=True) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="test-key", max_retries=0)
        ask = {"model": "o4-mini", "messages": [{"role": "user", "content": "Hi"}]}
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(**ask, max_tokens=5)
        assert refused.value.body == {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                       "'max_completion_tokens' instead.", "type": "invalid_request_error", "param": "max_tokens",
            "code": "unsupported_parameter"}
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(**ask, temperature=0)
        assert refused.value.code == "unsupported_value" and refused.value.param == "temperature"
        assert "'temperature' does not support 0 with this model" in refused.value.message
        with pytest.raises(openai.PermissionDeniedError) as denied:
            client.chat.completions.create(**ask, logprobs=True, top_logprobs=5)
        assert denied.value.body == {"message": "You are not allowed to request logprobs from this model",
                                     "type": "invalid_request_error", "param": None, "code": None}
        answer = client.chat.completions.create(**ask, max_completion_tokens=200)
        assert answer.usage.completion_tokens_details.reasoning_tokens == 48 and answer.choices[0].message.content


@pytest.mark.slow
def test_a_one_token_read_of_a_reasoning_model_is_refused_naming_reason():
    with FaultServer(reasoning=True) as srv:
        code, rows, err = _score(srv, "o4-mini")  # known by name: refused before any request
        assert code == 2 and "--reason N" in err and not rows and not srv.requests
        code, rows, err = _score(srv, "thinker-1", limit=3)  # found out by its first answer
    assert code == 3 and all("thinks before it answers" in r["error"] and "--reason N" in r["error"] for r in rows)


@pytest.mark.parametrize("think", ["block", "field"])
def test_visible_thinking_is_kept_with_the_rationale_and_never_read(think):
    """The server's thinking holds the opposite answer line; the scores come from the answers after it."""
    with FaultServer(reasoning=True, think=think) as srv:
        rows = _rows(srv, "o4-mini", reason=256, sampling_fallback=5, limit=4)
    prompts = _prompts(4)
    for row in rows:
        assert {k: v for k, v in row["label_probs"].items() if v} == pytest.approx(_sampled(prompts[row["id"]], 5))
        assert row["rationale"].startswith("<think>Let me weigh it.") and "</think>\nThe reply" in row["rationale"]


@pytest.mark.slow
def test_reasoning_effort_is_sent_and_a_budget_the_reasoning_spends_fails_saying_so():
    with FaultServer(reasoning=True) as srv:
        code, rows, _ = _score(srv, "o4-mini", "--reason", "40", "--sampling-fallback", "3",
                               "--reasoning-effort", "high", limit=2)
    assert code == 3 and all(r.body["reasoning_effort"] == "high" for r in srv.requests)
    assert all("none of the 3 sampled completions" in r["error"] and "finish_reason length" in r["error"] for r in rows)


def test_a_chat_server_with_logprobs_reads_the_answer_token_after_the_rationale():
    """One completion per item, the distribution read from the top log-probabilities at the token after
    ``Answer:``: exactly what the server put there, marked complete = false as every top-N read."""
    with FaultServer() as srv:
        rows = _rows(srv, "chatty", reason=64)
    prompts = _prompts()
    assert len(srv.requests) == 12 and all(r.body["max_tokens"] == 64 + 8 and r.body["logprobs"] for r in srv.requests)
    for row in rows:
        assert not row["estimated"] and not row["complete"] and row["unparsed"] == 0
        assert row["score"] == pytest.approx(expected_goodness(prompts[row["id"]]), abs=1e-6)
        label = "Yes" if expected_goodness(prompts[row["id"]]) > 0.5 else "No"
        assert row["rationale"] == rationale(label)


@pytest.mark.parametrize("chat", [True, False], ids=["chat", "completions"])
def test_a_rationale_without_its_answer_line_is_answered_after_it(chat):
    """A model that ends its rationale without the answer line is asked once more: on the completions
    endpoint the next token after the rationale and the cue; in a chat, its next turn after a request for
    the answer line."""
    with FaultServer(answer_line=False) as srv:
        rows = _rows(srv, "chatty", reason=64, chat=chat, limit=4)
    said = rationale(None)
    ask = answer_request("Answer:", candidates(YesNo()))
    for row in rows:
        prompt = _prompts(4)[row["id"]]
        follow = f"{prompt}\n{said}\n{ask}" if chat else f"{prompt}{said}\nAnswer:"
        assert row["score"] == pytest.approx(expected_goodness(follow), abs=1e-6) and row["rationale"] == said
    assert len(srv.requests) == 8


def test_without_logprobs_or_samples_an_item_fails_naming_the_fallback():
    with FaultServer(logprobs=False) as srv:
        rows = _rows(srv, "claude-like", reason=32, limit=2)
    assert all("--sampling-fallback N" in r["error"] for r in rows)


@pytest.mark.long  # a real server generating rationales: about 30 s
def test_real_chat_server_with_logprobs_reads_the_answer_after_the_rationale(llama_server):
    """``python -m llama_cpp.server`` on SmolLM2: every item is scored from the log-probabilities at its
    answer's token (SmolLM2 rarely writes the answer line itself, so mostly after the follow-up request);
    on the completions endpoint that read is the local backend's, after the same greedy rationale."""
    items = load_items(str(EXAMPLES))[:3]
    for chat in (True, False):
        api = make_judge("yesno-criteria", backend="openai", model="smollm2", base_url=llama_server, reason=24,
                         config=GenerateConfig(cache=False, chat=chat, max_retries=1))
        scores = list(api.score(items))
        assert all(s.ok and not s.estimated and not s.complete and s.said and s.said.rationale for s in scores), \
            [s.error for s in scores]
        if chat:
            continue
        local = make_judge("yesno-criteria", reason=24, config=GenerateConfig(cache=False, chat=False))
        for remote, here in zip(scores, local.score(items), strict=True):
            assert here.said is not None and remote.said is not None
            if here.said.rationale == remote.said.rationale:  # the same greedy rationale: the same answer
                assert remote.value == pytest.approx(here.value, abs=0.02)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "judge", "score", str(EXAMPLES), "--backend", "openai", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})


@pytest.mark.slow
def test_check_prices_a_rationale_at_its_whole_budget_without_contacting_the_server():
    """``--check`` counts what a judge that reasons first may generate: the budget and the answer line (8) per
    request, five times for a reasoning model sampled five times (12 items: 12 x 72 and 12 x 5 x 264)."""
    proc = _cli("--model", "gpt-4o-mini", "--reason", "64", "--check")
    assert proc.returncode == 0, proc.stderr
    assert "~864 generated tokens counted at the rationales' whole budgets" in proc.stdout
    proc = _cli("--model", "o4-mini", "--reason", "256", "--sampling-fallback", "5", "--check")
    assert proc.returncode == 0, proc.stderr
    assert "~15,840 generated tokens" in proc.stdout and " 12 " in proc.stdout


def test_a_rationale_cannot_go_through_the_batch_api(tmp_path):
    proc = _cli("--model", "gpt-4o-mini", "--reason", "64", "--batch", "--cache-path", str(tmp_path / "c.sqlite"))
    assert proc.returncode == 2 and "not a rationale" in proc.stderr and "reason = N" in proc.stderr
