"""One translator onto MethodSpec: CLI flags, TOML tables and ``make_judge`` keywords all go through
``MethodSpec.from_mapping``, so the same settings give equal specs and the same mistake the same message.

``make_judge`` runs on the mock backend here: what is compared is the spec, which no model changes."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from judge import make_judge
from judge.cli.options import add_judge_options, spec_from_args
from judge.core.config import GenerateConfig
from judge.core.errors import InputError
from judge.core.fields import field_types
from judge.datasets.benchmarks import dataset_info
from judge.engine.spec import MethodSpec, method_type
from judge.harness.config import parse_experiment


def _cli(*argv: str) -> MethodSpec:
    p = argparse.ArgumentParser()
    add_judge_options(p)
    return spec_from_args(p.parse_args(list(argv)))


def _toml(**table: object) -> MethodSpec:
    return parse_experiment({"datasets": ["TU"], "methods": [table]}).methods[0]


def _api(**keywords: object) -> MethodSpec:
    spec = make_judge(**keywords).spec  # type: ignore[arg-type]
    assert spec is not None
    return spec


def test_the_same_settings_give_equal_specs_from_every_entry_point():
    cli = _cli("--backend", "mock", "--prompt", "rating", "--selector", "bm25-context", "--k", "2", "--seed", "3",
               "--top-k", "2", "--rule", "expected", "--no-chat", "--threads", "1", "--example-order", "descending",
               "--backend-option", "seed=7", "--no-group-guard")
    toml = _toml(backend="mock", prompt="rating", selector="bm25-context", k=2, seeds=3, top_k=2, rule="expected",
                 chat=False, generate={"threads": 1, "seed": 3}, selector_options={"order": "descending"},
                 options={"seed": 7}, group_guard=False)
    assert cli == toml
    # make_judge takes backend options as keywords; "seed" is its selection seed, so the mock's seed
    # option cannot be spelled there: compare against the CLI without it.
    cli_plain = _cli("--backend", "mock", "--prompt", "rating", "--selector", "bm25-context", "--k", "2", "--seed",
                     "3", "--top-k", "2", "--rule", "expected", "--no-chat", "--threads", "1", "--example-order",
                     "descending", "--backend-option", "latency_ms=0", "--no-group-guard")
    api = _api(prompt="rating", backend="mock", selector="bm25-context", k=2, seed=3, top_k=2, rule="expected",
               quality=dataset_info("TU").quality("Overall"),
               config=GenerateConfig(chat=False, threads=1, seed=3), order="descending", group_guard=False,
               latency_ms=0)
    assert api == cli_plain


def test_defaults_are_the_specs_own():
    assert _cli() == _toml() == MethodSpec.from_mapping({}) == MethodSpec()


@pytest.mark.parametrize(("cli", "toml", "api", "reason"), [
    (["--k", "-1"], {"k": -1}, {"k": -1}, None),  # each path's own range message for k, checked below
    (["--top-k", "0"], {"top_k": 0}, {"top_k": 0}, "must be >= 1, got 0"),
    (["--k", "2"], {"k": 2}, {"k": 2}, "k = 2 needs an example selector (e.g. 'random' or 'bm25-context')"),
    (["--threads", "0"], {"generate": {"threads": 0}}, {"config": {"threads": 0}}, "must be >= 1, got 0"),
    (["--batch-size", "0"], {"generate": {"batch_size": 0}}, {"config": {"batch_size": 0}}, "must be >= 1, got 0"),
    (["--backend-option", "api_key=x"], {"options": {"api_key": "x"}}, {"api_key": "x"}, "would put a secret"),
])
def test_the_same_mistake_gives_the_same_message(cli, toml, api, reason):
    with pytest.raises(InputError) as from_cli:
        _cli(*cli)
    with pytest.raises(InputError) as from_toml:
        _toml(**toml)
    if "config" in api:
        with pytest.raises(InputError) as from_api:
            _api(config=GenerateConfig(**api["config"]))
        assert from_api.value.reason == reason
    else:
        with pytest.raises(InputError) as from_api:
            _api(**api)
    if reason is None:  # TOML reads k as a list of ks and says so; CLI and make_judge share the spec's message
        assert from_cli.value.reason == from_api.value.reason == "must be >= 0, got -1"
        assert "must hold integers >= 0" in str(from_toml.value)
        return
    assert reason in from_cli.value.reason
    assert from_cli.value.reason == from_api.value.reason
    assert str(from_toml.value).endswith(": " + from_cli.value.reason)


def test_errors_name_the_field_in_each_entry_points_words():
    with pytest.raises(InputError, match=r"field '--threads': must be >= 1"):
        _cli("--threads", "0")
    with pytest.raises(InputError, match=r"methods\[0\]\.generate\.threads: must be >= 1"):
        _toml(generate={"threads": 0})
    with pytest.raises(InputError, match=r"field 'top_k': must be an integer, got str"):
        make_judge(top_k="3")  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"methods\[0\]\.top_k: must be an integer, got str"):
        _toml(top_k="3")
    with pytest.raises(InputError, match=r"field 'generate\.thread': unknown key; did you mean 'threads'\?"):
        MethodSpec.from_mapping({"generate": {"thread": 2}})
    with pytest.raises(InputError, match=r"field 'tpo_k': unknown key; did you mean 'top_k'\?"):
        MethodSpec.from_mapping({"tpo_k": 2})


def test_a_field_added_to_the_spec_is_a_one_place_change():
    """A new MethodSpec field is read, type-checked and defaulted by from_mapping and accepted as a TOML
    key with no change to either translator (only the dataclass grows)."""
    @dataclasses.dataclass(frozen=True)
    class Grown(MethodSpec):
        allow_future: bool = False

    assert Grown.from_mapping({"allow_future": True}).allow_future is True
    with pytest.raises(InputError, match=r"field 'allow_future': must be true or false, got str"):
        Grown.from_mapping({"allow_future": "yes"})
    # The TOML keys of an LLM table are the spec's fields its type accepts (besides the TOML-only ones).
    assert {n for n in field_types(MethodSpec) if n not in {"members", "weights", "combine", "fit", "optional", "index",
                                                            "scorer", "signal", "head", "order", "manual_set",
                                                            "orders"}} <= set(
        method_type("llm").table_keys())


def test_a_likelihood_method_is_the_same_spec_from_cli_toml_and_a_mapping():
    cli = _cli("--backend", "mock", "--likelihood", "pmi-min", "--threads", "1", "--name", "lik")
    toml = _toml(type="likelihood", backend="mock", signal="pmi-min", name="lik", generate={"threads": 1})
    mapping = MethodSpec.from_mapping({"type": "likelihood", "backend": "mock", "signal": "pmi-min", "name": "lik",
                                       "generate": {"threads": 1}})
    assert cli == toml == mapping and mapping.signal == "pmi-min"
    # As an ensemble member: --member likelihood=SIGNAL is the TOML table of type "likelihood".
    members = _cli("--backend", "mock", "--member", "prompt=yesno", "--member", "likelihood=pmi,name=lik")
    table = parse_experiment({"datasets": ["TU"], "methods": [
        {"name": "yesno-none-k0", "backend": "mock", "prompt": "yesno"},
        {"name": "lik", "type": "likelihood", "backend": "mock"},
        {"type": "ensemble", "members": ["yesno-none-k0", "lik"]}]}).methods[2]
    assert members.members == tuple(dataclasses.replace(m, index=0) for m in table.members)


def test_a_likelihood_mistake_gives_the_same_message():
    with pytest.raises(InputError) as from_cli:
        _cli("--likelihood", "perplexity")
    with pytest.raises(InputError) as from_toml:
        _toml(type="likelihood", signal="perplexity")
    assert from_cli.value.field == "--likelihood" and "must be one of conditional, unconditional, pmi" in str(
        from_cli.value)
    assert str(from_toml.value).endswith("methods[0].signal: " + from_cli.value.reason)
    # Flags of prompt methods are refused, not ignored: the spec says why (a TOML table: unknown key).
    with pytest.raises(InputError, match=r"'--selector': a likelihood method shows no examples"):
        _cli("--likelihood", "pmi", "--selector", "random")
    with pytest.raises(InputError, match=r"methods\[0\]\.selector: unknown key"):
        _toml(type="likelihood", selector="random")
    with pytest.raises(InputError, match=r"'--likelihood': a likelihood method reads no prompt template"):
        _cli("--likelihood", "pmi", "--prompt", "yesno")
