"""Each method type's own settings are one typed record: its flags, config keys and docs table come from it."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from judge.cli.options import add_judge_options, spec_from_args
from judge.core.errors import InputError
from judge.core.settings import docs_table
from judge.engine.spec import MethodSpec, method_type
from judge.methods import settings_docs

ROOT = Path(__file__).resolve().parents[1]


def test_every_docs_table_of_settings_is_the_records():
    """A page whose table differs from the record fails here; ``python -m judge.methods.settings_docs`` rewrites it."""
    pages = settings_docs.pages()
    assert set(pages) >= {"docs/backends.md", "docs/heads.md", "docs/harness.md", "docs/pairwise.md"}
    for page, names in pages.items():
        text = (ROOT / page).read_text(encoding="utf-8")
        assert settings_docs.render(text, names) == text, f"{page}: run python -m judge.methods.settings_docs"


def test_a_stale_table_is_rewritten_and_a_missing_one_named():
    name = "ensemble"
    stale = f"x\n{settings_docs.begin(name)}\n| old |\n{settings_docs.END}\ny"
    assert settings_docs.render(stale, [name]) == (f"x\n{settings_docs.begin(name)}\n"
                                                   f"{docs_table(method_type(name).settings)}\n{settings_docs.END}\ny")
    with pytest.raises(ValueError, match="no table of the head type's settings"):
        settings_docs.render("nothing here", ["head"])


def _spec(*argv: str) -> MethodSpec:
    p = argparse.ArgumentParser()
    add_judge_options(p)
    return spec_from_args(p.parse_args(list(argv)))


def test_generated_flags_reach_the_types_record_and_another_types_are_refused_naming_the_owner():
    spec = _spec("--reason", "16", "--reason-temperature", "0.7")
    assert (spec.settings.reason, spec.settings.reason_temperature) == (16, 0.7)  # type: ignore[attr-defined]
    ens = _spec("--member", "prompt=yesno", "--member", "scorer=length", "--weights", "2,1", "--combine", "mean")
    assert (ens.settings.weights, ens.settings.combine) == ((2.0, 1.0), "mean")  # type: ignore[attr-defined]
    with pytest.raises(InputError, match="reason belongs to llm methods, not to a classic method"):
        _spec("--scorer", "length", "--reason", "8")
    with pytest.raises(InputError, match="--combine needs ensemble members"):
        _spec("--combine", "mean")


def test_a_spec_holds_only_its_types_settings_and_takes_them_flat():
    spec = MethodSpec(type="pairwise", orders="one")
    assert type(spec.settings).__name__ == "PairwiseSettings" and spec.describe()["orders"] == "one"
    assert MethodSpec.from_mapping({"type": "pairwise", "orders": "one"}) == spec
    with pytest.raises(InputError, match="orders belongs to pairwise methods, not to a llm method"):
        MethodSpec(orders="one")
    with pytest.raises(InputError, match=r"field 'reason_temperature'.*needs one"):
        MethodSpec(reason_temperature=0.5)


def test_the_ray_and_hosted_tables_are_generated_by_the_same_command():
    pages = settings_docs.pages()
    assert pages["docs/distributed.md"] == ["ray"] and pages["docs/backends-api.md"] == ["hosted"]


def test_the_prompt_and_example_flags_are_the_llm_records():
    """``--selector``, ``--k``, ``--no-group-guard``, ``--example-order``, ... are generated from ``LLMSettings``:
    each reaches its field, a choice off the record's list is refused by the parser, and a flag left alone keeps
    the record's default."""
    spec = _spec("--selector", "random", "--k", "2", "--no-group-guard", "--example-order", "descending",
                 "--context", "none", "--top-k", "5")
    s = spec.settings
    assert (s.selector, s.k, s.group_guard, s.order, s.context, s.top_k) == (  # type: ignore[attr-defined]
        "random", 2, False, "descending", "none", 5)
    assert _spec().settings == method_type("llm").settings()
    with pytest.raises(SystemExit):
        _spec("--example-order", "sideways")


def test_the_run_flags_come_from_the_run_options_record():
    from judge.cli.options import add_run_options, run_options
    from judge.engine.session import RunOptions

    p = argparse.ArgumentParser()
    add_run_options(p)
    assert run_options(p.parse_args([])) == RunOptions()
    assert run_options(p.parse_args(["--no-progress", "--ray", "local"])) == RunOptions(
        ray=run_options(p.parse_args(["--ray", "local"])).ray, progress=False)


def test_the_command_rewrites_a_stale_page_and_leaves_the_others(tmp_path: Path):
    """``python -m judge.methods.settings_docs`` (its :func:`write`) rewrites only the page whose table is stale."""
    for page in settings_docs.pages():
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / page).write_text((ROOT / page).read_text(encoding="utf-8"), encoding="utf-8")
    page = tmp_path / "docs" / "distributed.md"
    page.write_text(page.read_text(encoding="utf-8").replace("| `ray_actors` |", "| `ray_workers` |"), encoding="utf-8")
    assert settings_docs.write(tmp_path) == ["docs/distributed.md"]
    assert page.read_text(encoding="utf-8") == (ROOT / "docs" / "distributed.md").read_text(encoding="utf-8")
    assert settings_docs.write(tmp_path) == []


def test_the_generation_flags_are_the_generate_records():
    from judge.core.config import GenerateConfig

    spec = _spec("--n-ctx", "512", "--no-cache", "--seed", "3", "--timeout", "5")
    assert spec.generate == GenerateConfig(max_context=512, cache=False, seed=3, timeout=5.0)
    assert _spec().generate == GenerateConfig()
    with pytest.raises(InputError, match="must be >= 1, got 0") as err:
        _spec("--n-ctx", "0")
    assert err.value.field == "--n-ctx"
