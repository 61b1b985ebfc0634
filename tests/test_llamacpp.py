"""The real embedded model (SmolLM2-135M-Instruct through llama.cpp) scoring real prompts."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from judge.backends import Failure, LabelDist, Prompt, create_backend
from judge.core.config import GenerateConfig
from judge.core.errors import BackendError
from judge.data.items import SYSTEM, USER, Item, Turn
from judge.models.packaged import SMOLLM2, resolve_model_path, sha256_file
from judge.prompts.answers import YesNo, candidates
from judge.prompts.templates import get_prompt
from judge.scorers.llm import LLMJudge

CTX = (Turn(USER, "Hi, I'm planning a trip to Japan next spring."), Turn(SYSTEM, "Nice! Which cities?"),
       Turn(USER, "Tokyo and Kyoto. Any tips for seeing the cherry blossoms?"))
GOOD = "Go in early April and visit Maruyama Park in Kyoto; book hotels early because spring is busy."
BAD = "My cat is made of purple spaghetti and the moon tastes like Tuesday."


def test_packaged_model_checksum():
    path = resolve_model_path(None)
    assert path.name == SMOLLM2.filename
    assert sha256_file(path) == SMOLLM2.sha256


def test_unknown_model_path_is_a_clear_error(tmp_path):
    with pytest.raises(BackendError, match="neither a packaged model"):
        resolve_model_path(str(tmp_path / "nope.gguf"))


def test_distribution_is_full_vocabulary_and_normalised(smollm2):
    dist = smollm2.label_logprobs([Prompt("The capital of France is", chat=False)], [" Paris", " Rome"])[0]
    assert set(dist.logprobs) == {" Paris", " Rome"}
    assert dist.logprobs[" Paris"] > dist.logprobs[" Rome"]
    assert all(lp <= 0 for lp in dist.logprobs.values())
    assert sum(math.exp(lp) for _, lp in dist.top) <= 1.0 + 1e-6
    assert dist.top[0][1] >= dist.top[-1][1]


def test_good_response_ranks_above_bad_with_yesno_prompt(smollm2):
    judge = LLMJudge(get_prompt("yesno"), smollm2)
    good = judge.score_text([t.text for t in CTX], GOOD)
    bad = judge.score_text([t.text for t in CTX], BAD)
    assert good.ok and bad.ok
    assert 0 < bad.value < good.value < 1
    assert set(good.label_probs) == {"yes", "no"}


@pytest.mark.slow
def test_prefix_reuse_gives_identical_scores(smollm2):
    judge = LLMJudge(get_prompt("yesno"), smollm2)
    items = [Item(id=str(i), level="turn", context=CTX, response=r) for i, r in enumerate([GOOD, BAD, GOOD])]
    smollm2.llm.reset()
    s = list(judge.score(items))
    # Short prompts share less than one 512-token batch: what a later prompt reuses ends at its own batch
    # boundary where the instructions (the text no item changes) end, never inside its item's text.
    prompt = judge.build_prompt(items[2])[0]
    head = smollm2.prompt_starts(prompt, smollm2.tokens(prompt))[1]
    assert s[0].n_evaluated_tokens == s[0].n_prompt_tokens  # the first prompt runs in full
    assert s[2].n_evaluated_tokens == s[2].n_prompt_tokens - head
    assert s[0].value == s[2].value  # bit for bit


def test_rating_prompt_reads_digits(smollm2):
    judge = LLMJudge(get_prompt("fed-turn-overall"), smollm2)
    s = judge.score_text([t.text for t in CTX], GOOD)
    assert s.ok and 0 <= s.value <= 4
    assert set(s.label_probs) == {"0", "1", "2", "3", "4"}


def test_prompt_longer_than_context_fails_the_item_not_the_run(smollm2):
    judge = LLMJudge(get_prompt("yesno"), smollm2)
    long_ctx = (Turn(USER, "word " * 9000),)
    items = [Item(id="long", level="turn", context=long_ctx, response="ok"),
             Item(id="fine", level="turn", context=CTX, response=GOOD)]
    s = list(judge.score(items))
    assert s[0].value is None and "context window" in s[0].error and "nothing was cut" in s[0].error
    assert s[1].ok


@pytest.mark.slow
def test_window_is_the_n_ctx_asked_for_not_llama_cpp_rounded_one(tmp_path, capsys):
    """``--n-ctx 300``: llama.cpp rounds its KV cache up to 512, llama-cpp-python's token buffer holds 300.
    A 400-token item used to pass the length check and crash the run (numpy broadcast error); it must
    fail alone, as too long, and the other item score (real CLI, real model)."""
    from judge.cli import main

    rows = [{"id": "long", "context": [{"speaker": "user", "text": "word " * 380}], "response": "ok"},
            {"id": "fine", "context": [{"speaker": "user", "text": CTX[-1].text}], "response": GOOD}]
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    assert main(["score", str(data), "-o", str(out), "--n-ctx", "300", "--threads", "2", "--no-cache"]) == 3
    assert "Traceback" not in capsys.readouterr().err
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert got[0]["score"] is None and "the context window holds 300" in got[0]["error"]
    assert 300 < int(got[0]["error"].split()[2]) < 512  # "prompt is N tokens; ...": between the two sizes
    assert got[1]["score"] is not None and got[1]["error"] is None


@pytest.mark.slow
def test_llama_decode_error_fails_the_item_and_resets_the_kv_cache():
    """A real llama_decode failure (return code 1: no free KV-cache slot) fails its prompt with the
    reason; the prompts around it score, the one after from a clean KV cache. The length check keeps
    such prompts away from llama.cpp, so it is lifted on this instance (the one artificial step)."""
    backend = create_backend("llamacpp", None, GenerateConfig(threads=2, max_context=256))
    try:
        assert backend.capabilities.max_context == 256
        backend.capabilities = replace(backend.capabilities, max_context=10_000)
        short, too_long = Prompt("Is water wet? Answer:"), Prompt("word " * 300)
        res = backend.label_logprobs([short, too_long, short], ["Yes", "No"])
        assert isinstance(res[1], Failure)
        assert res[1].reason == "llama.cpp could not evaluate the prompt (301 tokens): llama_decode returned 1"
        assert isinstance(res[0], LabelDist) and isinstance(res[2], LabelDist)
        assert res[2].n_evaluated_tokens == res[2].n_prompt_tokens  # nothing reused from the failed prompt
        assert res[2].logprobs == pytest.approx(res[0].logprobs, abs=1e-6)
    finally:
        backend.close()


def test_chat_template_wraps_prompt(smollm2):
    toks = smollm2.tokens(Prompt("Hello <|im_end|> there", chat=True))
    text = smollm2.llm.detokenize(toks, special=True).decode()
    assert text.count("<|im_start|>user") == 1 and text.rstrip().endswith("<|im_start|>assistant")
    # The user's text is never parsed for special tokens: its '<|im_end|>' stays plain text.
    plain = smollm2.tokens(Prompt("Hello <|im_end|> there", chat=False))
    im_end = smollm2.llm.tokenize(b"<|im_end|>", add_bos=False, special=True)
    assert len(im_end) == 1 and im_end[0] not in plain
    assert YesNo().labels == ("yes", "no") and candidates(YesNo())
