"""Prefix reuse and reordering change speed, never scores: checked against from-scratch evaluation, exactly.

Real models throughout (the packaged SmolLM2 and Qwen2.5-Coder-0.5B via llama.cpp): a backend that keeps
the shared token prefix in its KV cache (in whole batches of ``n_batch`` tokens), and a second instance
with ``reuse_prefix=False`` that evaluates every prompt from an empty cache. The SmolLM2 pair runs with
``n_batch=32`` so that prompts of a few hundred tokens reuse whole batches; the Qwen pair keeps the
default (512), as the CPU leaderboard ran. Real FED-Turn and FED-Dial items, real templates and selectors.
"""

from __future__ import annotations

from itertools import pairwise

import pytest

from judge.backends import create_backend
from judge.core.config import GenerateConfig
from judge.data.items import SYSTEM, USER, Item, Turn
from judge.data.qualities import find_quality
from judge.datasets import load_benchmark
from judge.prompts.templates import get_prompt
from judge.scorers.llm import LLMJudge
from judge.selectors import get_selector


@pytest.fixture(scope="module")
def fed(data_dir):
    return load_benchmark("fed-turn", data_dir)


def _same(a, b):
    assert [s.item_id for s in a] == [s.item_id for s in b]
    for x, y in zip(a, b):
        assert x.ok and y.ok, (x.error, y.error)
        assert x.value == y.value and x.label_probs == y.label_probs and x.top == y.top  # bit for bit
        assert x.examples == y.examples


@pytest.mark.parametrize("prompt, quality, selector, k", [
    # rating 0-2, the same 3 examples for every item; 23 s, so with `pytest -m long`
    pytest.param("fed-turn-interesting", "Interesting", "manual", 3, marks=pytest.mark.long),
    # yes/no, examples differ per item (reordering groups shared ones); 31 s, so with `pytest -m long`
    pytest.param("yesno", "Overall", "bm25-context", 2, marks=pytest.mark.long),
])
def test_reuse_and_reordering_match_from_scratch(reuse, scratch, fed, prompt, quality, selector, k):
    q = find_quality(quality, "turn")
    pool = [it for it in fed if it.human(q.name) is not None]
    items = fed[:3]

    def judge(backend):
        return LLMJudge(get_prompt(prompt), backend, quality=q, selector=get_selector(selector, seed=0),
                        k=k, pool=pool, batch_size=4)

    reuse.llm.reset()
    reused = list(judge(reuse).score(items))
    fresh = list(judge(scratch).score(items))
    _same(reused, fresh)
    assert all(s.n_evaluated_tokens == s.n_prompt_tokens for s in fresh)
    # Something was reused (the instruction at least; the examples too with the manual set).
    assert sum(s.n_evaluated_tokens for s in reused) < sum(s.n_prompt_tokens for s in reused)
    if selector == "manual":  # the same examples for all: only the first prompt run is evaluated in full
        assert sum(s.n_evaluated_tokens < s.n_prompt_tokens / 2 for s in reused) == len(items) - 1
    # Reuse stops at one of the prompt's own batch starts: every 32 tokens, counted anew where the text no
    # item changes ends (the instructions, and the manual set's examples with them).
    starts = {}
    for item in items:
        built = judge(reuse).build_prompt(item, pool)[0]
        starts[item.id] = reuse.prompt_starts(built, reuse.tokens(built))
    assert all(s.n_prompt_tokens - s.n_evaluated_tokens in starts[s.item_id] for s in reused), \
        "reuse is in whole batches only"


@pytest.mark.long  # 20 s of SmolLM2 (tests/test_llamacpp.py keeps a fast reuse test)
def test_window_sorts_interleaved_prompts_and_yields_in_input_order(reuse, scratch):
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
    reuse.llm.reset()
    sorted_run = list(LLMJudge(yesno, reuse, batch_size=2).score(items))
    reuse.llm.reset()
    in_order = list(LLMJudge(yesno, reuse, batch_size=1).score(items))  # window 1: no reordering
    fresh = list(LLMJudge(yesno, scratch, batch_size=2).score(items))
    _same(sorted_run, fresh)
    _same(in_order, fresh)
    # Grouping the two conversations saves evaluating each one's context again after the other.
    assert sum(s.n_evaluated_tokens for s in sorted_run) < sum(s.n_evaluated_tokens for s in in_order)


@pytest.mark.long  # 19 s of SmolLM2
def test_a_familys_shared_part_is_reused_and_answers_match_from_scratch(reuse, scratch, fed):
    """The fedq family declares where its shared part ends (``shared_until``): each prompt is evaluated in
    batches that start anew there, so the family's next prompt on the same item reuses the whole
    conversation, not only whole batches of it, and every answer still equals the from-scratch one."""
    from judge.backends.base import Prompt

    names = ["fedq-turn-interesting", "fedq-turn-engaging", "fedq-turn-specific", "fedq-turn-relevant"]
    templates = [get_prompt(n) for n in names]
    prompts = [Prompt(t.render(it), shared=t.shared_chars(t.render(it))) for it in fed[:2] for t in templates]
    assert all(p.shared and p.text[p.shared:].startswith("Question:") for p in prompts)
    cuts = [reuse.shared_tokens(p, reuse.tokens(p)) for p in prompts]
    assert all(0 < c < reuse.count_tokens(p) for c, p in zip(cuts, prompts))
    assert all(reuse.tokens(p)[:c] == reuse.tokens(Prompt(p.text[: p.shared]))
               for c, p in zip(cuts, prompts)), "the split does not change the prompt's tokens"
    reuse.llm.reset()
    together = reuse.label_logprobs(prompts, ["0", "1", "2"])
    for prompt, dist in zip(prompts, together):
        alone = scratch.label_logprobs([prompt], ["0", "1", "2"])[0]
        assert dist.logprobs == alone.logprobs and dist.top == alone.top  # bit for bit
        assert alone.n_evaluated_tokens == alone.n_prompt_tokens
    # Per item, the first prompt is evaluated in full; the next ones only from the end of the shared part.
    for i, (dist, cut) in enumerate(zip(together, cuts)):
        if i % len(names):
            assert dist.n_evaluated_tokens == dist.n_prompt_tokens - cut
        else:  # a new item: its conversation is new, the instruction before it reused in whole batches
            assert (dist.n_prompt_tokens - dist.n_evaluated_tokens) % 32 == 0
    # Without the split the family's prompts share only whole batches of 32 tokens.
    reuse.llm.reset()
    unsplit = reuse.label_logprobs([Prompt(p.text) for p in prompts], ["0", "1", "2"])
    assert sum(d.n_evaluated_tokens for d in unsplit) > sum(d.n_evaluated_tokens for d in together)


def test_the_split_joins_the_cache_key_only_where_it_can_move_an_answer(smollm2):
    from judge.backends.base import Prompt
    from judge.backends.mock import MockBackend
    from judge.engine.cache import cache_key

    text = "Conversation:\nUser: hi\nQuestion: Is it good? Answer:"
    split = Prompt(text, shared=text.index("Question:"))
    assert cache_key(smollm2, split, ["Yes", "No"], 20) != cache_key(smollm2, Prompt(text), ["Yes", "No"], 20)
    mock = MockBackend(None, GenerateConfig())
    assert cache_key(mock, split, ["Yes", "No"], 20) == cache_key(mock, Prompt(text), ["Yes", "No"], 20)


def test_the_instructions_split_joins_the_cache_key_and_leaves_other_keys_alone(smollm2):
    """A prompt split where its instructions end has a key of its own on llama.cpp (its answer can move in
    the last bits), none on a backend that splits nothing; a prompt with a shared part only keeps the key
    it had before the instructions split existed (the material below is that code's)."""
    from judge.backends.base import Prompt
    from judge.backends.mock import MockBackend
    from judge.engine.cache import SCHEMA_VERSION, _digest, cache_key, sequence_key

    text = "Rate replies.\nConversation:\nUser: hi\nQuestion: Is it good? Answer:"
    labels = ["Yes", "No"]
    shared = Prompt(text, chat=True, shared=text.index("Question:"))
    both = Prompt(text, chat=True, shared=shared.shared, instructions=text.index("Conversation:"))
    old = [SCHEMA_VERSION, smollm2.name, smollm2.model_id, text, True, labels, 20, smollm2.settings()]
    assert cache_key(smollm2, shared, labels, 20) == _digest([*old, {"shared": shared.shared}])
    assert cache_key(smollm2, Prompt(text, chat=True), labels, 20) == _digest(old)
    keys = {cache_key(smollm2, p, labels, 20) for p in (shared, both, Prompt(text, chat=True, instructions=14))}
    assert len(keys) == 3
    assert sequence_key(smollm2, both, " x") != sequence_key(smollm2, shared, " x")
    mock = MockBackend(None, GenerateConfig())
    assert cache_key(mock, both, labels, 20) == cache_key(mock, Prompt(text, chat=True), labels, 20)


def test_the_reuse_rule_keeps_only_batch_starts_both_evaluations_had():
    """``batch_starts`` and ``reused_prefix`` are the whole reuse rule, callable without a model: batches
    of n_batch counted anew from each declared cut, and the KV cache kept up to the last start that lies
    within the common tokens and that the previous evaluation also had, with the same starts before it."""
    from judge.backends.llamacpp import batch_starts, reused_prefix

    assert batch_starts(100, (), 32) == [0, 32, 64, 96]
    assert batch_starts(100, (40, 0, 100, 70), 32) == [0, 32, 40, 70]
    assert batch_starts(100, (40, 40), 64) == [0, 40]
    prev = list(range(100))
    marks = [*batch_starts(100, (40,), 32), 100]
    same_head = [*range(60), *range(500, 550)]  # the first 60 tokens in common
    assert reused_prefix(prev, marks, same_head, batch_starts(110, (40,), 32)) == 40
    assert reused_prefix(prev, marks, same_head, batch_starts(110, (), 32)) == 32  # other starts after 32
    assert reused_prefix(prev, marks, same_head, batch_starts(110, (50,), 32)) == 32
    assert reused_prefix(prev, [], same_head, batch_starts(110, (40,), 32)) == 0  # nothing left to reuse
    assert reused_prefix(prev, marks, [7, *range(1, 60)], batch_starts(60, (40,), 32)) == 0  # first token differs
    assert reused_prefix(prev, marks, prev[:40] + [1], batch_starts(41, (40,), 32)) == 40  # the last token runs


@pytest.mark.slow  # three real-model passes over four items; the shared-part test below keeps the rule in the README suite
def test_instructions_are_reused_across_items_and_answers_match_from_scratch(reuse, scratch, data_dir):
    """The criteria prompt's item-independent text (the chat template's system part and the preamble) ends
    at a batch boundary of its own, so the next item reuses all of it, not only whole batches of it; and
    every answer is the prompt's from-scratch evaluation (reuse off, the same boundaries), bit for bit,
    whichever item ran before it: DailyDialog-Zhao and Topical-USR items in one order and in reverse."""
    from judge.backends.base import Prompt

    shortest_tu = min(load_benchmark("topical-usr", data_dir)[:10], key=lambda it: sum(len(t.text) for t in it.context))
    items = [*load_benchmark("dailydialog-zhao", data_dir)[:3], shortest_tu]
    criteria = get_prompt("yesno-criteria")

    def run(backend, order):  # window 1: the items go to the model in the order given
        backend.reset()
        scores = {s.item_id: s for s in LLMJudge(criteria, backend, batch_size=1).score(order)}
        return [scores[it.id] for it in items]

    forward, backward = run(reuse, items), run(reuse, items[::-1])
    fresh = run(scratch, items)
    _same(forward, fresh)
    _same(backward, fresh)
    assert all(s.n_evaluated_tokens == s.n_prompt_tokens for s in fresh)
    prompts = [LLMJudge(criteria, reuse).build_prompt(it)[0] for it in items]
    cuts = {reuse.instructions_tokens(p, reuse.tokens(p)) for p in prompts}
    assert len(cuts) == 1
    cut = cuts.pop()
    assert cut % 32, "the split is not on a batch boundary already"
    head = reuse.tokens(Prompt(prompts[0].text[: prompts[0].instructions], chat=True))[: cut]
    assert all(reuse.tokens(p)[:cut] == head for p in prompts), "the split does not change the prompt's tokens"
    # After the first item, every prompt reuses the whole head: its instructions are evaluated once.
    assert all(s.n_prompt_tokens - s.n_evaluated_tokens >= cut for s in forward[1:] + backward[:-1])
    # Unsplit, the same prompts reuse the head in whole batches of 32 only.
    reuse.reset()
    unsplit = reuse.label_logprobs([Prompt(p.text, chat=True, shared=p.shared) for p in prompts], ["Yes", "No"])
    assert sum(d.n_evaluated_tokens for d in unsplit) > sum(s.n_evaluated_tokens for s in forward)


def test_prefix_reuse_is_declared_and_survives_the_cache_wrapper(smollm2, tmp_path):
    """The judge sorts a window only when the backend declares prefix reuse; the CLI wraps every backend
    in the cache, which must forward the declaration or the reordering would silently stop."""
    from judge.engine.cache import Cache, CachedBackend

    assert smollm2.capabilities.prefix_reuse
    assert CachedBackend(smollm2, Cache(str(tmp_path / "c.sqlite"))).capabilities.prefix_reuse
    plain = create_backend("llamacpp", None, GenerateConfig(threads=2), reuse_prefix=False)
    try:
        assert not plain.capabilities.prefix_reuse
    finally:
        plain.close()


@pytest.mark.slow
def test_an_answer_does_not_depend_on_the_prompt_before_it(data_dir):
    """Regression (docs/journal.md, "Reproducing the figures"): reusing a shared prefix of any length
    made a prompt's logits depend on the prompt evaluated before it, because llama.cpp computes a token's
    row according to the batch it falls in (Qwen's repacked 4-bit kernels); a FED-Dial cell gave .379
    alone and .375 after another set's prompts. With reuse in whole batches of n_batch (default 512), every
    answer equals the from-scratch one bit for bit, after a predecessor sharing any length of prefix."""
    from judge.backends.base import Prompt

    config = GenerateConfig(threads=2)
    reused = create_backend("llamacpp", "qwen2.5-coder-0.5b", config)
    fresh = create_backend("llamacpp", "qwen2.5-coder-0.5b", config, reuse_prefix=False)
    try:
        fd = load_benchmark("fed-dial", data_dir)
        criteria = get_prompt("yesno-criteria")
        # Three dialogs (two neighbours in text order) and the long pair below: 170 s of CI with eight.
        prompts = sorted((Prompt(criteria.render(it), chat=True) for it in fd[:3]), key=lambda p: p.text)
        # A long dialog and the same dialog one turn longer: they share more than one batch of tokens.
        long_dialog = Item(id="long", level="dialog", dialog=tuple(t for it in fd[:6] for t in it.dialog))
        longer = Item(id="longer", level="dialog", dialog=long_dialog.dialog + (Turn(USER, "Thanks, bye!"),))
        pairs = list(pairwise(prompts)) + [
            (Prompt(criteria.render(long_dialog), chat=True), Prompt(criteria.render(longer), chat=True))]
        for before, prompt in pairs:
            reused.llm.reset()
            reused.label_logprobs([before], ["Yes", "No"])
            after = reused.label_logprobs([prompt], ["Yes", "No"])[0]
            alone = fresh.label_logprobs([prompt], ["Yes", "No"])[0]
            assert after.logprobs == alone.logprobs and after.top == alone.top
        kept = after.n_prompt_tokens - after.n_evaluated_tokens
        assert reused.n_batch == 512 and kept >= 512 and kept % 512 == 0  # whole batches were reused
        # Two prompts of the fedq family on one dialog (chat template): the second reuses the first's
        # shared part, split where its question begins, and still answers as it does alone.
        def split(name: str) -> Prompt:
            text = get_prompt(name).render(long_dialog)
            return Prompt(text, chat=True, shared=get_prompt(name).shared_chars(text))

        labels = [str(n) for n in range(6)]
        for name in ("fedq-dial-depth", "fedq-dial-coherent"):
            reused.llm.reset()
            reused.label_logprobs([split("fedq-dial-likeable")], labels)
            after = reused.label_logprobs([split(name)], labels)[0]
            alone = fresh.label_logprobs([split(name)], labels)[0]
            assert after.logprobs == alone.logprobs and after.top == alone.top
            cut = reused.shared_tokens(split(name), reused.tokens(split(name)))
            assert after.n_evaluated_tokens == after.n_prompt_tokens - cut and cut > 512
    finally:
        reused.close()
        fresh.close()
