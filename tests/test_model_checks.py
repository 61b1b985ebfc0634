"""Checks that need the real model (SmolLM2 via llama.cpp): labels it cannot say, cache identity of a
GGUF replaced in place, and a file with empty responses scored whole."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from judge.backends.base import Backend, Prompt
from judge.backends.llamacpp import LlamaCppBackend
from judge.core.config import GenerateConfig
from judge.core.errors import TemplateError
from judge.datasets import resolve_source
from judge.engine.cache import Cache, CachedBackend
from judge.models.packaged import file_sha256, resolve_model_path
from judge.prompts.answers import Rating, YesNo, check_labels, unreadable_labels
from judge.prompts.templates import get_prompt, load_template
from judge.scorers.llm import LLMJudge
from judge.selectors import get_selector

FIXTURES = Path(__file__).resolve().parent / "fixtures"

RATING_0_10 = """{#- judge
answer = "rating"
min = 0
max = 10
-#}
Rate the response from {{ answer.min }} to {{ answer.max }}.
Response: {{ item.response }}
Rating:"""


def test_two_token_label_is_refused_before_scoring(smollm2, tmp_path: Path) -> None:
    """SmolLM2 spells 10 as '1' '0': scoring would read '1' for it. The pair is refused up front."""
    path = tmp_path / "rating-0-10.j2"
    path.write_text(RATING_0_10, encoding="utf-8")
    template = load_template(path)
    assert unreadable_labels(template.answer, smollm2.single_token) == ["10"]
    with pytest.raises(TemplateError) as info:
        LLMJudge(template, smollm2)
    message = str(info.value)
    assert "rating-0-10" in message and "'10'" in message and "'9'" not in message
    assert "single token" in message and "smollm2" in message.lower()
    # Through the cache wrapper too (the check reaches the inner backend's tokenizer).
    cached = CachedBackend(smollm2, Cache(tmp_path / "c.sqlite"))
    with pytest.raises(TemplateError):
        check_labels(template.answer, cached)
    # Scales whose labels are single tokens pass.
    for answer in (Rating(1, 5), Rating(0, 9), YesNo()):
        check_labels(answer, smollm2)
    LLMJudge(get_prompt("rating"), smollm2)


def test_backends_that_cannot_tell_are_not_checked() -> None:
    """A backend without a tokenizer (hosted APIs) keeps the contract's default ``single_token`` (None,
    "cannot tell"): the check is skipped."""

    class NoTokenizer(Backend):
        model_id = "remote"

    check_labels(Rating(0, 10), NoTokenizer())


def _scores(backend: CachedBackend) -> list[float]:
    prompts = [Prompt(f"Question: is {n} a prime number?\nAnswer:") for n in (7, 8, 9)]
    dists = backend.label_logprobs(prompts, ["yes", "no", " yes", " no"])
    return [d.logprobs[" yes"] for d in dists]


@pytest.mark.slow
def test_gguf_replaced_in_place_is_not_served_stale_cache(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("JUDGE_HOME", str(tmp_path / "home"))  # the hash memo, isolated
    model = tmp_path / "judge-model.gguf"
    shutil.copyfile(resolve_model_path(None), model)
    cache_path = tmp_path / "cache.sqlite"
    config = GenerateConfig(threads=2, max_context=512)

    def run() -> tuple[CachedBackend, list[float]]:
        backend = CachedBackend(LlamaCppBackend(str(model), config), Cache(cache_path))
        try:
            return backend, _scores(backend)
        finally:
            backend.close()

    first, before = run()
    assert (first.hits, first.misses) == (0, 3)
    again, same = run()
    assert (again.hits, again.misses) == (3, 0) and same == before
    old_sha = again.settings()["sha256"]

    # Replace the file's bytes in place with another valid GGUF: the metadata string general.name
    # rewritten at equal length (llama.cpp still loads it; the weights are unchanged).
    data = model.read_bytes()
    name = b"Smollm2 135M 8k Lc100K Mix1 Ep2"
    assert data.count(name) == 1
    stat = model.stat()
    with open(model, "r+b") as fh:
        fh.seek(data.index(name))
        fh.write(b"Smollm2 135M 8k Lc100K Mix1 Ep3")
    os.utime(model, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert model.stat().st_size == stat.st_size

    replaced, after = run()
    assert (replaced.hits, replaced.misses) == (0, 3), "a replaced GGUF must not hit the old file's entries"
    assert replaced.settings()["sha256"] != old_sha == file_sha256(resolve_model_path(None))
    assert after == pytest.approx(before, abs=1e-6)  # same weights, recomputed rather than served
    memo = json.loads((tmp_path / "home" / "verified.json").read_text())
    entries = [k for k in memo if k.startswith(str(model.resolve()) + ":")]
    assert len(entries) == 1 and memo[entries[0]] == replaced.settings()["sha256"]


@pytest.mark.slow
def test_file_with_empty_responses_is_scored_whole(smollm2) -> None:
    """The users' file with two empty responses and a declared 0-2 scale: every item scored, two flagged;
    with examples, labels come from the declared scale (a 0 is 'No', a 2 'Yes')."""
    source = resolve_source(FIXTURES / "rated_0to2.jsonl")
    items = list(source.items)
    judge = LLMJudge(get_prompt("yesno"), smollm2, quality=source.quality,
                     selector=get_selector("random", seed=0), k=2, pool=items)
    scores = list(judge.score(items))
    assert [s.item_id for s in scores] == [it.id for it in items]
    assert all(s.ok and 0 <= s.value <= 1 for s in scores), [s.error for s in scores]
    flagged = [it.id for it in items if it.flags == ("empty_response",)]
    assert flagged == ["r02", "r05"]
    prompt, _ = judge.build_prompt(items[1], items)
    assert "Response: (empty response)\n" in prompt.text
    labels = {it.id: judge.prompt.example_label(it, source.quality) for it in items}
    assert labels["r02"] == "No" and labels["r01"] == "Yes" and labels["r07"] == "Yes" and labels["r08"] == "No"
