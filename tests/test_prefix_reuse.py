"""Prefix reuse and reordering change speed, never scores: checked against from-scratch evaluation.

Real model throughout (the packaged SmolLM2 via llama.cpp): the session's ``smollm2`` backend keeps the
longest common token prefix in its KV cache, and a second instance with ``reuse_prefix=False``
evaluates every prompt from an empty cache. Real FED-Turn items, real templates and selectors.
"""

from __future__ import annotations

import pytest

from judge.backends import create_backend
from judge.config import GenerateConfig
from judge.datasets import load_benchmark
from judge.items import SYSTEM, USER, Item, Turn
from judge.prompts import get_prompt
from judge.qualities import find_quality
from judge.scorers.llm import LLMJudge
from judge.selectors import get_selector

TOL = 1e-4


@pytest.fixture(scope="module")
def scratch():
    backend = create_backend("llamacpp", None, GenerateConfig(threads=2), reuse_prefix=False)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def fed(data_dir):
    return load_benchmark("fed-turn", data_dir)


def _same(a, b):
    assert [s.item_id for s in a] == [s.item_id for s in b]
    for x, y in zip(a, b):
        assert x.ok and y.ok, (x.error, y.error)
        assert x.value == pytest.approx(y.value, abs=TOL)
        assert x.label_probs.keys() == y.label_probs.keys()
        for lab in x.label_probs:
            assert x.label_probs[lab] == pytest.approx(y.label_probs[lab], abs=TOL)
        assert x.examples == y.examples


@pytest.mark.parametrize("prompt, quality, selector, k", [
    ("fed-turn-interesting", "Interesting", "manual", 3),  # rating 0-2, the same 3 examples for every item
    ("yesno", "Overall", "bm25-context", 2),  # yes/no, examples differ per item (reordering groups shared ones)
])
def test_reuse_and_reordering_match_from_scratch(smollm2, scratch, fed, prompt, quality, selector, k):
    q = find_quality(quality, "turn")
    pool = [it for it in fed if it.human(q.name) is not None]
    items = fed[:3]

    def judge(backend):
        return LLMJudge(get_prompt(prompt), backend, quality=q, selector=get_selector(selector, seed=0),
                        k=k, pool=pool, batch_size=4)

    smollm2.llm.reset()
    reused = list(judge(smollm2).score(items))
    fresh = list(judge(scratch).score(items))
    _same(reused, fresh)
    assert all(s.n_evaluated_tokens == s.n_prompt_tokens for s in fresh)
    # Something was reused (the instruction at least; the examples too with the manual set).
    assert sum(s.n_evaluated_tokens for s in reused) < sum(s.n_prompt_tokens for s in reused)
    if selector == "manual":  # the same examples for all: only the first prompt run is evaluated in full
        assert sum(s.n_evaluated_tokens < s.n_prompt_tokens / 2 for s in reused) == len(items) - 1


def test_window_sorts_interleaved_prompts_and_yields_in_input_order(smollm2, scratch):
    a = (Turn(USER, "I have been learning to bake sourdough bread at home, but my loaves come out flat and "
                    "dense every time. I feed the starter daily. What am I doing wrong?"),)
    b = (Turn(USER, "Can you recommend a good science fiction novel?"),
         Turn(SYSTEM, "Sure: The Left Hand of Darkness by Ursula K. Le Guin is a classic."),
         Turn(USER, "I read that one already and loved it. Something more recent, maybe from the last decade?"))
    responses = ["Try a longer bulk fermentation.", "Project Hail Mary by Andy Weir.", "Use less water.",
                 "The Three-Body Problem trilogy.", "Your starter may be too young.", "Recursion by Blake Crouch."]
    items = [Item(id=f"i{n}", level="turn", context=a if n % 2 == 0 else b, response=r)
             for n, r in enumerate(responses)]
    yesno = get_prompt("yesno")
    smollm2.llm.reset()
    sorted_run = list(LLMJudge(yesno, smollm2, batch_size=2).score(items))
    smollm2.llm.reset()
    in_order = list(LLMJudge(yesno, smollm2, batch_size=1).score(items))  # window 1: no reordering
    fresh = list(LLMJudge(yesno, scratch, batch_size=2).score(items))
    _same(sorted_run, fresh)
    _same(in_order, fresh)
    # Grouping the two conversations saves evaluating each one's context again after the other.
    assert sum(s.n_evaluated_tokens for s in sorted_run) < sum(s.n_evaluated_tokens for s in in_order)


def test_prefix_reuse_is_declared_and_survives_the_cache_wrapper(smollm2, tmp_path):
    """The judge sorts a window only when the backend declares prefix reuse; the CLI wraps every backend
    in the cache, which must forward the declaration or the reordering would silently stop."""
    from judge.cache import Cache, CachedBackend

    assert smollm2.capabilities.prefix_reuse
    assert CachedBackend(smollm2, Cache(str(tmp_path / "c.sqlite"))).capabilities.prefix_reuse
    plain = create_backend("llamacpp", None, GenerateConfig(threads=2), reuse_prefix=False)
    try:
        assert not plain.capabilities.prefix_reuse
    finally:
        plain.close()
