"""The likelihood signal ``followup``: FED's follow-ups scored by the judge model, against the follow-up table
and the cache on the mock backend, and through llama.cpp (the real SmolLM2) against the scratch backend."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from judge.backends import Prompt, TokenLogprobs, create_backend
from judge.core.config import GenerateConfig
from judge.data.items import SYSTEM, USER, Item, Turn
from judge.engine import MethodSpec
from judge.engine.cache import Cache, CachedBackend, sequence_key
from judge.engine.kinds import method_kinds
from judge.scorers.classic.fed_metric import followups
from judge.scorers.likelihood import (
    HEADER,
    LikelihoodScorer,
    followup_prompt,
    followup_score,
    followup_texts,
)

ROOT = Path(__file__).resolve().parents[1]
_ASK = Turn(USER, "I have been learning to bake sourdough bread at home, but my loaves come out flat. Any idea why?")
_TURN = Item("t", "turn", context=(_ASK,), response="Your dough may be over-proofed: shorten the second rise.")
_DIALOG = Item("d", "dialog", dialog=(_ASK, Turn(SYSTEM, "Maybe over-proofed."), Turn(USER, "How long then?"),
                                      Turn(SYSTEM, "About two hours at room temperature.")))


def test_the_prompt_is_the_transcript_through_the_reply_then_the_users_turn():
    turn, dialog = followup_prompt(_TURN), followup_prompt(_DIALOG)
    assert turn.text == f"{HEADER}\nUser: {_ASK.text}\nSystem: {_TURN.response}\nUser:"
    assert dialog.text.endswith("System: About two hours at room temperature.\nUser:")
    assert dialog.text.count("\nSystem: ") == 2 and dialog.text.count("\nUser:") == 3
    # the shared part is everything but "User:", the line break included
    for p in (turn, dialog):
        assert p.text[: p.shared].endswith("\n") and p.text[p.shared:] == "User:"


def test_follow_up_table_per_level():
    table = followups()
    for level in ("turn", "dialog"):
        texts = followup_texts(level)
        assert texts == sorted(set(texts))
        assert set(texts) == {u for q in table[level].values() for side in q.values() for u in side}


def test_the_score_is_feds_overall_from_each_follow_ups_mean_log_probability():
    """Per quality: mean over positives of their mean token log-probability minus the same over negatives
    (no positives: 0); then the mean over the level's qualities. Checked against a hand computation
    with made-up log-probabilities."""
    texts = followup_texts("turn")
    lps = {u: [-(i % 5) - 0.5, -(i % 3) - 1.0] for i, u in enumerate(texts)}
    mean = {u: sum(v) / len(v) for u, v in lps.items()}
    expected = []
    for q in followups()["turn"].values():
        pos = sum(mean[u] for u in q["positive"]) / len(q["positive"]) if q["positive"] else 0.0
        neg = sum(mean[u] for u in q["negative"]) / len(q["negative"]) if q["negative"] else 0.0
        expected.append(pos - neg)
    assert followup_score("turn", lps) == pytest.approx(sum(expected) / len(expected), abs=1e-12)
    # a likelier positive follow-up raises the score
    up = dict(lps)
    positive = next(u for q in followups()["turn"].values() for u in q["positive"])
    up[positive] = [x + 1.0 for x in lps[positive]]
    assert followup_score("turn", up) > followup_score("turn", lps)


# 34 evaluations from scratch per item: `long` (CI keeps the documented command below on SmolLM2; the engine
# logic runs on the mock above).
@pytest.mark.long
@pytest.mark.parametrize("level", ["turn", "dialog"])
def test_scores_equal_the_follow_ups_evaluated_from_scratch_one_by_one(reuse, scratch, level):
    """On the real SmolLM2: the scorer's value is followup_score over each follow-up's log-probabilities
    from a backend that reuses nothing, bit for bit, while the reusing backend evaluates the transcript
    once per item and only each follow-up's last line and tokens after it."""
    for item in [_TURN if level == "turn" else _DIALOG]:
        prompt, texts = followup_prompt(item), followup_texts(item.level)
        toks = reuse.tokens(prompt)
        assert 0 < reuse.shared_tokens(prompt, toks) < len(toks)  # the declared split tokenizes as a prefix
        alone = [scratch.sequence_logprobs([(prompt, " " + u)])[0] for u in texts]
        assert all(isinstance(r, TokenLogprobs) and r.logprobs for r in alone)
        expected = followup_score(item.level, {u: r.logprobs for u, r in zip(texts, alone)})  # type: ignore[union-attr]
        reuse.reset()
        (score,) = LikelihoodScorer(reuse, "followup").score([item])
        assert score.value == expected and math.isfinite(expected)
        evaluated_alone = sum(r.n_evaluated_tokens for r in alone)  # type: ignore[union-attr]
        assert score.n_evaluated_tokens is not None and score.n_evaluated_tokens < evaluated_alone / 2


def test_the_scorer_reads_every_follow_up_of_the_items_level_after_its_transcript():
    """On the mock backend: each item's value is followup_score over the log-probabilities of its level's
    follow-ups after its own prompt, asked one by one; a failed follow-up fails the item with its reason."""
    backend = create_backend("mock", None, GenerateConfig())
    for item in (_TURN, _DIALOG):
        prompt, texts = followup_prompt(item), followup_texts(item.level)
        alone = [backend.sequence_logprobs([(prompt, " " + u)])[0] for u in texts]
        assert all(isinstance(r, TokenLogprobs) and r.logprobs for r in alone)
        (score,) = LikelihoodScorer(backend, "followup").score([item])
        assert score.value == followup_score(item.level, {u: r.logprobs for u, r in zip(texts, alone)})  # type: ignore[union-attr]
        assert score.n_prompt_tokens == len(texts) * backend.count_tokens(prompt)
    failing = create_backend("mock", None, GenerateConfig(), fail_every=5)
    (failed,) = LikelihoodScorer(failing, "followup").score([_TURN])
    assert failed.value is None and "injected failure" in str(failed.error)


def test_follow_up_answers_are_cached(tmp_path):
    backend = CachedBackend(create_backend("mock", None, GenerateConfig()), Cache(tmp_path / "c.sqlite"))
    n = len(followup_texts("turn"))
    first = [s.value for s in LikelihoodScorer(backend, "followup").score([_TURN])]
    assert (backend.misses, backend.hits) == (n, 0)
    again = [s.value for s in LikelihoodScorer(backend, "followup").score([_TURN])]
    assert (backend.misses, backend.hits) == (n, n) and again == first


def test_follow_up_keys_name_the_split_where_the_backend_splits(smollm2):
    # the same text without its split is evaluated in other batches: it has its own key
    prompt = followup_prompt(_TURN)
    assert sequence_key(smollm2, prompt, " Cool!") != sequence_key(smollm2, Prompt(prompt.text), " Cool!")
    # a backend that does not split shared parts keeps the key it had
    mock = create_backend("mock", None, GenerateConfig())
    assert sequence_key(mock, prompt, " Cool!") == sequence_key(mock, Prompt(prompt.text), " Cool!")


def test_follow_ups_are_reference_free_and_never_read_the_next_turn():
    kinds = method_kinds(MethodSpec(type="likelihood", signal="followup"))
    assert kinds.label == "reference-free" and not kinds.uses_future
    item = Item("n", "turn", context=(_ASK,), response="Shorten the rise.", references=("SECRET REFERENCE",),
                next_user="SECRET NEXT TURN")
    assert "SECRET" not in followup_prompt(item).text
    assert LikelihoodScorer(create_backend("mock", None, GenerateConfig()), "followup").reads() == frozenset()


def test_documented_command_scores_every_item(tmp_path):
    """docs/likelihood.md's `judge score ... --likelihood followup`, as a user runs it, on the mock backend
    (the command's parsing and output; the real model's follow-ups are the from-scratch test's)."""
    out = tmp_path / "rows.jsonl"
    proc = subprocess.run([sys.executable, "-m", "judge", "score", "examples/dialogues.jsonl", "--likelihood",
                           "followup", "--limit", "3", "--threads", "2", "--backend", "mock", "-o", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 3 and all(r["score"] is not None and r["method"] == "likelihood-followup" for r in rows)
