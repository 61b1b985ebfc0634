"""Judges that reason first (``reason = N``): the answer line found the same way by every backend, the
templates' request for a rationale, the spec field through every entry point, rows and cache keys.

Real templates, the real engine, the product's mock backend (plumbing only); the llama.cpp path runs on
the real SmolLM2 in ``tests/test_reasoning_llamacpp.py`` and the API paths against HTTP servers on
127.0.0.1 in ``tests/test_api_reasoning.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from judge import load_items, make_judge
from judge.backends import create_backend
from judge.backends.base import Prompt, Reasoning
from judge.backends.generation import think
from judge.backends.reasoning import answer_line, final_answer, parse_label, visible_start
from judge.backends.requests import KINDS, Request, ask
from judge.core.config import GenerateConfig
from judge.core.errors import InputError, TemplateError
from judge.engine import PROMPT_KEYS, REASON_KEYS, ROW_KEYS, MethodSpec
from judge.engine.cache import cache_key, reason_key, request_key
from judge.heads.head import prompt_hash
from judge.prompts.answers import Rating, YesNo, candidates
from judge.prompts.templates import get_prompt, load_template

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "dialogues.jsonl"


# -- the answer line ----------------------------------------------------------------------------------
@pytest.mark.parametrize("text, found", [
    ("It fits.\nAnswer: Yes", (9, 16)),
    ("It fits.\n**Answer:** Yes", (9, 18)),
    ("It fits.\n**Answer**: Yes", (9, 20)),
    ("It fits.\n> answer: yes", (9, 18)),
    ("The answer: it fits.", None),  # not at a line start: part of the rationale
    ("Answering: no", None),
])
def test_the_answer_line_begins_a_line_with_the_cue(text, found):
    assert answer_line(text, "Answer:") == found
    assert answer_line(text.encode(), "Answer:") == found  # byte offsets, as llama.cpp reads its tokens


def test_thinking_is_never_searched_for_the_answer():
    assert answer_line("<think>Answer: No</think>\nIt fits.\nAnswer: Yes", "Answer:") == (35, 42)
    assert answer_line("<think>It fits.\nAnswer: No", "Answer:") is None  # an open block: nothing is an answer yet
    assert visible_start("<think>a</think>b") == 16 and visible_start("<think>a") is None and visible_start("a") == 0
    assert final_answer("<think>Answer: No</think>\nIt fits.\nAnswer: Yes", "Answer:", ["Yes", "No"]) == (
        "<think>Answer: No</think>\nIt fits.", "Yes")


def test_the_label_is_the_first_word_after_the_cue():
    cands = candidates(YesNo())
    assert parse_label(" Yes, it fits.", cands) == "Yes"
    assert parse_label(" **no**", cands) == "no"
    assert parse_label(' "YES"', cands) == "YES"
    assert parse_label(" yEs", cands) == "yes"
    assert parse_label(" maybe", cands) is None
    assert parse_label(" 4/5", candidates(Rating(1, 5))) == "4"
    assert final_answer("Hard to say.", "Answer:", cands) == ("Hard to say.", None)
    assert final_answer("Answer: Yes\nOn second thought...\nAnswer: No", "Answer:", cands)[1] == "No"  # the last one


def test_a_rationale_is_cut_where_the_answer_line_begins():
    """The generation loop every local backend runs: it stops where an answer line begins (keeping the
    tokens before it), at the end of the turn (that token is not kept), or at the budget (whose last token
    has not run); only tokens of a longer rationale run."""
    vocab = ["It", " fits", ".", "\n", "Answer", ":", " Yes", "<end>"]
    def run(script: list[int], tokens: int = 10):
        steps = iter(script[1:])
        ran: list[int] = []

        def step(token: int) -> np.ndarray:
            ran.append(token)
            return np.eye(len(vocab))[next(steps)]

        thought = think(np.eye(len(vocab))[script[0]], Reasoning(tokens, "Answer:"), pick=lambda lg: int(np.argmax(lg)),
                        step=step, ends_turn=lambda t: vocab[t] == "<end>",
                        text=lambda ids: "".join(vocab[i] for i in ids))
        return thought, ran

    thought, _ = run([0, 1, 2, 3, 4, 5, 6])
    assert (thought.keep, thought.text, thought.chosen[thought.keep:]) == (4, "It fits.\n", [4, 5])
    thought, _ = run([0, 1, 7])
    assert (thought.chosen, thought.keep, thought.ran, thought.text) == ([0, 1], 2, 2, "It fits")
    thought, ran = run([0, 1, 2, 3], tokens=3)
    assert (thought.chosen, thought.keep, thought.ran, len(ran)) == ([0, 1, 2], 3, 2, 2)  # the last has not run


# -- templates ----------------------------------------------------------------------------------------
def test_a_built_in_template_asks_for_a_rationale_in_place_of_its_cue_line():
    item = load_items(str(EXAMPLES))[0]
    for name, cue in (("yesno-criteria", "Answer:"), ("rating", "Rating:"), ("fed-turn-interesting", "Rating:")):
        prompt = get_prompt(name)
        plain = prompt.render(item)
        text, found = prompt.render_reasoned(item, tokens=64)
        assert found == cue and plain.endswith("\n" + cue)
        head = plain[: -len(cue)]
        assert text.startswith(head) and "explain your judgement" in text[len(head):]
        assert text.endswith("\n") and f'"{cue} ' in text[len(head):]
        assert prompt.instructions_chars(text, level=item.level) == prompt.instructions_chars(plain, level=item.level)


def test_prompts_without_reason_are_the_ones_the_shipped_head_read():
    """The partial that asks for a rationale is a file of its own: yesno-criteria's text, whose hash the
    shipped head records, is untouched."""
    shipped = json.loads((ROOT / "judge" / "heads" / "shipped" / "criteria-qwen2.5-coder-1.5b.json").read_text())
    assert prompt_hash(get_prompt("yesno-criteria")) == shipped["prompt_sha256"]


def test_a_template_can_place_its_own_rationale(tmp_path):
    own = tmp_path / "own.j2"
    own.write_text('{#- judge\nanswer = "yesno"\ncue = "Verdict:"\n-#}\nIs "{{ item.response }}" good?\n'
                   '{% if reason %}Think in {{ reason.tokens }} tokens, then end with "{{ reason.cue }} Yes/No".\n'
                   '{% else %}Verdict:{% endif %}')
    template = load_template(own)
    item = load_items(str(EXAMPLES))[0]
    assert template.render(item).endswith("Verdict:")
    text, cue = template.render_reasoned(item, tokens=32)
    assert cue == "Verdict:" and text.endswith('Think in 32 tokens, then end with "Verdict: Yes/No".\n')


@pytest.mark.parametrize("body, message", [
    ('{#- judge\nanswer = "yesno"\n-#}\n{% if reason %}x{% endif %}Answer:', "must declare where the answer line"),
    ('{#- judge\nanswer = "yesno"\ncue = "Answer:"\n-#}\nAnswer:', "is for a template that places its own"),
])
def test_reason_and_cue_go_together(tmp_path, body, message):
    path = tmp_path / "bad.j2"
    path.write_text(body)
    with pytest.raises(TemplateError, match=message):
        load_template(path)


def test_a_prompt_that_does_not_end_with_its_cue_is_refused_with_reason(tmp_path):
    path = tmp_path / "long.j2"
    path.write_text('{#- judge\nanswer = "yesno"\n-#}\nIs this reply good, and would the user want to read it? Say.')
    with pytest.raises(TemplateError, match="last line is its answer cue"):
        load_template(path).render_reasoned(load_items(str(EXAMPLES))[0], tokens=8)


# -- the spec, through every entry point --------------------------------------------------------------
def test_reason_is_a_spec_field_of_llm_methods():
    spec = MethodSpec.from_mapping({"prompt": "yesno-criteria", "reason": 64, "reason_temperature": 0.7})
    assert spec.name == "yesno-criteria-none-k0-reason64"
    assert spec.describe()["reason"] == 64 and spec.describe()["reason_temperature"] == 0.7
    assert "reason" not in MethodSpec.from_mapping({"prompt": "yesno"}).describe()  # earlier provenance unchanged
    for values, field in (({"reason": -1}, "reason"), ({"reason_temperature": 0.5}, "reason_temperature"),
                          ({"type": "likelihood", "reason": 8}, "reason")):
        with pytest.raises(InputError) as info:
            MethodSpec.from_mapping(values)
        assert info.value.field == field


def test_toml_defaults_and_methods_set_reason(tmp_path):
    from judge.engine import load_methods

    path = tmp_path / "methods.toml"
    path.write_text('[defaults]\nreason = 32\n[[methods]]\nname = "a"\nprompt = "yesno"\n'
                    '[[methods]]\nname = "b"\nprompt = "rating"\nreason = 0\n'
                    '[[methods]]\nname = "ens"\ntype = "ensemble"\nmembers = ["a", "b"]\n')
    methods = load_methods(path)
    assert methods["a"].settings.reason == 32 and methods["b"].settings.reason == 0
    assert [m.settings.reason for m in methods["ens"].settings.members] == [32, 0]


def test_make_judge_reasons_and_a_rerun_replays_it_from_the_cache(tmp_path):
    config = GenerateConfig(cache_path=str(tmp_path / "cache.sqlite"))
    items = load_items(str(EXAMPLES))[:4]
    judge = make_judge("yesno-criteria", backend="mock", reason=32, config=config)
    first = list(judge.score(items))
    assert all(s.ok and s.said is not None and s.said.rationale and 0 < s.said.n_generated <= 32 for s in first)
    again = make_judge("yesno-criteria", backend="mock", reason=32, config=config)
    second = list(again.score(items))
    assert [(s.value, s.said) for s in second] == [(s.value, s.said) for s in first]
    assert again.backend.counters()["cache_misses"] == 0
    plain = list(make_judge("yesno-criteria", backend="mock", config=config).score(items))
    assert all(s.said is None for s in plain) and [s.value for s in plain] != [s.value for s in first]


def test_a_backend_that_cannot_reason_refuses_before_anything_is_scored():
    class Plain(type(create_backend("mock", None, GenerateConfig()))):  # the contract's default reason()
        def __init__(self) -> None:
            super().__init__(None, GenerateConfig())
            self.capabilities = type(self.capabilities)(full_vocab=True)

    from judge.scorers.llm import LLMJudge

    with pytest.raises(InputError, match=r"capabilities\.reason is False"):
        LLMJudge(get_prompt("yesno"), Plain(), reason=16)


def _score(tmp_path: Path, *args: str) -> tuple[list[dict], str]:
    proc = subprocess.run([sys.executable, "-m", "judge", "score", str(EXAMPLES), "--backend", "mock", "--format",
                           "jsonl", *args], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "JUDGE_CACHE": str(tmp_path / "cache.sqlite")})
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


def test_rows_of_a_reasoning_method_keep_what_the_judge_said(tmp_path):
    """Rows of a method with reason carry the rationale keys after the usual ones; every other method's
    rows are what they were; a rerun is the same bytes, every answer from the cache."""
    rows, _ = _score(tmp_path, "--reason", "24", "--prompt", "yesno-criteria")
    assert all(tuple(r) == ROW_KEYS + PROMPT_KEYS + REASON_KEYS for r in rows)
    assert all(r["rationale"] and r["rationale_chars"] == len(r["rationale"]) and 0 < r["n_generated_tokens"] <= 24
               for r in rows)
    again, err = _score(tmp_path, "--reason", "24", "--prompt", "yesno-criteria")
    assert again == rows and "12 hits, 0 misses" in err
    plain, _ = _score(tmp_path, "--prompt", "yesno-criteria")
    assert all(tuple(r) == ROW_KEYS + PROMPT_KEYS for r in plain)


def test_flags_of_score_and_bench_and_members_set_reason(tmp_path):
    rows, _ = _score(tmp_path, "--reason", "16", "--reason-temperature", "0.8", "--seed", "3")
    sampled, _ = _score(tmp_path, "--reason", "16", "--reason-temperature", "0.8", "--seed", "4")
    assert [r["rationale"] for r in rows] != [r["rationale"] for r in sampled]  # the seed samples another one
    ens, _ = _score(tmp_path, "--member", "prompt=yesno,reason=8", "--member", "prompt=rating")
    assert all(tuple(r) == ROW_KEYS and r["error"] is None for r in ens)
    proc = subprocess.run([sys.executable, "-m", "judge", "score", str(EXAMPLES), "--method", "criteria", "--reason", "8"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--reason" in proc.stderr


def test_judge_serve_serves_a_judge_that_reasons_first(tmp_path):
    """``judge serve --reason N`` (the options of judge score): a served row carries what the judge said, as
    judge score's row for the same item does."""
    sys.path.insert(0, str(ROOT / "tests"))
    from tests.test_serve import call, start_server

    rows, _ = _score(tmp_path, "--reason", "16", "--limit", "1")
    server = start_server(tmp_path, "--backend", "mock", "--reason", "16", env={"JUDGE_CACHE": str(tmp_path / "s.sqlite")})
    try:
        record = json.loads(EXAMPLES.read_text().splitlines()[0])
        status, body = call(server, "POST", "/v1/score", record)
    finally:
        server.stop()
    assert status == 200, body
    row = json.loads(body)
    assert row["rationale"] == rows[0]["rationale"] and row["score"] == rows[0]["score"]
    assert row["n_generated_tokens"] == rows[0]["n_generated_tokens"] > 0


# -- requests and cache keys ----------------------------------------------------------------------------
def test_a_reason_request_is_one_kind_with_its_own_key():
    backend = create_backend("mock", None, GenerateConfig())
    prompt = Prompt("Is it good?\nExplain, then answer.", chat=False)
    how = Reasoning(32, "Answer:")
    request = Request("reason", prompt, ("Yes", "No"), 5, reasoning=how)
    assert KINDS["reason"].needs == "reason"
    (answer,) = ask(backend, [request])
    assert answer.rationale and answer.dist.logprobs
    keys = {request_key(backend, request), cache_key(backend, prompt, ("Yes", "No"), 5)}
    for other in (Reasoning(33, "Answer:"), Reasoning(32, "Verdict:"), Reasoning(32, "Answer:", 0.5),
                  Reasoning(32, "Answer:", 0.5, seed=1)):
        keys.add(reason_key(backend, prompt, ("Yes", "No"), 5, other))
    assert len(keys) == 6  # every generation setting moves the key; the label answer's key is apart
    with pytest.raises(ValueError):
        Request("label", prompt, reasoning=how)
    with pytest.raises(ValueError):
        Request("reason", prompt)
