"""A judge that reasons first on the embedded model (SmolLM2 through llama.cpp): the rationale generated
after the prompt, the answer read from the KV state the generation left, the same answer whatever ran
before it, the cost replay's counts, and the issue's command end to end (a rerun bit-identical from the
cache).

``reuse`` and ``scratch`` (tests/conftest.py) evaluate in 32-token batches, so prompts of a few hundred
tokens cross several batch boundaries, reuse whole batches of the previous prompt (``reuse``) or nothing
(``scratch``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judge import load_items
from judge.accounting.rates import Rate, rate_key, write_rate
from judge.backends.base import Prompt, Reasoned, Reasoning
from judge.backends.registry import replay_backend
from judge.core.config import GenerateConfig
from judge.prompts.answers import candidates
from judge.prompts.templates import get_prompt

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "dialogues.jsonl"
TEMPLATE = get_prompt("yesno-criteria")
LABELS = tuple(candidates(TEMPLATE.answer))


def _prompts(n: int, tokens: int) -> list[Prompt]:
    """The first ``n`` example items' prompts asking for a rationale, with their declared splits."""
    out = []
    for item in load_items(str(EXAMPLES))[:n]:
        text, _ = TEMPLATE.render_reasoned(item, tokens=tokens)
        out.append(Prompt(text, chat=True, shared=TEMPLATE.shared_chars(text),
                          instructions=TEMPLATE.instructions_chars(text, level=item.level)))
    return out


def _said(answers) -> list[tuple[str, dict[str, float], int]]:
    assert all(isinstance(a, Reasoned) for a in answers), answers
    return [(a.rationale, a.dist.logprobs, a.n_generated) for a in answers]


@pytest.mark.slow
@pytest.mark.parametrize("how", [Reasoning(12, "Answer:"), Reasoning(12, "Answer:", temperature=0.9, seed=7)],
                         ids=["greedy", "sampled"])
def test_an_answer_after_a_rationale_does_not_depend_on_what_ran_before(reuse, scratch, how):
    """Each prompt alone from an empty KV cache, then all of them in order and in reverse on a backend that
    reuses the previous prompt's batches: the same rationales and the same distributions, bit for bit; a
    label read after them is the label read alone. The prompt is evaluated once: the read costs one decode."""
    prompts = _prompts(2, how.tokens)
    answers = [scratch.reason([p], LABELS, 5, how)[0] for p in prompts]
    alone = _said(answers)
    # evaluated beyond the prompt: the cue, and the rationale's last token when the budget ended it
    assert all(isinstance(a, Reasoned) and a.dist.n_evaluated_tokens - a.dist.n_prompt_tokens <= 6 for a in answers)
    assert _said(reuse.reason(prompts, LABELS, 5, how)) == alone
    assert _said(reuse.reason(prompts[::-1], LABELS, 5, how))[::-1] == alone
    assert all(0 < n <= how.tokens for _, _, n in alone) and any(r for r, _, _ in alone)
    plain = Prompt("Is the sky blue? Answer:", chat=False)
    assert reuse.label_logprobs([plain], LABELS)[0].logprobs == scratch.label_logprobs([plain], LABELS)[0].logprobs


@pytest.mark.slow  # five rationales of one prompt: the sampled path's own test
def test_the_seed_samples_another_rationale_and_greedy_is_the_default(scratch):
    prompt = _prompts(1, 8)
    greedy = _said(scratch.reason(prompt, LABELS, 5, Reasoning(8, "Answer:")))
    seeds = {_said(scratch.reason(prompt, LABELS, 5, Reasoning(8, "Answer:", 1.0, seed)))[0][0] for seed in range(3)}
    assert len(seeds) > 1 and greedy == _said(scratch.reason(prompt, LABELS, 5, Reasoning(8, "Answer:", 0.0, 5)))


@pytest.mark.slow
def test_the_replay_counts_what_a_rationale_that_spends_its_budget_evaluates(reuse):
    """The cost replay runs the backend's steps with a placeholder token that never ends the rationale:
    where the real rationale spent its whole budget too, every count is the real one."""
    how = Reasoning(6, "Answer:")
    prompts = _prompts(3, how.tokens)
    replay = replay_backend("llamacpp", None, GenerateConfig(threads=2), n_batch=32)
    reuse.reset()
    full = 0
    for prompt in prompts:
        counts, answers = [], []
        for backend in (reuse, replay):
            before = dict(backend.counters())
            answers += backend.reason([prompt], LABELS, 5, how)
            counts.append({k: v - before.get(k, 0) for k, v in backend.counters().items()})
        if answers[0].n_generated == how.tokens:
            full += 1
            assert counts[0] == counts[1]
        else:  # ended sooner: the replay's counts are the most it could take
            assert all(counts[1][k] >= v for k, v in counts[0].items())
    assert full
    replay.close()


def _score(cache: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "judge", "score", str(EXAMPLES), "--format", "jsonl", "--threads", "2",
                           *args], cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "JUDGE_CACHE": str(cache)})


def test_check_counts_the_rationales_it_will_generate(tmp_path):
    """``--check`` counts every rationale at its budget and times it at the rate of a generated token (a
    rate written here: a calibration would time the model)."""
    replay = replay_backend("llamacpp", None, GenerateConfig(threads=2))
    write_rate(rate_key(replay.rate_identity()), Rate("smollm2", 2, 0.01, 0.001, "2026-11-28", "calibration",
                                                      per_generated=0.5), tmp_path / "rates.json")
    replay.close()
    proc = _score(tmp_path / "cache.sqlite", "--reason", "16", "--check", "--limit", "3")
    assert proc.returncode == 0, proc.stderr
    assert "+ 48 generated" in proc.stdout and "500 ms per generated token" in proc.stdout
    assert "calibrating" not in proc.stderr


@pytest.mark.slow  # the command on the embedded model: about 30 s, then the rerun from the cache
def test_score_with_reason_64_gives_every_item_a_rationale_and_a_rerun_is_the_same_bytes(tmp_path):
    cache = tmp_path / "cache.sqlite"
    first = _score(cache, "--reason", "64")
    assert first.returncode == 0, first.stderr
    rows = [json.loads(line) for line in first.stdout.splitlines()]
    assert len(rows) == 12 and all(r["error"] is None and r["rationale"] and r["n_generated_tokens"] for r in rows)
    assert all(not r["estimated"] and r["complete"] for r in rows)
    again = _score(cache, "--reason", "64")
    assert again.returncode == 0 and again.stdout == first.stdout
    assert "12 hits, 0 misses" in again.stderr
