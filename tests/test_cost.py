"""What a run will cost before it starts (``judge run --check``): the prompt tokens each cell evaluates after
prefix reuse, and the wall time at the rate this machine measured.

Real components: the packaged SmolLM2 through llama.cpp, the shipped templates and data, the harness and
its SQLite cache. The token count is checked against what the real backend reports it evaluated in a
real run of the same config (``tokens_evaluated``: tokens decoded after prefix reuse), so a count that
ignored reuse, scheduling, the run's order or the cache would fail.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from judge.accounting.rates import VERSION, Rate, UnreadableRates, fit, rate_path, read_rates, refined, write_rate
from judge.engine.cost import cost_lines
from judge.harness import load_experiment, plan, run_experiment
from judge.harness.cost import cost_estimate, cost_report
from judge.harness.runner import applicable
from tests.conftest import FIXED_RATE

ROOT = Path(__file__).resolve().parents[1]

#: Two prompts of one family and the reply-alone view of one of them (scheduled together, sharing each
#: item's preamble and conversation), a likelihood method (a cell of its own: one request per system turn,
#: each reply appended in batches), on two sets one after the other with the model kept loaded.
#: ``n_batch = 32`` makes prompts of a few dozen tokens reuse whole batches, as 512-token batches do on
#: long prompts.
_METHODS = """
[defaults]
options = { n_batch = 32 }
generate = { threads = 2, cache_path = "CACHE" }
[[methods]]
name = "yesno-criteria"
prompt = "yesno-criteria"
[[methods]]
name = "rating-criteria-shared"
prompt = "rating-criteria-shared"
rule = "expected"
[[methods]]
name = "lik"
type = "likelihood"
signal = "conditional"
[[methods]]
name = "alone"
prompt = "yesno-criteria"
context = "none"
"""


def _config(tmp: Path, cache: Path, limit: int = 2, sets: str = '"DGR", "FT"', methods: str = _METHODS) -> Path:
    path = tmp / f"cost-{limit}.toml"
    path.write_text(f'name = "cost"\nlimit = {limit}\ndatasets = [{sets}]\n' + methods.replace("CACHE", str(cache)))
    return path


def _fixed(spec) -> Rate:
    return FIXED_RATE


def _estimate(config: Path, data_dir: Path, out: Path) -> tuple[list[str], int]:
    """The ``--check`` table and the decodes it counted."""
    exp = load_experiment(config).with_overrides(data_dir=str(data_dir), output=str(out))
    prepared, _ = applicable(plan(exp), exp)
    cells, rates = cost_estimate(exp, prepared, lambda msg: None, measure=_fixed)
    return cost_lines(cells, rates), sum(c.decodes for c in cells)


def _report(config: Path, data_dir: Path, out: Path) -> list[str]:
    return _estimate(config, data_dir, out)[0]


def _cells(lines: list[str]) -> dict[str, tuple[int, int, str, str]]:
    """label -> (items, cached, tokens, time) from the table's cell lines."""
    out = {}
    for line in lines[1:-1]:
        m = re.match(r"(.+?)\s+([\d,]+)\s+([\d,]+)\s+(\S+(?: \([^)]*\))?)\s+(\S+(?: \S+)?)$", line)
        assert m, line
        out[m[1]] = (int(m[2].replace(",", "")), int(m[3].replace(",", "")), m[4], m[5])
    return out


def _total_tokens(lines: list[str]) -> int:
    m = re.match(r"total: ([\d,]+) items, ([\d,]+) prompt tokens", lines[-1])
    assert m, lines[-1]
    return int(m[2].replace(",", ""))


@pytest.mark.slow  # real SmolLM2 end to end: 15-25 s, kept out of the README's 10-minute command
def test_predicted_tokens_are_what_a_real_run_evaluates(tmp_path, data_dir):
    cache = tmp_path / "cache.sqlite"
    config, out = _config(tmp_path, cache), tmp_path / "out"
    before, decodes = _estimate(config, data_dir, out)
    assert not cache.exists(), "--check writes no cache entry"
    cells = _cells(before)
    assert len(cells) == 8 and all(cached == 0 for _, cached, _, _ in cells.values()), before
    predicted = _total_tokens(before)
    summary = run_experiment(load_experiment(config).with_overrides(data_dir=str(data_dir), output=str(out)),
                             progress=False, plots=False, log=lambda m: None).to_dict()
    assert predicted == summary["counters"]["tokens_evaluated"]
    assert decodes == summary["counters"]["decodes"] > 0  # the decodes too: each has a fixed cost: the prompts' full lengths add up to more than what the run evaluated.
    full = sum(r["n_prompt_tokens"] for p in (out / "items").rglob("*.jsonl") for r in map(json.loads, p.open())
               if r.get("n_prompt_tokens"))
    assert predicted < full
    # The time is 0.5 s per decode and 10 ms per token.
    seconds = 0.5 * decodes + 0.01 * predicted
    assert f"about {seconds / 60:.0f} min" in before[-1] or f"about {seconds:.0f} s" in before[-1], before[-1]
    assert (f", {predicted / seconds:,.0f} tokens/s at 500 ms per decode + 10.0 ms per token (rate measured "
            "2026-01-01 by a calibration, test, 2 threads)") in before[-1], before[-1]
    # After the run every answer is saved: nothing left to evaluate, every item counted as cached.
    after = _report(config, data_dir, out)
    assert _total_tokens(after) == 0
    assert all(cached == items and tokens == "0" for items, cached, tokens, _ in _cells(after).values()), after
    # A new results folder on the same cache: every answer comes from the cache.
    again = _report(config, data_dir, tmp_path / "out2")
    assert _total_tokens(again) == 0 and all(c == i for i, c, _, _ in _cells(again).values()), again


@pytest.mark.slow
def test_a_partly_cached_run_is_counted_as_the_run_goes(tmp_path, data_dir):
    """One item of each cell in the cache, two to score: the count is the tokens the run then evaluates."""
    cache = tmp_path / "cache.sqlite"
    pair = _METHODS.split("[[methods]]\nname = \"lik\"")[0]  # the two prompts of one family, on one set
    small = _config(tmp_path, cache, limit=1, sets='"DGR"', methods=pair)
    run_experiment(load_experiment(small).with_overrides(data_dir=str(data_dir), output=str(tmp_path / "a")),
                   progress=False, plots=False, log=lambda m: None)
    config = _config(tmp_path, cache, limit=2, sets='"DGR"', methods=pair)
    lines = _report(config, data_dir, tmp_path / "b")
    assert any(0 < cached < items for items, cached, _, _ in _cells(lines).values()), lines
    summary = run_experiment(load_experiment(config).with_overrides(data_dir=str(data_dir), output=str(tmp_path / "b")),
                             progress=False, plots=False, log=lambda m: None).to_dict()
    assert _total_tokens(lines) == summary["counters"]["tokens_evaluated"]


#: The two prompts of one family above, and an ensemble of them: ``--methods pair`` runs it alone.
_ENSEMBLE_ALONE = _METHODS.split("[[methods]]\nname = \"lik\"")[0] + """[[methods]]
name = "pair"
type = "ensemble"
members = ["yesno-criteria", "rating-criteria-shared"]
"""


@pytest.mark.slow
def test_an_ensemble_run_without_its_members_counts_what_it_scores(tmp_path, data_dir):
    """``--methods pair``: the ensemble alone scores its members itself, so its cell holds their tokens
    (not "in its members"), and the count is what the run then evaluates."""
    config = _config(tmp_path, tmp_path / "cache.sqlite", limit=2, sets='"DGR"', methods=_ENSEMBLE_ALONE)
    exp = load_experiment(config).with_overrides(data_dir=str(data_dir), output=str(tmp_path / "out"), methods=["pair"])
    prepared, _ = applicable(plan(exp), exp)
    lines = cost_report(exp, prepared, lambda msg: None, measure=_fixed)
    (_, cached, tokens, _), = _cells(lines).values()
    assert cached == 0 and int(tokens.replace(",", "")) > 0, lines
    summary = run_experiment(exp, progress=False, plots=False, log=lambda m: None).to_dict()
    assert _total_tokens(lines) == summary["counters"]["tokens_evaluated"]


def _check(config: Path, data_dir: Path, env: dict[str, str], *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "judge", "run", str(config), "--data-dir", str(data_dir), "--check",
                           *more], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.long  # real SmolLM2 end to end: 15-25 s
def test_rate_file_is_measured_once_refreshed_by_runs_and_remeasured_when_corrupt(tmp_path, data_dir, monkeypatch):
    import os

    where = tmp_path / "elsewhere"
    monkeypatch.setenv("JUDGE_CACHE", str(where / "my-cache.sqlite"))
    rates = where / "rates.json"
    assert rate_path() == rates  # beside the user's cache
    config = tmp_path / "one.toml"
    config.write_text('name = "one"\nlimit = 2\ndatasets = ["DGR"]\n[[methods]]\nname = "y"\nprompt = "yesno-criteria"\n'
                      'generate = { threads = 2 }\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = _check(config, data_dir, env)
    assert first.returncode == 0, first.stderr
    assert "calibrating" in first.stderr
    (key, rate), = read_rates(rates).items()
    assert rate.how == "calibration" and rate.tokens >= 200 and rate.decodes == 2 and rate.threads == 2
    assert rate.per_token > 0 and rate.per_decode >= 0 and rate.seconds > 0
    assert re.search(r"^total: 2 items, [\d,]+ prompt tokens, about \d+ s, [\d,]+ tokens/s at \d+ ms per decode "
                     r"\+ [\d.]+ ms per token \(rate measured \d{4}-\d\d-\d\d by a calibration, "
                     r"smollm2-135m-instruct, 2 threads\)$", first.stdout, re.M), first.stdout
    second = _check(config, data_dir, env)
    assert "calibrating" not in second.stderr and read_rates(rates)[key] == rate  # measured once
    # A real run's tokens over its model time replace the calibration.
    exp = load_experiment(config).with_overrides(data_dir=str(data_dir), output=str(tmp_path / "out"), limit=4)
    summary = run_experiment(exp, progress=False, plots=False, log=lambda m: None).to_dict()
    refreshed = read_rates(rates)[key]
    counters = summary["counters"]
    assert refreshed.how == "run" and (refreshed.tokens, refreshed.decodes) == (counters["tokens_evaluated"],
                                                                              counters["decodes"])
    # The run's time, split between decodes and tokens as the calibration split it.
    assert refreshed.time(refreshed.tokens, refreshed.decodes) == pytest.approx(refreshed.seconds, rel=1e-4)
    if rate.per_decode > 0:
        assert refreshed.per_token / refreshed.per_decode == pytest.approx(rate.per_token / rate.per_decode, rel=1e-3)
    # A corrupt file is said to be unreadable, measured again and written whole (items the run has not
    # scored yet need a rate).
    rates.write_text("{not json")
    third = _check(config, data_dir, env, "--limit", "6")
    assert third.returncode == 0, third.stderr
    assert f"{rates}: unreadable rate file" in third.stderr and "calibrating" in third.stderr
    assert read_rates(rates)[key].how == "calibration"


def test_mock_and_hosted_backends_give_no_guess(tmp_path, data_dir, capsys):
    from judge.cli import main

    config = tmp_path / "b.toml"
    config.write_text('name = "b"\nlimit = 2\ndatasets = ["DGR"]\n[[methods]]\nname = "m"\nprompt = "yesno-criteria"\n'
                      'backend = "mock"\n[[methods]]\nname = "api"\nprompt = "yesno-criteria"\nbackend = "openai"\n'
                      'model = "gpt-4o-mini"\n')
    assert main(["run", str(config), "--data-dir", str(data_dir), "--check"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^m DGR \S+\s+2\s+0\s+\? \(no model\)\s+0 s$", out, re.M), out
    assert re.search(r"^api DGR \S+\s+2\s+0\s+n/a \(hosted API\)\s+n/a$", out, re.M), out
    assert re.search(r"^total: 4 items, 0 prompt tokens \(cells marked n/a not included\)$", out, re.M), out


@pytest.mark.parametrize("command", ["score", "bench"])
@pytest.mark.slow
def test_score_and_bench_check_print_the_cost_and_score_nothing(tmp_path, data_dir, command, capsys):
    from judge.cli import main

    cache = tmp_path / "c.sqlite"
    args = ["examples/dialogues.jsonl"] if command == "score" else ["--dataset", "DGR", "--data-dir", str(data_dir)]
    assert main([command, *args, "--limit", "3", "--threads", "2", "--cache-path", str(cache), "--check"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^total: 3 items, [1-9][\d,]* prompt tokens, about", out, re.M), out
    assert not cache.exists()  # nothing scored, nothing cached


def test_documented_check_command_prints_the_documented_counts(tmp_path, data_dir):
    """docs/harness.md, "What a run will cost": its config and command, run as written from an empty cache,
    print the documented table; the token counts are exact, only the times depend on the machine."""
    import os

    text = (ROOT / "docs" / "harness.md").read_text(encoding="utf-8")
    section = text.split("## What a run will cost", 1)[1].split("\n## ", 1)[0]
    toml = re.search(r"```toml\n# cost.toml\n(.*?)```", section, re.S)
    shown = re.search(r"```\n\$ (judge run cost.toml [^\n]*)\n\.\.\.\n(.*?)```", section, re.S)
    assert toml and shown, "the section shows a config and a command with its output"
    (tmp_path / "cost.toml").write_text(toml[1])
    command = shown[1].replace("../shared/data", str(data_dir)).split()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JUDGE_CACHE": str(tmp_path / "cache" / "cache.sqlite")}
    # An empty cache, but the rates this session measured already (calibrating SmolLM2 again took 25 s).
    (tmp_path / "cache").mkdir()
    if rate_path().exists():
        shutil.copy(rate_path(), tmp_path / "cache" / rate_path().name)
    proc = subprocess.run([sys.executable, "-m", "judge", *command[1:]], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    printed = proc.stdout.splitlines()
    expected = shown[2].rstrip("\n").splitlines()
    got = printed[printed.index(expected[0]):]
    assert len(got) == len(expected), proc.stdout
    assert _cells(got).keys() == _cells(expected).keys()
    for label, (items, cached, tokens, _) in _cells(expected).items():
        assert _cells(got)[label][:3] == (items, cached, tokens), (label, proc.stdout)
    assert _total_tokens(got) == _total_tokens(expected)
    assert re.sub(r"about .*", "", got[-1]) == re.sub(r"about .*", "", expected[-1])


def test_two_calibration_points_fit_the_cost_of_a_decode_and_of_a_token():
    # 0.3 s per decode + 7 ms per token, measured at 20 and 265 tokens.
    rate = fit("m", 2, (20, 0.3 + 20 * 0.007), (265, 0.3 + 265 * 0.007))
    assert rate.per_decode == pytest.approx(0.3) and rate.per_token == pytest.approx(0.007)
    assert (rate.how, rate.tokens, rate.decodes) == ("calibration", 285, 2)
    # Ten 100-token decodes take longer than one 1000-token decode: what a tokens-only rate missed.
    assert rate.time(1000, 10) == pytest.approx(10 * 0.3 + 7.0) and rate.time(1000, 1) == pytest.approx(7.3)
    # Noise that puts the short batch below the line through zero: no negative part.
    noisy = fit("m", 2, (20, 0.05), (265, 2.0))
    assert noisy.per_decode == 0 and noisy.per_token == pytest.approx(2.0 / 265)


def test_a_run_scales_the_calibrated_rate_to_what_it_took():
    calibrated = Rate("m", 2, 0.3, 0.007, "2026-01-01", "calibration", 285, 2, 2.6)
    # The run took 1.5x what the calibration predicts for its tokens and decodes.
    run = refined(calibrated, "m", 2, 10_000, 100, 1.5 * calibrated.time(10_000, 100))
    assert (run.how, run.tokens, run.decodes) == ("run", 10_000, 100)
    assert run.per_decode == pytest.approx(0.45) and run.per_token == pytest.approx(0.0105)
    # No calibration before it: the run's time is all per token.
    alone = refined(None, "m", 2, 10_000, 100, 50.0)
    assert alone.per_decode == 0 and alone.per_token == pytest.approx(0.005)


def test_a_rate_file_of_the_old_layout_is_measured_again(tmp_path):
    path = tmp_path / "rates.json"
    path.write_text(json.dumps({"version": 1, "rates": {"k": {"model": "m", "threads": 2, "tokens": 442,
                                                              "seconds": 1.4, "measured": "2026-11-28", "how": "run"}}}))
    with pytest.raises(UnreadableRates, match=f"layout version 1, this judge reads version {VERSION}"):
        read_rates(path)
    write_rate("k", _fixed(None), path)  # replaced whole
    assert read_rates(path) == {"k": _fixed(None)}
