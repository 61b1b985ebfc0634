"""Experiment config validation: every error names the bad key; expansion of k and seeds."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.core.errors import InputError
from judge.harness import load_experiment, parse_experiment

ROOT = Path(__file__).resolve().parents[1]


def _exp(**extra):
    base = {"datasets": ["TU"], "methods": [{"type": "llm", "prompt": "yesno"}]}
    base.update(extra)
    return parse_experiment(base, "x.toml")


def test_unknown_method_key_names_it_and_suggests():
    with pytest.raises(InputError, match=r"methods\[1\]\.selectr: unknown key; did you mean 'selector'\?"):
        _exp(methods=[{"type": "classic", "scorer": "length"}, {"prompt": "yesno", "selectr": "random"}])


@pytest.mark.parametrize(("doc", "pattern"), [
    ({"datasets": ["TU"], "methods": [{}], "limt": 3}, r"limt: unknown key; did you mean 'limit'"),
    ({"datasets": ["TU"], "methods": [{"k": "4"}]}, r"methods\[0\]\.k: must be an integer or a list"),
    ({"datasets": ["TU"], "methods": [{"k": [4, -1], "selector": "random"}]}, r"methods\[0\]\.k: must hold integers >= 0"),
    ({"datasets": ["TU"], "methods": [{"k": 4}]}, r"methods\[0\]\.selector: k = 4 needs an example selector"),
    ({"datasets": ["TU"], "methods": [{"type": "rule"}]}, r"methods\[0\]\.type: must be 'llm', 'classic', 'ensemble', 'head', 'likelihood' or 'pairwise'"),
    ({"datasets": ["TU"], "methods": [{"type": "classic"}]}, r"methods\[0\]\.scorer: missing"),
    ({"datasets": ["XX"], "methods": [{}]}, r"datasets\[0\]: unknown dataset 'XX'"),
    ({"datasets": [{"name": "fed-turn", "qualities": ["Intresting"]}], "methods": [{}]},
     r"datasets\[0\]: unknown quality of fed-turn 'Intresting'.*Did you mean: Interesting"),
    ({"datasets": ["TU"], "methods": [{"generate": {"thread": 2}}]}, r"methods\[0\]\.generate\.thread: unknown key; did you mean 'threads'"),
    ({"datasets": ["TU"], "methods": [{"generate": {"concurrency": 0}}]},
     r"methods\[0\]\.generate\.concurrency: must be >= 1, got 0"),
    ({"datasets": ["TU"], "defaults": {"generate": {"max_retries": -1}}, "methods": [{}]},
     r"methods\[0\]\.generate\.max_retries: must be >= 0, got -1"),
    ({"datasets": ["TU"], "methods": [{"name": "a"}, {"name": "a"}]}, r"methods\[1\]\.name: method name 'a' is already used"),
    ({"datasets": ["TU"], "methods": [{"name": "a"}], "compare": [["a", "b"]]}, r"compare\[0\]: unknown method 'b'"),
    ({"datasets": ["TU"], "methods": []}, r"methods: at least one"),
    ({"datasets": ["TU"], "methods": [{"paper": "GPT-5"}]}, r"methods\[0\]\.paper: unknown paper row 'GPT-5'"),
    ({"datasets": ["TU"], "methods": [{"k": True}]}, r"methods\[0\]\.k: must be"),
])
def test_validation_errors_name_the_key(doc, pattern):
    with pytest.raises(InputError, match=pattern):
        parse_experiment(doc, "x.toml")


def test_toml_syntax_error_names_file(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("limit = \n")
    with pytest.raises(InputError, match=r"bad\.toml: invalid TOML"):
        load_experiment(p)


def test_expansion_of_k_and_seeds():
    exp = _exp(methods=[
        {"name": "rand", "selector": "random", "k": [4, 8], "seeds": [0, 1, 2]},
        {"name": "bm25", "selector": "bm25-context", "k": 4, "seeds": [0, 1]},
        {"name": "zero", "k": 0},
        {"type": "classic", "scorer": "length"},
    ])
    ids = [m.name for m in exp.methods]
    assert ids == ["rand-k4", "rand-k8", "bm25", "zero", "length"]
    assert exp.methods[0].run_seeds() == (0, 1, 2)  # random selection runs every seed
    assert exp.methods[2].run_seeds() == (0,)  # deterministic selection runs once
    assert exp.methods[3].settings.selector == "none"


def test_qualities_overall_and_all():
    exp = parse_experiment({"datasets": ["DZ", {"name": "FT", "qualities": "all"}], "methods": [{}]}, "x")
    assert exp.datasets[0].qualities == ("appropriateness",)
    assert len(exp.datasets[1].qualities) == 9


def test_overrides_apply_to_llm_methods_only():
    exp = _exp(methods=[{"name": "a", "backend": "vllm", "model": "m"}, {"type": "classic", "scorer": "length"}])
    o = exp.with_overrides(backend="llamacpp", limit=5, threads=2)
    assert o.methods[0].backend == "llamacpp" and o.methods[0].model is None
    assert o.methods[0].generate.threads == 2 and o.limit == 5
    assert o.methods[1].type == "classic"


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "benchmarks" / "configs").glob("*.toml")))
def test_shipped_configs_validate(name):
    exp = load_experiment(ROOT / "benchmarks" / "configs" / name)
    assert (exp.methods or exp.compare_cells) and exp.datasets  # a round of pairwise cells only has no [[methods]]
