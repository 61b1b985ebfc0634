"""Likelihood methods with the real SmolLM2 through llama.cpp, the SQLite cache and the engine."""

from __future__ import annotations

import math

from judge.cache import Cache, CachedBackend
from judge.config import GenerateConfig
from judge.engine import BackendPool, MethodSpec, build_scorer
from judge.items import SYSTEM, USER, Item, Turn
from judge.scorers.likelihood import LikelihoodScorer


def _items() -> list[Item]:
    fruit = (Turn(USER, "What is your favourite fruit?"),)
    train = (Turn(USER, "When does the train to Paris leave?"),)
    return [
        Item("match", "turn", context=fruit, response="My favourite fruit is the apple, it is sweet and crunchy."),
        Item("mismatch", "turn", context=train, response="My favourite fruit is the apple, it is sweet and crunchy."),
        Item("dialog", "dialog", dialog=fruit + (Turn(SYSTEM, "Apples."), Turn(USER, "Why?"), Turn(SYSTEM, "Sweet."))),
    ]


def test_pmi_is_finite_deterministic_and_prefers_the_matching_context(smollm2):
    scorer = LikelihoodScorer(smollm2, "pmi")
    first = [s.value for s in scorer.score(_items())]
    again = [s.value for s in scorer.score(_items()[::-1])][::-1]
    assert all(v is not None and math.isfinite(v) for v in first)
    assert first == again
    # The same reply is better explained by the question it answers than by an unrelated one.
    assert first[0] > first[1]  # type: ignore[operator]


def test_every_signal_scores(smollm2):
    from judge.scorers.likelihood import SIGNALS

    for signal in SIGNALS:
        values = [s.value for s in LikelihoodScorer(smollm2, signal).score(_items()[:1])]
        assert values[0] is not None and math.isfinite(values[0]), signal


def test_second_run_is_served_from_the_cache(smollm2, tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    backend = CachedBackend(smollm2, cache)
    first = [s.value for s in LikelihoodScorer(backend, "pmi").score(_items())]
    assert backend.misses > 0 and backend.hits == 0
    misses = backend.misses
    second = [s.value for s in LikelihoodScorer(backend, "pmi-max").score(_items())]
    assert backend.misses == misses and backend.hits == misses  # every request answered from the cache
    third = [s.value for s in LikelihoodScorer(backend, "pmi").score(_items())]
    assert third == first and second != first


def test_ensemble_takes_a_likelihood_member(tmp_path):
    gen = GenerateConfig(threads=2, cache_path=str(tmp_path / "c.sqlite"))
    spec = MethodSpec(type="ensemble", members=(MethodSpec(prompt="yesno", generate=gen),
                                                MethodSpec(type="likelihood", signal="pmi", generate=gen)))
    items = _items()[:2]
    pool = BackendPool()
    try:
        scores = list(build_scorer(spec, items, backends=pool).score(items))
    finally:
        pool.close()
    assert [s.item_id for s in scores] == ["match", "mismatch"]
    assert all(s.ok for s in scores)


def test_likelihood_spec_refuses_an_unknown_signal():
    import pytest

    from judge.errors import InputError

    with pytest.raises(InputError, match="pmi"):
        MethodSpec(type="likelihood", signal="perplexity")
    assert MethodSpec(type="likelihood").name == "likelihood-pmi"


def test_documented_cli_commands_score(tmp_path):
    """docs/likelihood.md's `judge score --likelihood` and `--member likelihood=pmi` commands, as a user
    runs them (subprocess, the embedded SmolLM2)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    data = root / "examples" / "dialogues.jsonl"
    for extra in (["--likelihood", "conditional"], ["--member", "prompt=yesno-criteria", "--member", "likelihood=pmi"]):
        out = tmp_path / "rows.jsonl"
        proc = subprocess.run([sys.executable, "-m", "judge", "score", str(data), "--limit", "3", "--threads", "2",
                               "-o", str(out), *extra], cwd=root, env={**os.environ}, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        rows = [json.loads(x) for x in out.read_text().splitlines()]
        assert len(rows) == 3 and all(r["score"] is not None for r in rows), rows


def test_config_errors_name_file_and_key(tmp_path):
    import pytest

    from judge.errors import InputError
    from judge.harness.config import load_experiment

    path = tmp_path / "exp.toml"
    path.write_text('datasets = ["FT"]\n[[methods]]\nname = "lik"\ntype = "likelihood"\nsignal = "pmi-mean"\n')
    with pytest.raises(InputError, match=r"exp\.toml.*methods\[0\]\.signal.*pmi"):
        load_experiment(path)
    path.write_text('datasets = ["FT"]\n[[methods]]\ntype = "likelihood"\nprompt = "yesno"\n')
    with pytest.raises(InputError, match=r"methods\[0\]\.prompt.*unknown key"):
        load_experiment(path)
    path.write_text('datasets = ["FT"]\n[[methods]]\ntype = "likelihood"\nsignal = "conditional"\n')
    (method,) = load_experiment(path).methods
    assert (method.name, method.signal) == ("likelihood-conditional", "conditional")
