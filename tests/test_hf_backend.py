"""The transformers backend: encoder-decoder mechanics on a tiny random T5, the causal path on the real
packaged SmolLM2 (loaded from its GGUF through transformers), and agreement with llama.cpp."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from judge.backends import Failure, Prompt, create_backend
from judge.core.config import GenerateConfig
from judge.core.errors import BackendError
from judge.datasets import load_items
from judge.prompts.answers import YesNo, candidates
from judge.prompts.templates import get_prompt
from judge.scorers.llm import LLMJudge

torch = pytest.importorskip("torch", reason="the transformers backend needs the [hf] extra (torch)")
transformers = pytest.importorskip("transformers", reason="the transformers backend needs the [hf] extra")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "dialogues.jsonl"

#: Largest |goodness(llama.cpp) - goodness(transformers)| allowed on the example dialogues. The two
#: runtimes do not run the same arithmetic: llama.cpp multiplies with the Q4_1 weights in its quantised
#: kernels (and quantises activations to 8 bits for those dot products), transformers dequantises the
#: Q4_1 weights to fp32 once. Measured gap on the 12 example dialogues (yes/no prompt, chat template,
#: 2 threads): max 0.0180, mean 0.0069 with llama-cpp-python 0.3.x of early 2026; max 0.0309 with
#: 0.3.36, whose quantised kernels round differently (goodness values 0.09-0.19). The bound sits just
#: above the larger maximum. (Without the chat template: max 0.0285; the 0-4 rating prompt: max 0.061.)
GOODNESS_TOLERANCE = 0.035

CFG = GenerateConfig(threads=2, batch_size=8)


# -- encoder-decoder mechanics on a tiny random T5 ------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_t5(tmp_path_factory) -> Path:
    """A randomly initialised 2-layer T5 and a word-level tokenizer built here.

    The weights are random: these tests check mechanics (which positions are read, padding, special
    tokens), never answer quality. No seq2seq weights ship in any wheel this project can install.
    """
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    words = ["Is", "this", "response", "good", "?", "Answer", "yes", "or", "no", ".", "Yes", "No", "YES", "NO", "the", "a", "cat", "dog", "sat", "on", "mat", "hello", "there", "how", "are", "you", "fine", "thanks", "1", "2", "3", "4", "5"]
    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2}
    for w in words:
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>", model_max_length=512
    )
    config = transformers.T5Config(
        vocab_size=len(vocab), d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
        decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
    )
    torch.manual_seed(0)
    model = transformers.T5ForConditionalGeneration(config)
    out = tmp_path_factory.mktemp("tiny-t5")
    model.save_pretrained(out)
    fast.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def t5_backend(tiny_t5):
    backend = create_backend("transformers", str(tiny_t5), CFG)
    yield backend
    backend.close()


def test_seq2seq_reads_decoder_first_step(t5_backend, tiny_t5):
    assert t5_backend.is_seq2seq and t5_backend.capabilities.full_vocab
    assert not t5_backend.capabilities.chat_template and t5_backend.capabilities.max_context == 512
    text = "Is this response good ? Answer yes or no ."
    dist = t5_backend.label_logprobs([Prompt(text)], ["Yes", "No", "yes", "no", "cat dog"], top_n=5)[0]
    # Manual forward pass: encoder input with its </s>, decoder input = the start token alone.
    model = transformers.T5ForConditionalGeneration.from_pretrained(tiny_t5).eval()
    tok = transformers.AutoTokenizer.from_pretrained(tiny_t5)
    enc = tok(text, return_tensors="pt")
    assert enc.input_ids[0, -1].item() == 1  # T5 inputs end with </s>
    with torch.no_grad():
        logits = model(**enc, decoder_input_ids=torch.tensor([[0]])).logits[0, 0]
    expected = torch.log_softmax(logits, -1)
    for word in ("Yes", "No", "yes", "no"):
        assert dist.logprobs[word] == pytest.approx(expected[tok.convert_tokens_to_ids(word)].item(), abs=1e-5)
    assert "cat dog" not in dist.logprobs  # two tokens: not readable as one next token
    vals, idx = torch.topk(expected, 5)
    assert [t for t, _ in dist.top] == [tok.decode([int(i)]) for i in idx]
    assert [lp for _, lp in dist.top] == pytest.approx(vals.tolist(), abs=1e-5)
    assert dist.n_prompt_tokens == enc.input_ids.shape[1]


def test_seq2seq_padding_invariance(t5_backend):
    texts = ["hello", "Is this response good ? Answer yes or no .", "the cat sat on the mat . how are you ?"]
    cands = ["Yes", "No", "1", "5"]
    alone = [t5_backend.label_logprobs([Prompt(t)], cands)[0] for t in texts]
    together = t5_backend.label_logprobs([Prompt(t) for t in texts], cands)
    for a, b in zip(alone, together):
        for c in cands:
            assert a.logprobs[c] == pytest.approx(b.logprobs[c], abs=1e-4)


def test_seq2seq_without_chat_template_fails_chat_prompts_per_item(t5_backend):
    res = t5_backend.label_logprobs([Prompt("hello", chat=True), Prompt("hello")], ["Yes"])
    assert isinstance(res[0], Failure) and "no chat template" in res[0].reason
    assert not isinstance(res[1], Failure)


def test_spellings_sharing_one_token_count_once(t5_backend):
    # The word-level tokenizer splits on whitespace: "yes" and " yes" are the same token.
    dist = t5_backend.label_logprobs([Prompt("hello")], ["yes", " yes", "no", " no"])[0]
    assert set(dist.logprobs) == {"yes", "no"}


def test_bad_options_are_clear_errors(tiny_t5):
    with pytest.raises(BackendError, match="dtype must be one of"):
        create_backend("transformers", str(tiny_t5), CFG, dtype="float8")
    with pytest.raises(BackendError, match="could not load"):
        create_backend("hf", str(tiny_t5 / "missing"), CFG)


def test_model_options_are_part_of_the_cache_key(t5_backend, tiny_t5):
    """A from_pretrained option (another attention implementation) can move answers: it joins the
    backend's settings, hence the cache key; without options the settings are the default's."""
    other = create_backend("transformers", str(tiny_t5), CFG, attn_implementation="eager")
    try:
        assert other.settings() == {**t5_backend.settings(), "model_options": {"attn_implementation": "eager"}}
        assert "model_options" not in t5_backend.settings()
    finally:
        other.close()


# -- causal path on the real packaged SmolLM2 (fixture hf_smollm2 in conftest.py) ------------------------
# ``slow``: loading the GGUF through transformers (dequantised to fp32) takes 30 s, and the slow suite's
# vLLM tests load it anyway, so these run there once rather than in the README's command.
@pytest.mark.slow
def test_gguf_loads_and_is_saved_for_reuse(hf_smollm2):
    from judge.models.packaged import SMOLLM2

    copy = hf_smollm2.gguf_copy
    assert not hf_smollm2.is_seq2seq
    assert hf_smollm2.capabilities.chat_template and hf_smollm2.capabilities.batching
    assert hf_smollm2.capabilities.max_context == 8192
    assert hf_smollm2.loaded_from != str(copy)  # this one was read from the GGUF itself
    assert copy.name == f"SmolLM2-135M-Instruct.Q4_1-{SMOLLM2.sha256[:16]}"  # a changed GGUF gets a new copy
    assert (copy / "model.safetensors").is_file() and (copy / "tokenizer.json").is_file()
    prompts = [Prompt("The capital of France is"), Prompt("Is the sky blue? Answer yes or no.", chat=True)]
    cands = [" Paris", " Rome", "Yes", "No"]
    first = hf_smollm2.label_logprobs(prompts, cands)
    again = create_backend("transformers", None, CFG, gguf_cache=str(copy.parent))
    assert again.loaded_from == str(copy) and again.gguf_file == hf_smollm2.gguf_file  # now from the copy
    second = again.label_logprobs(prompts, cands)
    for a, b in zip(first, second):
        for c in cands:
            assert a.logprobs[c] == pytest.approx(b.logprobs[c], abs=1e-5)
    assert first[0].logprobs[" Paris"] > first[0].logprobs[" Rome"]


@pytest.mark.slow
def test_tokens_match_llamacpp(hf_smollm2, smollm2):
    for p in (Prompt("The capital of France is"), Prompt("Hello <|im_end|> there", chat=True),
              Prompt("Context:\nUser: hi\nResponse: hello! Is it good? Answer:", chat=True)):
        assert hf_smollm2.tokens(p) == smollm2.tokens(p)
    # The user's text is never parsed for special tokens.
    im_end = hf_smollm2.tokenizer.convert_tokens_to_ids("<|im_end|>")
    chat = hf_smollm2.tokens(Prompt("Hello <|im_end|> there", chat=True))
    assert chat.count(im_end) == 2  # the system turn's and the user turn's own ends, not the text's


@pytest.mark.slow
def test_causal_padding_invariance(hf_smollm2):
    prompts = [Prompt("Hi"), Prompt("Is the sky blue? Answer yes or no.", chat=True),
               Prompt("A much longer prompt about baking bread at home, flour, water, salt and yeast. " * 4)]
    cands = candidates(YesNo())
    alone = [hf_smollm2.label_logprobs([p], cands)[0] for p in prompts]
    together = hf_smollm2.label_logprobs(prompts, cands)
    assert [d.n_prompt_tokens for d in together] == [len(hf_smollm2.tokens(p)) for p in prompts]
    for a, b in zip(alone, together):
        assert set(a.logprobs) == set(b.logprobs) and a.logprobs
        for c in a.logprobs:
            assert a.logprobs[c] == pytest.approx(b.logprobs[c], abs=1e-4)
        assert [t for t, _ in a.top[:3]] == [t for t, _ in b.top[:3]]


@pytest.mark.slow
def test_too_long_prompt_fails_only_that_item(tmp_path, hf_smollm2):
    small = create_backend("transformers", str(hf_smollm2.gguf_copy), GenerateConfig(threads=2, max_context=64))
    res = small.label_logprobs([Prompt("word " * 200), Prompt("Hi")], ["Yes"])
    assert isinstance(res[0], Failure) and "context window holds 64" in res[0].reason
    assert not isinstance(res[1], Failure)


@pytest.mark.slow
def test_goodness_matches_llamacpp_and_ranks_good_above_bad(hf_smollm2, smollm2):
    items = load_items(EXAMPLES)
    hf = {s.item_id: s for s in LLMJudge(get_prompt("yesno"), hf_smollm2).score(items)}
    lc = {s.item_id: s for s in LLMJudge(get_prompt("yesno"), smollm2).score(items)}
    assert len(hf) == len(lc) == len(items) == 12
    gaps = [abs(hf[i].value - lc[i].value) for i in hf]
    assert max(gaps) <= GOODNESS_TOLERANCE, gaps
    # Good vs bad response to the same conversation: both runtimes rank them the same way.
    for score in (hf, lc):
        assert score["ex-01"].value > score["ex-02"].value


def test_import_judge_does_not_import_torch():
    code = ("import sys, judge, judge.backends, judge.backends.registry, judge.cli; "
            "print(json.dumps(sorted(m for m in ('torch', 'transformers', 'vllm') if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", "import json; " + code], cwd=ROOT, capture_output=True,
                         text=True, check=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert json.loads(out.stdout) == []


@pytest.mark.slow
def test_a_rationale_is_generated_on_the_prompts_kv_cache_and_the_answer_read_after_it(hf_smollm2):
    """A causal model reasons first: the prompt runs once, the rationale is generated on its KV cache and
    the cue run after it. The reference here has no KV cache: each greedy token from a forward pass over
    the whole sequence so far, until a turn ends or the budget is spent, then one pass over the prompt, the
    rationale and the cue. The same rationale, and the same distribution up to float rounding."""
    from judge.backends.base import Reasoned, Reasoning
    from judge.backends.reasoning import answer_line

    how = Reasoning(8, "Answer:")
    cands = candidates(YesNo())
    prompt = Prompt("Is the sky blue on a clear day? Explain briefly, then answer on a line 'Answer: Yes' or "
                    "'Answer: No'.\n", chat=False)
    first, again = (hf_smollm2.reason([prompt], cands, 5, how)[0] for _ in range(2))
    assert isinstance(first, Reasoned) and first == again
    tok, ids, chosen = hf_smollm2.prompts, hf_smollm2.tokens(prompt), []
    with torch.inference_mode():
        def last(seq: list[int]):
            return hf_smollm2.model(input_ids=torch.tensor([seq])).logits[0, -1].float()

        while len(chosen) < how.tokens:
            token = int(last(ids + chosen).argmax())
            if token in hf_smollm2.turn_ends:
                break
            chosen.append(token)
        said = tok.text(chosen)
        lp = torch.log_softmax(last(ids + chosen + tok.text_tokens("\n" + how.cue)), dim=-1)
    assert answer_line(said, how.cue) is None  # no answer line of its own: the cue follows the whole rationale
    assert first.rationale == said.strip() and first.n_generated == len(chosen) > 0
    for c, t in tok.candidate_ids(cands).items():
        assert first.dist.logprobs[c] == pytest.approx(float(lp[t]), abs=2e-3)
