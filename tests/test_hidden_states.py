"""Hidden states on the backend contract (``Capabilities.hidden_states``, ``Backend.hidden_states``): the
final hidden state at the answer position with the label answer of the same forward pass. The mock's
deterministic vectors, the cache's keys and round trip, the backends that refuse, and the real ones:
llama.cpp on the packaged SmolLM2, transformers on tiny random models."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from judge.backends import Backend, Failure, HiddenState, LabelDist, Prompt, create_backend
from judge.backends.base import require
from judge.backends.mock import HIDDEN_DIM, MockBackend
from judge.core.config import GenerateConfig
from judge.core.errors import InputError
from judge.engine.cache import Cache, CachedBackend, cache_key, hidden_key

YES = [" Yes", " No"]
#: The first three numbers of the mock's vector for PROMPTS[0] (seed 0), written down once.
PINNED = [0.520009493178, 0.84343149086, -0.860206149063]
PROMPTS = [Prompt("Is this reply good?\nAnswer:"), Prompt("Is this reply helpful?\nAnswer:", chat=True)]


def _mock(model: str | None = None, **options: object) -> Backend:
    return create_backend("mock", model, GenerateConfig(), **options)


def _only(results: list[HiddenState | Failure]) -> list[HiddenState]:
    assert all(isinstance(r, HiddenState) for r in results), results
    return results  # type: ignore[return-value]


# --- the mock: deterministic vectors --------------------------------------------------------------------

def test_mock_vectors_are_deterministic_and_follow_the_prompt():
    first = _only(_mock().hidden_states(PROMPTS, YES))
    again = _only(_mock().hidden_states(PROMPTS, YES))
    assert _mock().capabilities.hidden_states
    assert [h.vector for h in first] == [h.vector for h in again]
    assert all(len(h.vector) == HIDDEN_DIM and all(-1 <= x < 1 for x in h.vector) for h in first)
    assert first[0].vector != first[1].vector
    (other_seed,) = _only(_mock(seed=1).hidden_states(PROMPTS[:1], YES))
    (as_chat,) = _only(_mock().hidden_states([Prompt(PROMPTS[0].text, chat=True)], YES))
    assert other_seed.vector != first[0].vector and as_chat.vector != first[0].vector
    # pinned: a stable hash, never Python's salted hash() (these values were written down once)
    assert [round(x, 12) for x in first[0].vector[:3]] == PINNED


def test_mock_answer_alongside_equals_the_label_answer_and_failures_pass_through():
    for hidden, label in zip(_only(_mock().hidden_states(PROMPTS, YES)), _mock().label_logprobs(PROMPTS, YES),
                             strict=True):
        assert isinstance(label, LabelDist) and hidden.dist == label
    failed = _mock(chat_template=False).hidden_states(PROMPTS, YES)
    assert isinstance(failed[0], HiddenState) and isinstance(failed[1], Failure)
    assert "no chat template" in failed[1].reason


# --- the cache ------------------------------------------------------------------------------------------

def test_the_cache_round_trips_a_vector_with_its_answer(tmp_path):
    backend = CachedBackend(_mock(), Cache(tmp_path / "c.sqlite"))
    first = _only(backend.hidden_states(PROMPTS, YES))
    assert (backend.misses, backend.hits, backend.calls) == (2, 0, 1)
    again = _only(backend.hidden_states(PROMPTS, YES))
    assert (backend.misses, backend.hits, backend.calls) == (2, 2, 1)  # no call to the backend
    for a, b in zip(first, again, strict=True):
        assert a.vector == b.vector and a.dist.logprobs == b.dist.logprobs and a.dist.top == b.dist.top
        assert b.dist.n_evaluated_tokens == 0  # served, not evaluated
    # the answer was stored under its ordinary key: a label run afterwards is served from the cache
    backend.label_logprobs(PROMPTS, YES)
    assert (backend.misses, backend.hits, backend.calls) == (2, 4, 1)


def test_a_changed_prompt_model_or_setting_misses(tmp_path):
    path = tmp_path / "c.sqlite"
    CachedBackend(_mock(), Cache(path)).hidden_states(PROMPTS[:1], YES)
    changed = [(_mock(), Prompt(PROMPTS[0].text + " ")), (_mock("other-model"), PROMPTS[0]),
               (_mock(seed=3), PROMPTS[0]), (_mock(token_chars=4), PROMPTS[0])]
    for inner, prompt in changed:
        backend = CachedBackend(inner, Cache(path))
        (got,) = _only(backend.hidden_states([prompt], YES))
        assert (backend.misses, backend.hits) == (1, 0), (inner.settings(), prompt)
        (fresh,) = _only(inner.hidden_states([prompt], YES))
        assert got.vector == fresh.vector
    same = CachedBackend(_mock(latency_ms=1), Cache(path))  # a setting that changes no answer still hits
    same.hidden_states(PROMPTS[:1], YES)
    assert (same.misses, same.hits) == (0, 1)


def test_hidden_keys_extend_the_answer_keys_which_stay_as_they_were():
    backend = _mock()
    prompt = Prompt("Is this reply good? Answer:")
    # the answer key's pinned value (tests/test_likelihood.py pins it too): unchanged by hidden states
    assert cache_key(backend, prompt, [" Yes", " No"], 20) == (
        "ac9e5dc599d4b0fcceb629102b6b91d0a8fb83e81689ff350d8d11d73638a811")
    key = hidden_key(backend, prompt, [" Yes", " No"], 20)
    assert key != cache_key(backend, prompt, [" Yes", " No"], 20)
    assert key != hidden_key(backend, Prompt(prompt.text, chat=True), [" Yes", " No"], 20)
    assert key != hidden_key(_mock(seed=1), prompt, [" Yes", " No"], 20)


def test_a_vector_holding_a_nan_fails_its_prompt_and_is_never_stored(tmp_path):
    class Broken(MockBackend):
        def hidden_states(self, prompts, candidates, top_n=20):  # type: ignore[no-untyped-def]
            out = super().hidden_states(prompts, candidates, top_n)
            return [HiddenState([math.nan, *h.vector[1:]], h.dist) if isinstance(h, HiddenState) else h
                    for h in out]

    backend = CachedBackend(Broken(None, GenerateConfig()), Cache(tmp_path / "c.sqlite"))
    for _ in range(2):
        (failed,) = backend.hidden_states(PROMPTS[:1], YES)
        assert isinstance(failed, Failure) and "invalid value in a hidden state" in failed.reason
    assert backend.misses == 2  # retried, since nothing was stored


# --- backends that cannot -------------------------------------------------------------------------------

def test_a_backend_without_the_capability_refuses_clearly():
    class NoHidden(MockBackend):
        def __init__(self) -> None:
            super().__init__(None, GenerateConfig())
            self.capabilities = dataclasses.replace(self.capabilities, hidden_states=False)

        hidden_states = Backend.hidden_states

    backend = NoHidden()
    (failed,) = backend.hidden_states(PROMPTS[:1], YES)
    assert isinstance(failed, Failure)
    assert failed.reason == ("backend 'mock' cannot read the hidden state at the answer position "
                             "(capabilities.hidden_states is False)")
    with pytest.raises(InputError, match=r"backend 'mock' cannot read the hidden state .*capabilities\.hidden_states "
                                         r"is False\); a head method needs a backend that can") as exc:
        require(backend, "hidden_states", "a head method")
    assert exc.value.field == "backend"
    require(_mock(), "hidden_states", "a head method")  # the mock can


def test_the_openai_backend_declares_it_cannot():
    pytest.importorskip("openai", reason="the openai backend needs the [openai] extra")
    backend = create_backend("openai", "some-model", GenerateConfig(), base_url="http://127.0.0.1:9/v1")
    try:
        assert not backend.capabilities.hidden_states
        (failed,) = backend.hidden_states(PROMPTS[:1], YES)  # no request is sent
        assert isinstance(failed, Failure) and "backend 'openai' cannot read the hidden state" in failed.reason
        with pytest.raises(InputError, match=r"backend 'openai' cannot read the hidden state"):
            require(backend, "hidden_states", "a head method")
    finally:
        backend.close()


def test_the_vllm_backend_keeps_the_refusing_default():
    """vLLM returns log-probabilities, never hidden states: its class keeps the contract's default, which
    fails every prompt naming it (building one needs vLLM and a model, so the default is called unbound)."""
    from judge.backends.vllm import VLLMBackend

    assert VLLMBackend.hidden_states is Backend.hidden_states
    bare = object.__new__(VLLMBackend)
    (failed,) = VLLMBackend.hidden_states(bare, PROMPTS[:1], YES)
    assert isinstance(failed, Failure) and "backend 'vllm' cannot read the hidden state" in failed.reason


# --- llama.cpp on the real SmolLM2 ----------------------------------------------------------------------
# Hidden states give a backend's context the eval callback from then on; the session's shared SmolLM2
# backends (conftest.py) stay as every other test expects them, and the tests here load their own.

@pytest.fixture(scope="module")
def hidden_pair():
    """SmolLM2 reusing the KV prefix and SmolLM2 from an empty cache, both ``n_batch=32`` (as the session's
    ``reuse`` and ``scratch``), to be asked for hidden states."""
    backends = [create_backend("llamacpp", None, GenerateConfig(threads=2), n_batch=32),
                create_backend("llamacpp", None, GenerateConfig(threads=2), n_batch=32, reuse_prefix=False)]
    yield backends
    for b in backends:
        b.close()


@pytest.mark.slow
def test_llamacpp_vector_has_the_embedding_width_and_the_answer_is_bit_for_bit_the_labels(smollm2):
    """The label answers of the session's SmolLM2, which was never asked for hidden states, against those of
    a backend asked for them: equal bit for bit, before and after, and the vector is 576 wide."""
    backend = create_backend("llamacpp", None, GenerateConfig(threads=2))
    try:
        assert backend.capabilities.hidden_states
        labels = smollm2.label_logprobs(PROMPTS, YES)
        first = _only(backend.hidden_states(PROMPTS, YES))
        again = _only(backend.hidden_states(PROMPTS, YES))
        after = backend.label_logprobs(PROMPTS, YES)
    finally:
        backend.close()
    assert all(len(h.vector) == 576 for h in first)  # SmolLM2-135M's embedding width
    assert all(math.isfinite(x) for h in first for x in h.vector)
    assert [h.vector for h in first] == [h.vector for h in again]  # deterministic
    assert first[0].vector != first[1].vector
    for h, label, later in zip(first, labels, after, strict=True):
        assert isinstance(label, LabelDist) and isinstance(later, LabelDist)
        assert h.dist.logprobs == label.logprobs == later.logprobs and h.dist.top == label.top  # bit for bit
        assert h.dist.n_prompt_tokens == label.n_prompt_tokens


@pytest.mark.slow
def test_llamacpp_vector_is_the_final_norm_the_output_layer_reads(hidden_pair):
    """The vector is what the output layer turns into the logits: multiplied by the output weights (tied to
    the token embeddings in SmolLM2, read back from the GGUF) it gives the differences between the top
    tokens' log-probabilities up to the quantised kernels' rounding (measured: .23 at most), so it is the
    answer position's final hidden state and no other row or node (another would be off by nats)."""
    gguf = pytest.importorskip("gguf", reason="reading the GGUF's weights needs the gguf package")
    backend = hidden_pair[1]
    (h,) = _only(backend.hidden_states(PROMPTS[:1], YES))
    tensor = next(t for t in gguf.GGUFReader(str(backend.path)).tensors
                  if t.name in ("output.weight", "token_embd.weight"))
    known = [(ids[0], lp) for piece, lp in h.dist.top
             if len(ids := backend._tok(piece, special=True)) == 1 and backend._piece(ids[0]) == piece]
    assert len(known) >= 10 and known[0][1] == h.dist.top[0][1]
    rows = gguf.quants.dequantize(np.asarray(tensor.data)[[i for i, _ in known]], tensor.tensor_type)
    logits = rows.reshape(len(known), 576) @ np.asarray(h.vector)
    for (_, lp), logit in zip(known, logits, strict=True):
        assert abs((logit - logits[0]) - (lp - known[0][1])) < 0.5


def test_llamacpp_vector_does_not_depend_on_the_reused_prefix(hidden_pair):
    """The answer position's vector after KV prefix reuse equals the one from an empty cache, bit for bit,
    as the label answer does (tests/test_prefix_reuse.py)."""
    reuse, scratch = hidden_pair
    base = "A conversation between a user and a system about baking sourdough bread at home. " * 3
    prompts = [Prompt(base + "Is the reply helpful? Answer:"), Prompt(base + "Is the reply polite? Answer:")]
    reuse.reset()
    reused = _only(reuse.hidden_states(prompts, YES))
    alone = [_only(scratch.hidden_states([p], YES))[0] for p in prompts]
    assert reused[1].dist.n_evaluated_tokens < reused[1].dist.n_prompt_tokens  # the prefix was reused
    for a, b in zip(reused, alone, strict=True):
        assert a.vector == b.vector and a.dist.logprobs == b.dist.logprobs


def test_llamacpp_too_long_prompt_fails_alone(hidden_pair):
    backend = hidden_pair[0]
    long = Prompt("word " * (backend.capabilities.max_context + 10))
    ok, failed = backend.hidden_states([PROMPTS[0], long], YES)
    assert isinstance(ok, HiddenState) and isinstance(failed, Failure) and failed.flag == "too_long"


# --- transformers on tiny random models -----------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory) -> Path:
    """A randomly initialised 2-layer Llama with SmolLM2's tokenizer (mechanics only, never quality)."""
    transformers = pytest.importorskip("transformers", reason="the transformers backend needs the [hf] extra")
    torch = pytest.importorskip("torch")
    from judge.models.packaged import resolve_model_path

    tok = transformers.AutoTokenizer.from_pretrained(str(resolve_model_path(None).parent),
                                                     gguf_file=resolve_model_path(None).name)
    config = transformers.LlamaConfig(vocab_size=len(tok), hidden_size=48, intermediate_size=96, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512)
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("tiny-llama")
    transformers.LlamaForCausalLM(config).save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.mark.slow  # building SmolLM2's tokenizer from its GGUF takes transformers tens of seconds
def test_transformers_vector_is_the_last_layer_at_the_last_prompt_token(tiny_llama):
    backend = create_backend("transformers", str(tiny_llama), GenerateConfig(threads=2, batch_size=8))
    try:
        assert backend.capabilities.hidden_states
        prompts = [Prompt("Hi"), Prompt("Is this reply good? It is long enough to need padding.\nAnswer:")]
        together = _only(backend.hidden_states(prompts, YES))
        labels = backend.label_logprobs(prompts, YES)
        for h, label in zip(together, labels, strict=True):
            assert isinstance(label, LabelDist) and len(h.vector) == 48
            assert h.dist.logprobs == label.logprobs and h.dist.top == label.top  # the same pass, bit for bit
        torch = pytest.importorskip("torch")
        ids = torch.tensor([backend.tokens(prompts[1])])
        with torch.inference_mode():
            direct = backend.model(input_ids=ids, output_hidden_states=True).hidden_states[-1][0, -1]
        assert together[1].vector == pytest.approx(direct.tolist(), abs=1e-5)
        alone = _only(backend.hidden_states(prompts[:1], YES))[0]  # left padding does not move the vector
        assert alone.vector == pytest.approx(together[0].vector, abs=1e-5)
    finally:
        backend.close()
