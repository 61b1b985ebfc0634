"""The mock backend (``--backend mock``): hash-based label distributions with no model, for testing
pipelines. These tests hold it to the contract of the real backends and to its own promises:
determinism, any label set, single-token checks, failure injection reported per item, latency."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judge.backends import Backend, Failure, LabelDist, Prompt, TokenLogprobs, create_backend
from judge.backends.mock import pieces
from judge.core.config import GenerateConfig
from judge.core.errors import InputError, TemplateError
from judge.prompts.answers import Rating, YesNo, candidates, check_labels

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "dialogues.jsonl"
YES = ["Yes", " yes", "No", " no"]
#: The mock's log-probabilities of " Hello there." after "System:" (seed 0), written down once.
PINNED = [-2.717223122123, -5.702561738652]


def _mock(**options: object) -> Backend:
    return create_backend("mock", None, GenerateConfig(), **options)


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=ROOT, env={**os.environ, **(env or {})},
                          capture_output=True, text=True, timeout=300)


def test_is_a_registered_backend_with_the_contract():
    backend = _mock()
    assert isinstance(backend, Backend) and backend.name == "mock" and backend.model_id == "mock"
    assert backend.capabilities.full_vocab and backend.capabilities.chat_template


def test_the_same_seed_and_prompt_give_the_same_distribution_and_others_differ():
    prompt = Prompt("Is this reply good?\nAnswer:")
    a = _mock().label_logprobs([prompt], YES)[0]
    b = _mock().label_logprobs([prompt], YES)[0]
    assert isinstance(a, LabelDist) and isinstance(b, LabelDist)
    assert a.logprobs == b.logprobs and a.top == b.top
    other_seed = _mock(seed=1).label_logprobs([prompt], YES)[0]
    other_text = _mock().label_logprobs([Prompt("Is this reply bad?\nAnswer:")], YES)[0]
    as_chat = _mock().label_logprobs([Prompt(prompt.text, chat=True)], YES)[0]
    for other in (other_seed, other_text, as_chat):
        assert isinstance(other, LabelDist) and other.logprobs != a.logprobs


@pytest.mark.parametrize("answer", [YesNo(), Rating(1, 5), Rating(0, 4), Rating(1, 10), Rating(0, 2)])
def test_any_label_set_gets_a_proper_distribution(answer):
    cands = candidates(answer)
    dist = _mock().label_logprobs([Prompt("Rate the reply.")], cands)[0]
    assert isinstance(dist, LabelDist)
    assert set(dist.logprobs) == set(cands)  # every spelling is one "token" at the default token_chars
    total = sum(math.exp(v) for v in dist.logprobs.values())
    assert 0 < total < 1  # the rest of the "vocabulary" holds some mass, as in a real model
    assert dist.top == sorted(dist.top, key=lambda t: -t[1])


def test_single_token_check_refuses_labels_like_a_real_tokenizer():
    backend = _mock(token_chars=1)
    assert backend.single_token("3") and backend.single_token(" 3") and not backend.single_token("10")
    assert not backend.single_token("two words") and not backend.single_token("")
    with pytest.raises(TemplateError, match="'10'"):
        check_labels(Rating(1, 10), backend, template="rating")
    check_labels(Rating(1, 5), backend, template="rating")  # every 1-5 label is one token
    dist = backend.label_logprobs([Prompt("x")], ["1", "10"])[0]
    assert isinstance(dist, LabelDist) and set(dist.logprobs) == {"1"}  # several tokens: absent, as in llama.cpp


def test_prompt_tokens_follow_the_chars_per_token_rule_and_too_long_prompts_fail():
    backend = create_backend("mock", None, GenerateConfig(max_context=10), chars_per_token=2)
    assert backend.count_tokens(Prompt("abcdefg")) == 4
    dist = backend.label_logprobs([Prompt("abcdefg")], YES)[0]
    assert isinstance(dist, LabelDist) and dist.n_prompt_tokens == 4
    failed = backend.label_logprobs([Prompt("x" * 40)], YES)[0]
    assert isinstance(failed, Failure) and failed.flag == "too_long"


def test_injected_failures_are_deterministic_by_rate_and_periodic_by_count():
    prompts = [Prompt(f"prompt {i}") for i in range(200)]
    first = [isinstance(r, Failure) for r in _mock(fail_rate=0.25).label_logprobs(prompts, YES)]
    again = [isinstance(r, Failure) for r in _mock(fail_rate=0.25).label_logprobs(prompts, YES)]
    assert first == again and 25 <= sum(first) <= 75
    every = [isinstance(r, Failure) for r in _mock(fail_every=3).label_logprobs(prompts[:9], YES)]
    assert every == [False, False, True] * 3


def test_latency_is_slept_per_prompt():
    start = time.perf_counter()
    _mock(latency_ms=50).label_logprobs([Prompt(str(i)) for i in range(4)], YES)
    assert time.perf_counter() - start >= 0.2


# --- per-token log-probabilities of a given text (sequence_logprobs, for likelihood methods) ---

def test_sequence_logprobs_are_pinned_values_from_a_stable_hash():
    """Reproducible across processes and machines: these values were computed once and written down (a
    salted ``hash()`` would change them from run to run)."""
    backend = _mock()
    assert backend.capabilities.sequence_logprobs
    (got,) = backend.sequence_logprobs([(Prompt("System:"), " Hello there.")])
    assert isinstance(got, TokenLogprobs) and got.n_prompt_tokens == 2
    assert [round(x, 12) for x in got.logprobs] == PINNED
    assert got.n_evaluated_tokens == 2 + 2 - 1  # the prompt, then every continuation token but the last
    (other_seed,) = _mock(seed=1).sequence_logprobs([(Prompt("System:"), " Hello there.")])
    (as_chat,) = backend.sequence_logprobs([(Prompt("System:", chat=True), " Hello there.")])
    for other in (other_seed, as_chat):
        assert isinstance(other, TokenLogprobs) and other.logprobs != got.logprobs


def test_a_token_depends_on_the_prompt_and_the_tokens_before_it_only():
    backend = _mock()
    a, b, c = backend.sequence_logprobs([(Prompt("Q1"), " yes it is"), (Prompt("Q1"), " yes it was"),
                                         (Prompt("Q2"), " yes it is")])
    assert isinstance(a, TokenLogprobs) and isinstance(b, TokenLogprobs) and isinstance(c, TokenLogprobs)
    assert a.logprobs[:2] == b.logprobs[:2] and a.logprobs[2] != b.logprobs[2]
    assert a.logprobs != c.logprobs
    assert all(-8 < x <= 0 for x in a.logprobs + b.logprobs + c.logprobs)
    # the answer never depends on what ran before, nor on the declared shared part (the mock keeps no KV cache)
    (again,) = backend.sequence_logprobs([(Prompt("Q1", shared=1), " yes it is")])
    assert isinstance(again, TokenLogprobs) and again.logprobs == a.logprobs


@pytest.mark.parametrize("text", ["", " Hello there.", "two  spaces\nand a line", " supercalifragilistic", "\n"])
def test_pieces_join_back_to_the_text_and_a_label_is_one_piece(text):
    toks = pieces(text, 8)
    assert "".join(toks) == text and all(toks)
    assert all(_mock().single_token(t) or len(t.strip()) == 0 or len(t.lstrip(" ")) == 8 for t in toks)
    (got,) = _mock().sequence_logprobs([(Prompt("x"), text)])
    assert isinstance(got, TokenLogprobs) and len(got.logprobs) == len(toks)
    assert pieces(" Yes", 8) == [" Yes"] and pieces("10", 1) == ["1", "0"]
    # a prompt's declared shared part ends after a line break: the halves' pieces are the whole's
    whole = "A transcript line.\nUser:"
    assert pieces(whole, 8) == pieces(whole[:19], 8) + pieces(whole[19:], 8)


def test_sequence_requests_fail_as_label_prompts_do():
    backend = create_backend("mock", None, GenerateConfig(max_context=10), chars_per_token=2, chat_template=False)
    long, chat, ok = backend.sequence_logprobs([(Prompt("abcdefg"), " one two three four five six"), (Prompt("x", chat=True), " a"),
                                                (Prompt("abc"), "")])
    assert isinstance(long, Failure) and long.flag == "too_long"  # 4 prompt tokens + 6 pieces fill the window
    assert isinstance(chat, Failure) and "no chat template" in chat.reason
    assert isinstance(ok, TokenLogprobs) and (ok.logprobs, ok.n_prompt_tokens) == ([], 2)
    every = _mock(fail_every=2).sequence_logprobs([(Prompt(str(i)), " a") for i in range(4)])
    assert [isinstance(r, Failure) for r in every] == [False, True, False, True]
    rate = [isinstance(r, Failure) for r in _mock(fail_rate=0.5).sequence_logprobs(
        [(Prompt("p"), f" reply {i}") for i in range(100)])]
    assert 25 <= sum(rate) <= 75 and rate == [isinstance(r, Failure) for r in _mock(fail_rate=0.5).sequence_logprobs(
        [(Prompt("p"), f" reply {i}") for i in range(100)])]


@pytest.mark.parametrize(("options", "message"), [
    ({"temperature": 1}, "no option 'temperature'"),
    ({"fail_rate": 2}, "fail_rate must be between 0 and 1"),
    ({"seed": "x"}, "seed must be a whole number"),
    ({"chars_per_token": 0}, "chars_per_token must be a number > 0"),
])
def test_bad_options_are_named(options, message):
    with pytest.raises(InputError, match=message):
        _mock(**options)


def test_settings_hold_what_changes_answers_only():
    assert _mock(latency_ms=5, fail_rate=0.5).settings() == _mock().settings()
    assert _mock(seed=2).settings() != _mock().settings()


def test_cli_scores_every_item_reproducibly_behind_the_cache(tmp_path):
    cache = {"JUDGE_CACHE": str(tmp_path / "cache.sqlite")}
    out_a, out_b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first = _cli("score", str(EXAMPLES), "--backend", "mock", "-o", str(out_a), env=cache)
    assert first.returncode == 0, first.stderr
    assert "0 hits, 12 misses" in first.stderr
    second = _cli("score", str(EXAMPLES), "--backend", "mock", "-o", str(out_b), env=cache)
    assert second.returncode == 0 and "12 hits, 0 misses" in second.stderr
    assert out_a.read_bytes() == out_b.read_bytes()
    rows = [json.loads(x) for x in out_a.read_text().splitlines()]
    assert len(rows) == 12 and all(0 <= r["score"] <= 1 and r["error"] is None for r in rows)


def test_cli_reports_injected_failures_per_item_with_exit_code_3(tmp_path):
    out = tmp_path / "rows.jsonl"
    proc = _cli("score", str(EXAMPLES), "--backend", "mock", "--no-cache", "--prompt", "rating", "--quality",
                "overall", "--backend-option", "fail_every=4", "-o", str(out))
    assert proc.returncode == 3, proc.stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    failed = [r for r in rows if r["error"]]
    assert len(rows) == 12 and len(failed) == 3
    assert all("injected failure" in r["error"] and r["score"] is None for r in failed)


def test_cli_names_a_bad_mock_option_before_scoring():
    proc = _cli("score", str(EXAMPLES), "--backend", "mock", "--backend-option", "latency=5")
    assert proc.returncode == 2
    assert "field 'backend-option'" in proc.stderr and "no option 'latency'" in proc.stderr


@pytest.mark.slow
def test_documented_harness_run_on_the_mock_backend(tmp_path, data_dir):
    """docs/backends.md: a shipped config, every LLM method on the mock backend, end to end in seconds."""
    out = tmp_path / "mock-run"
    proc = _cli("run", "benchmarks/configs/table5_selection.toml", "--data-dir", str(data_dir), "--backend", "mock",
                "--datasets", "FT", "--limit", "10", "-o", str(out), "--no-progress",
                env={"JUDGE_CACHE": str(tmp_path / "cache.sqlite")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    methods = summary["methods"]
    assert len(methods) >= 10 and all(m.get("backend") == "mock" for m in methods.values() if m["type"] == "llm")
    assert all(r["n"] == 10 and r["n_failed"] == 0 for r in summary["results"])
