"""``--backend-option KEY=VALUE``: how backend-specific settings reach create_backend from the CLI."""

from __future__ import annotations

import argparse

import pytest

from judge.backends import backend_names
from judge.cli.options import add_judge_options, backend_options
from judge.core.errors import InputError


def _parse(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_judge_options(p)
    return p.parse_args(list(argv))


def test_values_are_json_when_they_parse_else_text():
    args = _parse("--backend", "vllm", "--backend-option", "tensor_parallel_size=2",
                  "--backend-option", "distributed_executor_backend=ray", "--backend-option", "gguf_cache=true",
                  "--backend-option", "dtype=bfloat16", "--backend-option", 'revision="123"')
    assert backend_options(args) == {"tensor_parallel_size": 2, "distributed_executor_backend": "ray",
                                     "gguf_cache": True, "dtype": "bfloat16", "revision": "123"}
    assert backend_options(_parse()) == {}


@pytest.mark.parametrize("bad", ["novalue", "=3", "not a name=1"])
def test_malformed_option_is_a_clear_error(bad):
    with pytest.raises(InputError, match="KEY=VALUE"):
        backend_options(_parse("--backend-option", bad))


def test_local_backends_are_registered():
    assert {"llamacpp", "transformers", "hf", "vllm"} <= set(backend_names())


def test_missing_vllm_names_the_extra():
    import importlib.util

    from judge.backends import create_backend
    from judge.core.errors import MissingExtraError

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed in this environment")
    with pytest.raises(MissingExtraError, match=r"judge\[vllm\]"):
        create_backend("vllm", "some/model")


@pytest.mark.parametrize(("option", "instead"), [("n_ctx=160", "--n-ctx"), ("n_threads=1", "--threads"),
                                                 ("seed=3", "generate.seed")])
def test_llamacpp_options_judge_sets_itself_point_at_the_flag(option, instead):
    """These used to reach llama.cpp twice and fail with "got multiple values for keyword argument"."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-m", "judge", "score", str(root / "examples" / "dialogues.jsonl"),
                           "--limit", "1", "--no-cache", "--backend-option", option], cwd=root, env={**os.environ},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert f"is set by judge; use {instead}" in proc.stderr and "multiple values" not in proc.stderr


@pytest.mark.slow  # 13-25 s of real-model work: kept out of the README's 10-minute command
def test_llamacpp_options_are_part_of_the_cache_key(tmp_path):
    """Flash attention moves SmolLM2's probabilities (by up to .03 on DailyDialog prompts): a run with
    ``--backend-option flash_attn=true`` must not be served the default run's cached answers, and the
    default's keys stay as they were (a rerun of it is all hits)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "JUDGE_CACHE": str(tmp_path / "cache.sqlite")}

    def score(*extra: str) -> str:
        proc = subprocess.run([sys.executable, "-m", "judge", "score", str(root / "examples" / "dialogues.jsonl"),
                               "--limit", "2", "--threads", "2", *extra], cwd=root, env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return proc.stderr

    assert "cache: 0 hits, 2 misses" in score()
    assert "cache: 0 hits, 2 misses" in score("--backend-option", "flash_attn=true")
    assert "cache: 2 hits, 0 misses" in score("--backend-option", "flash_attn=true")
    assert "cache: 2 hits, 0 misses" in score()
