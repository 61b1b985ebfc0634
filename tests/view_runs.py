"""Runs for the ``judge view`` tests, with every prompt the backend is handed recorded, so that the
prompts a view shows can be checked against those sent in the same run."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.harness import load_experiment, run_experiment

#: Zero-shot, k-shot (examples from the dev half) and a rating prompt on the mock backend with the cache
#: off, so that the backend is handed every prompt of the run. ``{sets}``: the sets; ``{k_shot}``: more
#: settings of the k-shot method; ``{extra}``: more methods.
CONFIG = """
name = "{name}"
datasets = {sets}
qualities = ["overall"]
limit = {limit}
split = "test"
compare = [["bm25c-2", "yesno"]]
[defaults]
backend = "mock"
generate = {{ cache = false }}
[[methods]]
name = "yesno"
prompt = "yesno"
[[methods]]
name = "bm25c-2"
prompt = "yesno"
selector = "bm25-context"
k = 2
{k_shot}
[[methods]]
name = "rating-exp"
prompt = "rating"
rule = "expected"
{extra}
"""


def record_prompts(mp: pytest.MonkeyPatch, backend: type) -> list[tuple[str, bool]]:
    """From now on, every prompt ``backend``'s ``label_logprobs`` is handed, as (text, chat), in order."""
    sent: list[tuple[str, bool]] = []
    original = backend.label_logprobs

    def recording(self, prompts, candidates, top_n=20):
        sent.extend((p.text, p.chat) for p in prompts)
        return original(self, prompts, candidates, top_n)

    mp.setattr(backend, "label_logprobs", recording)
    return sent


def run(tmp: Path, data_dir: Path, *, name: str = "view-test", sets: str = '["TU", "FT", "FD"]', limit: int = 12,
        k_shot: str = "", extra: str = "") -> Path:
    """Run the config into ``tmp/run`` (in this process, so a recording set up before sees its prompts)."""
    config = tmp / "exp.toml"
    config.write_text(CONFIG.format(name=name, sets=sets, limit=limit, k_shot=k_shot, extra=extra))
    out = tmp / "run"
    exp = load_experiment(config).with_overrides(data_dir=str(data_dir), output=str(out))
    run_experiment(exp, progress=False, plots=False, log=lambda m: None)
    return out
