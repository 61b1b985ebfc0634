"""Every experiment config shipped in benchmarks/configs/ runs end to end, as a user runs it.

`judge run CONFIG --data-dir ../shared/data --limit N` in a subprocess with the real SmolLM2; then the
leaderboard must hold a number in every applicable cell. A cell is applicable unless the run lists it
as not run (a classic scorer lacking an input on that set) or its correlation is undefined because the
sampled human ratings are all equal (then the test checks that this is the reason). Table 5 runs on all
eight sets, every method, on the mock backend (`--backend mock`): its 19 cells are selectors and k-shot
prompts of up to 12 examples, and with SmolLM2 they took 13 minutes of CI on one set alone. Its selectors,
k-shot prompts and window fitting run with the real model in tests/test_selectors.py, and Tables 3 and 4
run their k-shot FED prompts with it here.

The CPU leaderboard and its Qwen-1.5B rounds (`cpu_leaderboard*.toml`: 40 and 36 methods, most of them
ensembles over the same prompts) also run on the mock backend: what they check here is the config, the
split, every ensemble fit and paired comparison, and the reports, which is harness logic. Their prompts
run with a real model elsewhere: `cpu_leaderboard_dev.toml` below runs yes/no, criteria and rating and
their ensembles with the packaged Qwen-0.5B, Table 6 the 4-shot BM25 prompts with SmolLM2, and
tests/test_likelihood.py, test_followups.py, test_listwise.py and test_ensemble.py each keep a SmolLM2
end-to-end test of their method type. With SmolLM2 these configs took about 15 minutes of CI.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judge.records.results import cell_path
from judge.stats.floor import MIN_CONVERSATIONS

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted((ROOT / "benchmarks" / "configs").glob("*.toml"))

#: Extra arguments per config: a limit that keeps every correlation defined and CI time bounded.
ARGS = {
    # DGU has references, FED-Dial next user turns: every scorer runs on one of them at least (21 cells).
    # Each scorer's own tests (tests/test_classic*.py) run it on real items; all eight sets took 315 s.
    "classic.toml": ["--limit", "5", "--datasets", "DGU,FD"],
    # The CPU leaderboard runs the Qwen models (the benchmark measures them; tests/test_models.py runs
    # the packaged Qwen): here every LLM method runs on the embedded SmolLM2, so each ensemble and the
    # dev/test split run end to end at a third of the 0.5B's CI time.
    "cpu_leaderboard.toml": ["--limit", "5", "--datasets", "DGU,FD", "--backend", "mock"],
    "cpu_leaderboard_dev.toml": ["--limit", "5", "--datasets", "DGU"],
    # DGU has references and FED-Dial next user turns: every classic member of the third round runs.
    "cpu_leaderboard_dev_q15.toml": ["--limit", "5", "--datasets", "DGU,FD", "--backend", "mock"],
    # Round 4 (likelihood methods): every method on two sets with the embedded SmolLM2; the Qwen-1.5B
    # numbers are the benchmark's, and its test-half file runs on Qwen once, for the dev choice.
    "cpu_leaderboard_dev_q15_r4.toml": ["--limit", "5", "--datasets", "DGU,FD", "--backend", "mock"],
    # A round's test-half config holds its dev config's methods (tests/test_round_configs.py checks it):
    # the dev config runs them on SmolLM2 just above, the test one runs its split and paired comparisons
    # on the mock backend, which answers every capability (labels and per-token log-probabilities).
    "cpu_leaderboard_q15_r4_test.toml": ["--limit", "5", "--datasets", "DGU,FD", "--backend", "mock"],
    # Round 5 (contrasts with the reply alone): DGU's turns and FED-Dial's system turns without the user's.
    "cpu_leaderboard_dev_q15_r5.toml": ["--limit", "4", "--datasets", "DGU,FD", "--backend", "mock"],
    "cpu_leaderboard_q15_r5_test.toml": ["--limit", "4", "--datasets", "DGU,FD", "--backend", "mock"],
    "cpu_leaderboard_dev_q15_r6.toml": ["--limit", "4", "--datasets", "DGU,FD", "--backend", "mock"],
    "cpu_leaderboard_q15_r6_test.toml": ["--limit", "4", "--datasets", "DGU,FD", "--backend", "mock"],
    "cpu_leaderboard_dev_q15_r7.toml": ["--limit", "4", "--datasets", "DGU,FD", "--backend", "mock"],
    "cpu_leaderboard_q15_r7_test.toml": ["--limit", "4", "--datasets", "DGU,FD", "--backend", "mock"],
    "dstc10_zeroshot.toml": ["--limit", "6"],
    # The new sets' Qwen-1.5B configs: harness logic on the mock backend (the criteria prompt runs on both sets
    # with SmolLM2 in tests/test_set_reliable_eval.py, and so does the system-level table of a mock run).
    "engagement_q15_test.toml": ["--limit", "12", "--backend", "mock"],
    "reliable_eval_q15_test.toml": ["--limit", "12", "--datasets", "RE1", "--backend", "mock"],
    # The head round's test reading with the real Qwen-1.5B and the committed heads, on the two sets
    # with the shortest prompts (each set's head never saw it: the run refuses one that did).
    "heads_q15_test.toml": ["--limit", "4", "--datasets", "DGR,EG"],
    "heads_q15_dev.toml": ["--limit", "3", "--datasets", "DGR"],
    # Round 11's test reading: the same path with a third method, heads that also learned from the new families.
    "heads_q15_families_test.toml": ["--limit", "4", "--datasets", "DGR,EG"],
    # Round 9 (pairwise cells): the config's pairs of one set with two systems per context, on the mock
    # backend (harness logic: pairs, both orders, the pointwise rows beside, the reports); the pairwise
    # judge runs with SmolLM2 in tests/test_pairwise.py.
    "pairwise_dev_q15.toml": ["--datasets", "DGR", "--backend", "mock"],
    # Its test reading: the chosen cell of the dev file above on the test half (tests/test_pairwise.py checks
    # that it is the dev choice), the same harness path.
    "pairwise_test_q15.toml": ["--datasets", "DGR", "--backend", "mock"],
    # The response-pair sets' judge (tests/test_set_pairs.py runs judge compare on them with SmolLM2): the smallest
    # LLMBar set on the mock backend, its labels table with the paper's judges beside.
    "pairsets_q15.toml": ["--datasets", "LBGO", "--backend", "mock"],
    # The runs behind docs/results.md: DGU has references, FED-Dial next user turns; SmolLM2 is embedded.
    "results_test.toml": ["--limit", "5", "--datasets", "DGU,FD"],
    # The reasoning measurement (a 128-token rationale with Qwen-1.5B): its harness logic on the mock backend;
    # the llama.cpp path runs with SmolLM2 in tests/test_reasoning_llamacpp.py.
    "reason_q15_dev.toml": ["--limit", "4", "--datasets", "DZ,FT", "--backend", "mock"],
    "table3_fed_turn.toml": ["--limit", "6"],
    # Three dialogs (of 3-shot prompts holding four whole dialogs each, in 11 qualities): one quality,
    # Consistent, has equal human ratings on them, within the 10% of undefined cells allowed below.
    "table4_fed_dial.toml": ["--limit", "3"],
    "table5_selection.toml": ["--limit", "4", "--backend", "mock"],
    # The four sets with the shortest 4-shot prompts (all eight took 300 s of CI); the others run in Table 5.
    "table6_models.toml": ["--limit", "5", "--datasets", "DZ,DGR,EG,FT"],
}


def test_every_shipped_config_is_listed_here():
    assert sorted(p.name for p in CONFIGS) == sorted(ARGS)
    assert {p.stem for p in CONFIGS} >= LONG


@pytest.mark.parametrize("config", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_shipped_config_checks_against_its_data(config: Path, data_dir: Path, monkeypatch, capsys, fixed_rate):
    """The fast part of every config, in the README's command: it parses, and each cell of the same run as
    below is validated against its data (templates, manual sets, scales) without loading a model. The
    runs themselves are ``slow`` (27 minutes together): CI runs those not in ``LONG`` after the README's command. Each
    config's own ``data_dir`` is where the data README puts the files (../shared/data, beside the
    repository), so where the data is there the check runs from the repository without --data-dir."""
    from judge.cli import main
    from judge.harness import load_experiment

    assert load_experiment(config).data_dir == "../shared/data"
    where = [] if data_dir.resolve() == (ROOT.parent / "shared" / "data").resolve() else ["--data-dir", str(data_dir)]
    monkeypatch.chdir(ROOT)
    assert main(["run", str(config), "--check", *where, *ARGS[config.name]]) == 0
    assert " cells, " in capsys.readouterr().err


#: The runs CI leaves to `pytest -m long` (with SmolLM2 they took 12 minutes of it: Table 3 alone 228 s): each has
#: a path CI takes elsewhere (k-shot FED prompts in tests/test_selectors.py, every classic
#: scorer in tests/test_classic*.py, the zero-shot grid on the cluster in tests/test_ray.py, the heads in
#: tests/test_shipped_heads.py and heads_q15_dev here, the largest mock grids in their later rounds' configs, the
#: results runs in cpu_leaderboard_dev's, round 9's test reading in its dev file); the other mock-backend configs and one of each real-model kind stay.
LONG = {"classic", "dstc10_zeroshot", "heads_q15_test", "heads_q15_families_test", "table3_fed_turn", "table4_fed_dial", "table6_models",
        "cpu_leaderboard", "cpu_leaderboard_dev_q15", "table5_selection", "results_test", "pairwise_test_q15"}


@pytest.mark.slow
@pytest.mark.parametrize("config", [pytest.param(p, id=p.stem, marks=pytest.mark.long if p.stem in LONG else ())
                                    for p in CONFIGS])
def test_shipped_config_runs_end_to_end(config: Path, tmp_path: Path, data_dir: Path):
    out = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, "-m", "judge", "run", str(config), "--data-dir", str(data_dir), "-o", str(out),
         "--threads", "2", "--no-progress", *ARGS[config.name]],
        cwd=ROOT, env={**os.environ}, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    board = (out / "leaderboard.md").read_text()
    assert summary["results"] or summary.get("pairwise"), "no cell ran"
    for entry in summary.get("pairwise", []):  # [[compare]] cells: every pair compared, its figures reported
        assert entry["n_pairs"] > 0 and entry["n_failed"] == 0, entry["name"]
        assert entry["win_rates"] and entry["ranking"] and entry["position"]["bias"]["value"] is not None
        assert f"| {entry['name']} | {entry['abbrev']} |" in board
    skipped = {(s["method"], s["dataset"], s["quality"]) for s in summary.get("skipped", [])}
    undefined = []
    for r in summary["results"]:
        key = (r["method"], r["dataset"], r["quality"])
        assert key not in skipped
        assert r["n_failed"] == 0, (key, r)
        if r["spearman"] is None or not math.isfinite(r["spearman"]):
            undefined.append(key)
            continue
        assert -1.0 <= r["spearman"] <= 1.0 and r["n"] >= 3
        if r["ci"].get("too_few"):  # a few items of few conversations: below the floor, no interval and no p
            assert r["ci"]["n_units"] < MIN_CONVERSATIONS and r["ci"]["low"] is None and r["p"] is None
        else:
            assert r["ci"]["low"] is not None and r["p"] is not None
    for method, dataset, quality in undefined:
        # Only acceptable reason: the sampled items' human ratings are all equal (no ranking to correlate).
        seed = summary["methods"][method].get("seeds", [0])[0] if summary["methods"][method]["type"] == "llm" else 0
        cell = cell_path(out, method, dataset, quality, seed)
        humans = {json.loads(x)["human"] for x in cell.read_text().splitlines()}
        assert len(humans) == 1, (method, dataset, quality, humans)
    assert len(undefined) <= len(summary["results"]) // 10, undefined
    # Every method of the config is a leaderboard row.
    for method in summary["methods"]:
        assert f"| {method} |" in board
