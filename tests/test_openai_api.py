"""The OpenAI-compatible backend end to end against a real server: ``python -m llama_cpp.server``
serving the packaged SmolLM2 on 127.0.0.1 (the ``llama_server`` fixture), compared with the embedded
llama.cpp backend on the same prompts."""

from __future__ import annotations

import pytest

from judge.backends import Prompt, create_backend
from judge.backends.layer import innermost
from judge.core.config import GenerateConfig
from judge.data.items import SYSTEM, USER, Item, Turn
from judge.prompts.templates import get_prompt
from judge.scorers.llm import LLMJudge

pytest.importorskip("openai")

#: Measured gap between the API backend (llama_cpp.server, top-20 logprobs) and the embedded llama.cpp
#: backend (full vocabulary) on the goodness of the prompts below: max |diff| 8.0e-5 (chat) and
#: 1.3e-4 (completions) over 4 prompts on 2026-11-21. It comes from (a) the server evaluating with logits for every
#: position (logits_all) in different batch splits, which moves llama.cpp's float results slightly, and
#: (b) label spellings outside the top 20 that the API cannot read. The test allows 2e-3.
TOLERANCE = 2e-3
#: The same gap on completions read from the top 5 only (OpenAI's maximum there, the backend's default): max
#: |diff| 2.5e-2 over the same 4 prompts on 2026-12-01, the spellings of Yes and No past the fifth token lost.
TOP5_TOLERANCE = 5e-2

CTX = (Turn(USER, "Hi, I'm planning a trip to Japan next spring."), Turn(SYSTEM, "Nice! Which cities?"),
       Turn(USER, "Tokyo and Kyoto. Any tips for seeing the cherry blossoms?"))
RESPONSES = [
    "Go in early April and visit Maruyama Park in Kyoto; book hotels early because spring is busy.",
    "My cat is made of purple spaghetti and the moon tastes like Tuesday.",
    "I don't know.",
    "Kyoto's Philosopher's Path is lovely at dawn, and Tokyo's Shinjuku Gyoen opens at 9.",
]


def items() -> list[Item]:
    return [Item(id=f"r{i}", level="turn", context=CTX, response=r) for i, r in enumerate(RESPONSES)]


@pytest.fixture(scope="module")
def api(llama_server):
    """The backend as it comes: OpenAI's maxima of top log-probabilities (20 on chat, 5 on completions)."""
    backend = create_backend("openai", "smollm2", GenerateConfig(concurrency=2, max_retries=2, timeout=120),
                             base_url=llama_server)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def wide(llama_server):
    """The backend told that its server gives the top 20 on both endpoints, as llama.cpp's does."""
    backend = create_backend("openai", "smollm2", GenerateConfig(concurrency=2, max_retries=2, timeout=120),
                             base_url=llama_server, max_top_logprobs=20)
    yield backend
    backend.close()


@pytest.mark.slow
@pytest.mark.parametrize("chat", [True, False], ids=["chat", "completions"])
def test_api_goodness_matches_llamacpp_backend(wide, smollm2, chat):
    local = list(LLMJudge(get_prompt("yesno"), smollm2, chat=chat).score(items()))
    remote = list(LLMJudge(get_prompt("yesno"), wide, chat=chat).score(items()))
    assert all(s.ok for s in local + remote), [s.error for s in local + remote]
    gaps = [abs(a.value - b.value) for a, b in zip(local, remote)]
    print(f"API vs llama.cpp goodness gap (chat={chat}): max {max(gaps):.2e}, values {[r.value for r in remote]}")
    assert max(gaps) <= TOLERANCE
    # same ranking of the good and the nonsense answer, and the same prompt length
    assert remote[0].value > remote[1].value
    assert [a.n_prompt_tokens for a in local] == [b.n_prompt_tokens for b in remote]
    assert not remote[0].estimated


@pytest.mark.slow
def test_capabilities_usage_and_server_tokenizer(api, smollm2):
    assert api.capabilities.full_vocab is False and api.capabilities.top_n == 20
    assert innermost(api).tokenizer == "llama-cpp-python"  # POST /extras/tokenize
    p = Prompt("The capital of France is")
    assert api.count_tokens(p) == smollm2.count_tokens(p)
    before = innermost(api).usage.as_dict()
    dist = api.label_logprobs([p], [" Paris", " Rome", " Berlin"], top_n=5)[0]
    assert dist.complete is False and len(dist.top) == 5
    assert " Paris" in dist.logprobs and dist.top[0][0] == " Paris"
    ref = smollm2.label_logprobs([p], [" Paris"])[0]
    assert dist.logprobs[" Paris"] == pytest.approx(ref.logprobs[" Paris"], abs=TOLERANCE)
    after = innermost(api).usage.as_dict()
    assert after["requests"] == before["requests"] + 1
    assert after["prompt_tokens"] - before["prompt_tokens"] == dist.n_prompt_tokens == ref.n_prompt_tokens
    assert after["completion_tokens"] - before["completion_tokens"] == 1


@pytest.mark.slow
def test_the_default_bodies_are_taken_by_the_real_server_and_read_from_the_top_5(api, smollm2):
    """OpenAI's maxima (``logprobs`` 5 on completions) are what the backend sends unless told otherwise: the real
    server takes those bodies too, and the plain prompts are read from their top 5."""
    assert api.capabilities.top_n == 20 and api.settings().get("max_top_logprobs") is None
    local = list(LLMJudge(get_prompt("yesno"), smollm2, chat=False).score(items()))
    remote = list(LLMJudge(get_prompt("yesno"), api, chat=False).score(items()))
    assert all(s.ok for s in remote), [s.error for s in remote]
    assert all(0 < len(s.top) <= 5 for s in remote)
    gaps = [abs(a.value - b.value) for a, b in zip(local, remote)]
    print(f"API (top 5) vs llama.cpp goodness gap on completions: max {max(gaps):.2e}")
    assert max(gaps) <= TOP5_TOLERANCE and remote[0].value > remote[1].value
