"""Likelihood methods: the engine, cache and config logic on the mock backend (milliseconds), the llama.cpp
path (KV reuse, batched replies, what a real model prefers) on the real SmolLM2."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import replace

import pytest

from judge.backends import Backend, Failure, LabelDist, Prompt, TokenLogprobs, create_backend
from judge.backends.base import Capabilities
from judge.backends.mock import MockBackend
from judge.core.config import GenerateConfig
from judge.core.errors import InputError
from judge.data.items import SYSTEM, USER, Item, Turn
from judge.engine import BackendPool, MethodSpec, build_scorer, prepare
from judge.engine.cache import Cache, CachedBackend, cache_key
from judge.engine.kinds import method_kinds
from judge.engine.named import named_method
from judge.scorers.likelihood import LikelihoodScorer, conditional_prompt, unconditional_prompt


def _items() -> list[Item]:
    fruit = (Turn(USER, "What is your favourite fruit?"),)
    train = (Turn(USER, "When does the train to Paris leave?"),)
    return [
        Item("match", "turn", context=fruit, response="My favourite fruit is the apple, it is sweet and crunchy."),
        Item("mismatch", "turn", context=train, response="My favourite fruit is the apple, it is sweet and crunchy."),
        Item("dialog", "dialog", dialog=fruit + (Turn(SYSTEM, "Apples."), Turn(USER, "Why?"), Turn(SYSTEM, "Sweet."))),
    ]


@pytest.mark.slow
def test_pmi_is_finite_deterministic_and_prefers_the_matching_context(smollm2):
    scorer = LikelihoodScorer(smollm2, "pmi")
    first = [s.value for s in scorer.score(_items())]
    again = [s.value for s in scorer.score(_items()[::-1])][::-1]
    assert all(v is not None and math.isfinite(v) for v in first)
    assert first == again
    # The same reply is better explained by the question it answers than by an unrelated one.
    assert first[0] > first[1]  # type: ignore[operator]


def _mock(**options: object) -> Backend:
    return create_backend("mock", None, GenerateConfig(), **options)


def test_every_signal_scores_and_is_its_statistic_of_the_backends_answers():
    """Each signal's value is ``statistic`` over the log-probabilities the backend gives for the reply with
    and without its context (a dialog item: the mean over its system turns), and the signals differ."""
    from judge.scorers.likelihood import SIGNALS, statistic, utterances

    backend = _mock()
    values = {}
    for signal in SIGNALS:
        values[signal] = [s.value for s in LikelihoodScorer(backend, signal).score(_items())]
        assert all(v is not None and math.isfinite(v) for v in values[signal]), signal
    assert len({tuple(v) for v in values.values()}) == len(SIGNALS)
    for signal in set(SIGNALS) - {"followup"}:
        for item, value in zip(_items(), values[signal], strict=True):
            stats = []
            for context, reply in utterances(item):
                cond, uncond = backend.sequence_logprobs([(conditional_prompt(context), " " + reply),
                                                          (unconditional_prompt(), " " + reply)])
                assert isinstance(cond, TokenLogprobs) and isinstance(uncond, TokenLogprobs)
                stats.append(statistic(signal, cond.logprobs, uncond.logprobs))
            assert value == math.fsum(stats) / len(stats), (signal, item.id)


def test_a_failed_request_fails_its_item_with_the_reason():
    scores = list(LikelihoodScorer(_mock(fail_every=3), "pmi").score(_items()))
    # requests: match 1-2, mismatch 3-4 (the 3rd fails), dialog 5-8 (the 6th fails)
    assert [s.ok for s in scores] == [True, False, False]
    assert "injected failure" in str(scores[1].error)
    too_long = list(LikelihoodScorer(create_backend("mock", None, GenerateConfig(max_context=20)), "pmi").score(_items()))
    assert not any(s.ok for s in too_long) and all("too_long" in s.flags for s in too_long)


def test_second_run_is_served_from_the_cache(tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    backend = CachedBackend(_mock(), cache)
    first = [s.value for s in LikelihoodScorer(backend, "pmi").score(_items())]
    # 8 requests (a context and a no-context one per system reply); "match" and "mismatch" share their
    # reply, so the second no-context request is the first one's, already cached.
    assert (backend.misses, backend.hits) == (7, 1)
    second = [s.value for s in LikelihoodScorer(backend, "pmi-max").score(_items())]
    assert (backend.misses, backend.hits) == (7, 1 + 8)  # every request answered from the cache
    third = [s.value for s in LikelihoodScorer(backend, "pmi").score(_items())]
    assert third == first and second != first


def test_ensemble_takes_a_likelihood_member(tmp_path):
    gen = GenerateConfig(threads=2, cache_path=str(tmp_path / "c.sqlite"))
    spec = MethodSpec(type="ensemble", members=(MethodSpec(prompt="yesno", backend="mock", generate=gen),
                                                MethodSpec(type="likelihood", signal="pmi", backend="mock",
                                                           generate=gen)))
    items = _items()[:2]
    pool = BackendPool()
    try:
        scores = list(build_scorer(spec, items, backends=pool).score(items))
    finally:
        pool.close()
    assert [s.item_id for s in scores] == ["match", "mismatch"]
    assert all(s.ok for s in scores)


def test_likelihood_spec_refuses_an_unknown_signal():
    with pytest.raises(InputError, match="pmi"):
        MethodSpec(type="likelihood", signal="perplexity")
    assert MethodSpec(type="likelihood").name == "likelihood-pmi"


@pytest.mark.slow  # two CLI processes, each loading the model
def test_documented_cli_commands_score(tmp_path):
    """docs/likelihood.md's `judge score --likelihood` and `--member likelihood=pmi` commands, as a user
    runs them (subprocess, the embedded SmolLM2)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    data = root / "examples" / "dialogues.jsonl"
    for extra in (["--likelihood", "conditional"], ["--member", "prompt=yesno-criteria", "--member", "likelihood=pmi"]):
        out = tmp_path / "rows.jsonl"
        proc = subprocess.run([sys.executable, "-m", "judge", "score", str(data), "--limit", "3", "--threads", "2",
                               "-o", str(out), *extra], cwd=root, env={**os.environ}, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        rows = [json.loads(x) for x in out.read_text().splitlines()]
        assert len(rows) == 3 and all(r["score"] is not None for r in rows), rows


def test_config_errors_name_file_and_key(tmp_path):
    from judge.harness.config import load_experiment

    path = tmp_path / "exp.toml"
    path.write_text('datasets = ["FT"]\n[[methods]]\nname = "lik"\ntype = "likelihood"\nsignal = "pmi-mean"\n')
    with pytest.raises(InputError, match=r"exp\.toml.*methods\[0\]\.signal.*pmi"):
        load_experiment(path)
    path.write_text('datasets = ["FT"]\n[[methods]]\ntype = "likelihood"\nprompt = "yesno"\n')
    with pytest.raises(InputError, match=r"methods\[0\]\.prompt.*unknown key"):
        load_experiment(path)
    path.write_text('datasets = ["FT"]\n[[methods]]\ntype = "likelihood"\nsignal = "conditional"\n')
    (method,) = load_experiment(path).methods
    assert (method.name, method.settings.signal) == ("likelihood-conditional", "conditional")


# --- llama.cpp: a likelihood call leaves the KV cache so that later answers equal their answers alone ---
# A reusing backend and one that evaluates every prompt from an empty cache, both with n_batch=32 so that
# prompts of a few dozen tokens reuse whole batches (as in test_prefix_reuse.py).

_CONTEXT = (Turn(USER, "I have been learning to bake sourdough bread at home, but my loaves come out flat and dense "
                       "every time, even though the starter bubbles nicely. What am I doing wrong?"),)
_REPLY = " Your dough may be over-proofed: shorten the second rise and shape it with more tension."


def _label_prompt(reply: str) -> Prompt:
    """A label prompt that starts with the likelihood prompt and its reply (the longest shared prefix)."""
    return Prompt(conditional_prompt(_CONTEXT).text + reply + "\nIs this reply helpful? Answer:")


@pytest.mark.slow
def test_label_answer_after_a_likelihood_call_equals_the_answer_alone(reuse, scratch):
    reuse.llm.reset()
    reuse.sequence_logprobs([(conditional_prompt(_CONTEXT), _REPLY), (unconditional_prompt(), _REPLY)])
    reuse.sequence_logprobs([(conditional_prompt(_CONTEXT), _REPLY)])
    for reply in (_REPLY, _REPLY[:40]):  # the whole reply, and a prompt that parts from it inside the reply
        (after,) = reuse.label_logprobs([_label_prompt(reply)], [" Yes", " No"])
        (alone,) = scratch.label_logprobs([_label_prompt(reply)], [" Yes", " No"])
        assert isinstance(after, LabelDist) and isinstance(alone, LabelDist)
        assert after.logprobs == alone.logprobs and after.top == alone.top  # bit for bit
        assert after.n_evaluated_tokens < after.n_prompt_tokens  # the likelihood call's KV prefix was reused
        assert (after.n_prompt_tokens - after.n_evaluated_tokens) % 32 == 0  # in whole batches only
        reuse.sequence_logprobs([(conditional_prompt(_CONTEXT), _REPLY)])


def test_likelihood_answer_does_not_depend_on_what_ran_before(reuse, scratch):
    request = (conditional_prompt(_CONTEXT), _REPLY)
    (alone,) = scratch.sequence_logprobs([request])
    reuse.llm.reset()
    reuse.label_logprobs([_label_prompt(_REPLY)], [" Yes", " No"])
    (after_label,) = reuse.sequence_logprobs([request])
    (after_itself,) = reuse.sequence_logprobs([request])
    for got in (after_label, after_itself):
        assert isinstance(got, TokenLogprobs) and isinstance(alone, TokenLogprobs)
        assert got.logprobs == alone.logprobs  # bit for bit
    assert isinstance(after_itself, TokenLogprobs) and isinstance(alone, TokenLogprobs)
    assert after_itself.n_evaluated_tokens < alone.n_evaluated_tokens  # reused, and still equal
    assert len(alone.logprobs) == len(reuse._tok(_REPLY)) and alone.n_evaluated_tokens == (
        alone.n_prompt_tokens + len(alone.logprobs) - 1)  # the prompt, then every reply token but the last


@pytest.mark.slow
def test_a_reply_in_batches_matches_it_one_token_at_a_time(reuse, scratch):
    """A reply longer than ``n_batch`` (32 here) runs in several batches, each position an output. Every
    token's log-probability must be the one the token-by-token evaluation gives, up to the CPU kernels'
    difference between a one-token batch and a longer one (measured on SmolLM2: up to .3 for a token,
    .04 on average); a row read for the wrong position would differ by nats. And the answer stays the
    same after another call, bit for bit."""
    reply = _REPLY + " Then let it cool for an hour before you cut it, or the crumb will be gummy." * 2
    request = (conditional_prompt(_CONTEXT), reply)
    (alone,) = scratch.sequence_logprobs([request])
    reference = scratch.token_by_token(*request)
    assert isinstance(alone, TokenLogprobs) and len(alone.logprobs) == len(reference) > 32
    diffs = [abs(a - b) for a, b in zip(alone.logprobs, reference)]
    assert max(diffs) < 1.0 and sum(diffs) / len(diffs) < 0.1
    reuse.sequence_logprobs([(unconditional_prompt(), reply)])
    (after,) = reuse.sequence_logprobs([request])
    assert isinstance(after, TokenLogprobs) and after.logprobs == alone.logprobs


def test_sequence_cache_keys_name_how_the_reply_was_evaluated(smollm2):
    """Answers of the engine that decoded a reply token by token are never served as this engine's: the
    llama.cpp backend adds how it evaluates a reply to its sequence keys (and to no label key); a backend
    without ``sequence_settings`` keeps the keys it had (the value below was computed before they existed)."""
    from judge.engine.cache import SCHEMA_VERSION, _digest, sequence_key

    prompt, text = unconditional_prompt(), " Hello."
    mock = create_backend("mock", None, GenerateConfig())
    assert mock.sequence_settings() == {}
    assert sequence_key(mock, prompt, text) == "0ee2072fee7a150723f1693635123434995e5fddff38135075fe1122118c21a8"
    assert smollm2.sequence_settings() == {"reply": "batches of n_batch, every position an output"}
    before = _digest([SCHEMA_VERSION, "sequence", smollm2.name, smollm2.model_id, prompt.text, False, text,
                      smollm2.settings()])
    assert sequence_key(smollm2, prompt, text) != before



def test_a_likelihood_method_on_a_backend_without_per_token_log_probabilities_fails_clearly():
    """A backend that reads no per-token log-probabilities (top-N APIs; here the mock with the capability
    declared off) is refused with the reason, before any item is scored; the default
    ``sequence_logprobs`` of the contract fails every request naming the backend."""
    class NoSequences(MockBackend):
        def __init__(self) -> None:
            super().__init__(None, GenerateConfig())
            self.capabilities = dataclasses.replace(self.capabilities, sequence_logprobs=False)

        sequence_logprobs = Backend.sequence_logprobs

    backend = NoSequences()
    with pytest.raises(InputError, match=r"backend 'mock' cannot read the log-probabilities of a reply"):
        LikelihoodScorer(backend, "pmi")
    (failed,) = backend.sequence_logprobs([(unconditional_prompt(), " Hi.")])
    assert isinstance(failed, Failure) and "cannot read the log-probabilities of a given text" in failed.reason
    # the mock itself reads them, so a likelihood method built on it scores
    spec = MethodSpec(type="likelihood", backend="mock")
    items = _items()[:1]
    assert all(s.ok for s in build_scorer(spec, items).score(items))


def test_label_cache_keys_are_unchanged():
    """Likelihood answers live in their own table with their own keys; a label answer's key is what it was
    before likelihood methods existed (these values were computed on the code without them)."""
    backend = create_backend("mock", None, GenerateConfig())
    assert backend.capabilities.sequence_logprobs and not backend.capabilities.split_shared
    assert cache_key(backend, Prompt("Is this reply good? Answer:"), [" Yes", " No"], 20) == (
        "ac9e5dc599d4b0fcceb629102b6b91d0a8fb83e81689ff350d8d11d73638a811")
    assert cache_key(backend, Prompt("Is this reply good? Answer:", chat=True, shared=5), [" Yes", " No"], 20) == (
        "38201f1ca8ec52302a30fe474311aaaad6d44360a66b41e0f3f583952bc175ed")


class _Recorder(Backend):
    """A backend that reads sequence log-probabilities and records every text it is shown: a made-up
    log-probability per character, so scores depend on the texts and nothing else."""

    name = "recorder"
    model_id = "recorder"
    capabilities = Capabilities(full_vocab=True, sequence_logprobs=True)

    def __init__(self) -> None:
        self.seen: list[str] = []

    def sequence_logprobs(self, requests):
        self.seen += [prompt.text + continuation for prompt, continuation in requests]
        return [TokenLogprobs([-(ord(ch) % 7) / 3 for ch in continuation], n_prompt_tokens=len(prompt.text))
                for prompt, continuation in requests]


@pytest.mark.parametrize("signal", ["pmi", "conditional", "followup"])
def test_likelihood_methods_read_nothing_beyond_the_conversation(signal):
    """What makes a likelihood method reference-free and never uses-future, checked on what it does: the
    texts it sends hold neither the references nor the user's next turn, and giving an item other ones
    changes no score. Its kind (from the reads it declares) is therefore reference-free, in judge run,
    judge score's meta and judge serve's /v1/info alike, and no allow_future is asked of it."""
    from judge.engine.kinds import scorer_kinds

    reference, future = "REFERENCE-TEXT-XYZ", "NEXT-USER-TURN-QRS"
    plain = _items()
    marked = [replace(it, references=(reference,), next_user=future) if it.level == "turn" else it for it in plain]
    other = [replace(it, references=("another",), next_user="something else") if it.level == "turn" else it
             for it in plain]
    recorder = _Recorder()
    scorer = LikelihoodScorer(recorder, signal)  # type: ignore[arg-type]
    scores = [[s.value for s in scorer.score(items)] for items in (plain, marked, other)]
    assert recorder.seen and not any(reference in t or future in t for t in recorder.seen)
    assert scores[0] == scores[1] == scores[2] and all(v is not None for v in scores[0])
    assert scorer_kinds(scorer).to_dict() == {"kind": "reference-free", "uses_future": False, "reads": []}
    kinds = method_kinds(MethodSpec(type="likelihood", signal=signal))
    assert (kinds.kind, kinds.label) == ("reference-free", "reference-free")
    prepare(MethodSpec(type="likelihood", signal=signal), marked)  # no allow_future needed
    # An ensemble of a likelihood member and a reference-free prompt stays reference-free.
    assert method_kinds(named_method("criteria-pmi")).kind == "reference-free"
