"""The benchmark scripts run as their README documents them (smallest sizes, the embedded model)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_every_benchmark_script_imports_what_it_uses(monkeypatch):
    """Each script's imports resolve (module moves show here, in the README's command, though the runs that time
    a model are ``long``); loading one runs nothing (each keeps its work behind ``__main__``)."""
    scripts = sorted((ROOT / "benchmarks").glob("*.py"))
    assert len(scripts) >= 20
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # as when run: the script's folder first
    for path in scripts:
        spec = importlib.util.spec_from_file_location(f"benchmark_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


@pytest.mark.long  # 13-25 s of real-model work
def test_long_prompts_compares_llama_cpp_settings_on_the_same_items(data_dir):
    """Two timed DailyDialog-Zhao items, 1-shot, SmolLM2: the defaults against flash attention in ABBA
    order; the table has a ratio per setting (1.00x for the baseline) and the largest score difference
    from the first baseline pass (none between the two baseline passes: llama.cpp is deterministic)."""
    proc = subprocess.run([sys.executable, "benchmarks/long_prompts.py", "--data-dir", str(data_dir), "--dataset", "DZ",
                           "--items", "2", "--k", "1"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert sum(line.strip().startswith("pass ") for line in lines) == 4
    table = {line.split()[0]: line.split() for line in lines if line.startswith(("defaults", "flash_attn=true"))}
    assert table["defaults"][3] == "1.00x" and table["flash_attn=true"][3].endswith("x")
    # The same answers up to llama.cpp's numerics: flash attention moves a probability by a few hundredths.
    assert float(table["defaults"][4]) == 0.0 and float(table["flash_attn=true"][4]) < 0.1


@pytest.mark.long
def test_prefix_share_measures_families_against_one_prompt_and_raw_llama_cpp(data_dir):
    """The smallest run of benchmarks/prefix_share.py: every pass prints its row, the ratios are against
    the same run's baseline, and the scheduled runs' cell files equal the one-by-one runs' byte for byte
    (the exit status may say a target was missed: one item per set is too few for the ratios). One item:
    the one-by-one passes are 15 runs of their own, and the order of several items in a window is
    tests/test_schedule.py's."""
    proc = subprocess.run([sys.executable, "benchmarks/prefix_share.py", "--data-dir", str(data_dir), "--items", "1",
                           "--fed-items", "1"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode in (0, 1), proc.stderr
    out = proc.stdout
    for label in ("criteria-1 ", "criteria-6 ", "criteria-6-published ", "criteria-6-each", "fedq-1 ", "fedq-9 ",
                  "fedq-9-each", "criteria-1 again"):
        assert any(line.startswith(label) for line in out.splitlines()), (label, out)
    assert "raw llama.cpp:" in out and out.count("target: ") == 4
    assert "with the published rating-criteria for the sixth" in out
    assert "rows: criteria-6 vs criteria-6-each: 6 rows, cell files byte-identical: True" in out, out
    assert "rows: fedq-9 vs fedq-9-each: 9 rows, cell files byte-identical: True" in out, out


@pytest.mark.long
def test_prefix_share_runs_one_family_alone(data_dir):
    """`--family criteria` (benchmarks/README.md) runs the criteria passes only: no FED-Turn pass, and the
    targets it prints are the criteria family's and the ones of its scheduled pass; a `--variant` reruns
    the six criteria prompts with a llama.cpp option and compares (the full run above leaves it out)."""
    proc = subprocess.run([sys.executable, "benchmarks/prefix_share.py", "--data-dir", str(data_dir), "--items", "1",
                           "--family", "criteria", "--skip-each", "--variant", "flash_attn=true"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    out = proc.stdout
    assert "FED-Turn" not in out and not any(line.startswith("fedq") for line in out.splitlines()), out
    assert any(line.startswith("criteria-6-published ") for line in out.splitlines()), out
    assert out.count("target: ") == 3 and "target: criteria family, 6 prompts vs 1" in out, out
    assert any(line.startswith("criteria-6 flash_attn=true") for line in out.splitlines()), out
    assert "variant flash_attn=true:" in out


@pytest.mark.long
def test_instruction_prefix_times_the_split_criteria_prompt_against_the_unsplit_one(data_dir):
    """Two items of DailyDialog-Zhao and of Topical-USR, SmolLM2, ABBA: a row per set and side with its
    ratio against the unsplit side of the same run, fewer tokens evaluated with the split, the two passes
    of each side equal bit for bit, and the target line (two items are too few for the ratio: the exit
    status may say it was missed)."""
    proc = subprocess.run([sys.executable, "benchmarks/instruction_prefix.py", "--data-dir", str(data_dir),
                           "--items", "2"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    out = proc.stdout
    rows = {tuple(line.split()[:2]): line.split() for line in out.splitlines() if line.startswith(("DZ ", "TU "))}
    assert set(rows) == {("DZ", "off"), ("DZ", "on"), ("TU", "off"), ("TU", "on")}, out
    for name in ("DZ", "TU"):
        off, on = rows[(name, "off")], rows[(name, "on")]
        assert off[8] == "1.00x" and on[8].endswith("x"), out
        assert int(on[5]) == int(off[5]) and int(on[6]) < int(off[6]), out  # same prompts, fewer tokens run
        assert f"{name}: on vs off:" in out
    assert out.count("passes of one side bit-identical: True") == 2, out
    assert "target: DZ items/s with the split vs without:" in out, out


@pytest.mark.long
def test_leaderboard_schedule_times_one_by_one_against_scheduled_and_checks_the_estimate(data_dir):
    """One FED-Dial and one DailyDialog-Zhao item, SmolLM2's four zero-shot prompts of the CPU leaderboard:
    both passes print a row, they write the same rows, ``--check`` counted exactly the tokens and decodes
    the scheduled run evaluated, and the full run's estimate is printed (one item per set is too few for the
    time estimate: the exit status may say it missed)."""
    proc = subprocess.run([sys.executable, "benchmarks/leaderboard_schedule.py", "--data-dir", str(data_dir),
                           "--model", "smollm2-135m-instruct", "--items", "1", "--datasets", "DZ,FD"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode in (0, 1), proc.stderr
    out = proc.stdout
    assert "4 zero-shot methods (smollm2-yesno, smollm2-rating-exp, smollm2-criteria, smollm2-relevant)" in out, out
    rows = {cols[0]: cols for cols in map(str.split, out.splitlines())
            if len(cols) > 1 and cols[0] in ("each", "scheduled") and cols[1].isdigit()}
    assert set(rows) == {"each", "scheduled"} and rows["each"][1] == rows["scheduled"][1] == "8", out
    assert int(rows["scheduled"][5]) < int(rows["each"][5]), out  # the criteria family shares its instructions
    check = re.search(r"--check before the scheduled run: (\d+) tokens in (\d+) decodes, .* measured (\d+) tokens in "
                      r"(\d+) decodes", out)
    assert check and check.group(1) == check.group(3) == rows["scheduled"][5], out
    assert check.group(2) == check.group(4) == rows["scheduled"][6] and int(check.group(2)) > 0, out  # decodes too
    assert re.search(r"--check for the full run: 1044 item scorings, \d+ tokens in \d+ decodes, about [\d.]+ h at "
                     r"\d+ ms per decode \+ [\d.]+ ms per token", out), out
    assert "rows: scheduled equal one by one: True (8 rows)" in out, out


@pytest.mark.slow
def test_head_cost_times_the_hidden_state_against_the_answer_alone(data_dir):
    """Two DailyDialog-Zhao items with SmolLM2, once each way: the hidden side read a vector per item,
    evaluated the same tokens, and gave the same answers bit for bit (two items are too few for the
    time target: the exit status may say it was missed)."""
    proc = subprocess.run([sys.executable, "benchmarks/head_cost.py", "--data-dir", str(data_dir), "--items", "2",
                           "--once"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    rows = {line.split()[0]: line.split() for line in proc.stdout.splitlines() if line.startswith(("answer ", "hidden "))}
    assert set(rows) == {"answer", "hidden"}, proc.stdout
    assert rows["answer"][4] == rows["hidden"][4] and rows["answer"][5] == "0" and rows["hidden"][5] == "2", proc.stdout
    assert "cost per item, hidden state read vs answer alone: " in proc.stdout
    assert "answers identical on both sides: True" in proc.stdout


@pytest.mark.long  # the token-by-token side is what the benchmark shows to be slow
def test_likelihood_speed_times_batched_replies_against_token_by_token(data_dir):
    """Three FED-Dial dialogs, SmolLM2: both sides print a row, the speed-up is a ratio of the same run, and
    the two sides' answers agree up to llama.cpp's kernels (a row read for the wrong position would
    differ by nats)."""
    proc = subprocess.run([sys.executable, "benchmarks/likelihood_speed.py", "--data-dir", str(data_dir), "--limit", "3"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    lines = {line.split()[0]: line for line in proc.stdout.splitlines() if line.strip()}
    assert "items/s" in lines["batched"] and "items/s" in lines["token-by-token"], proc.stdout
    assert float(lines["speed-up"].split(":")[1].strip().rstrip("x")) > 0
    token_max = float(lines["per-token"].split("max ")[1].split(",")[0])
    pmi_line = next(x for x in proc.stdout.splitlines() if "per-item PMI |difference|" in x)
    ranks = next(x for x in proc.stdout.splitlines() if "per-item PMI ranks" in x)
    pmi_mean = float(pmi_line.split("mean ")[1])
    assert token_max < 1.0 and pmi_mean < 0.1, proc.stdout
    assert float(ranks.split("between the sides ")[1].split(";")[0]) >= 0.5, ranks  # 3 items: an adjacent swap at most
    assert "with human Overall: batched " in ranks and "(n=3)" in ranks, ranks


@pytest.mark.slow  # SmolLM2 generating rationales on both sides
def test_reason_read_times_the_read_after_a_rationale_against_the_rationale_alone(data_dir):
    """Two DailyDialog items, 8-token rationales: both sides generate the same tokens and print a row; the
    ratio is of the same run."""
    proc = subprocess.run([sys.executable, "benchmarks/reason_read.py", "--data-dir", str(data_dir), "--limit", "2",
                           "--tokens", "8"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    lines = [line.split() for line in proc.stdout.splitlines()]
    rows = {parts[0]: parts for parts in lines if parts and parts[0] in ("rationale", "rationale+read")}
    assert set(rows) == {"rationale", "rationale+read"} and all("items/s" in r for r in rows.values()), proc.stdout
    assert "reason = 8: 16 tokens generated" in proc.stdout or "reason = 8:" in proc.stdout
    ratio = next(line for line in proc.stdout.splitlines() if "rationale+read / rationale" in line)
    assert float(ratio.split("= ")[1].split("x")[0]) > 0.5 and "peak RSS" in proc.stdout


@pytest.mark.slow
def test_reason_measure_reads_a_run_and_adds_the_sampled_candidate(tmp_path, data_dir):
    """The measurement's config on the mock backend (plumbing only: the numbers mean nothing), then the
    script: a row per candidate, the sampled one estimated from the exact one's rows."""
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "judge", "run", "benchmarks/configs/reason_q15_dev.toml", "--data-dir",
                          str(data_dir), "-o", str(out), "--backend", "mock", "--limit", "5", "--no-progress"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "JUDGE_CACHE": str(tmp_path / "cache.sqlite")})
    assert run.returncode == 0, run.stderr
    proc = subprocess.run([sys.executable, "benchmarks/reason_measure.py", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| `")]
    assert [r.split("`")[1] for r in rows] == ["q15-criteria", "q15-criteria-reason128", "q15-criteria-reason128-sampled5"]
    assert "], p " in rows[1] and "], p " in rows[2] and " + 0 |" in rows[0] and " + 0 |" not in rows[1]
    spec = importlib.util.spec_from_file_location("reason_measure", ROOT / "benchmarks" / "reason_measure.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    row = {"id": "x", "score": 0.9, "label_probs": {"yes": 0.6, "no": 0.2}, "error": None, "estimated": False}
    drawn = module.sampled(row)
    assert drawn == module.sampled(row) and drawn["estimated"] and sum(drawn["label_probs"].values()) <= 1
    assert module.sampled({**row, "label_probs": {"yes": 1.0, "no": 0.0}})["score"] == 1.0
    assert module.sampled({**row, "label_probs": {"yes": 0.0, "no": 0.0}})["score"] is None
    assert "Rationales whose first word is the answer (Yes or No): " in proc.stdout
    opened = module.answer_first({"DZ": [{"rationale": " Yes. The reply fits.", "label_probs": {"yes": 0.99, "no": 0.01}},
                                         {"rationale": "The reply, so: no.", "label_probs": {"yes": 0.4, "no": 0.6}}]})
    assert opened == {"opened": 1, "of": 2, "p_yes_low": 0.4, "p_yes_high": 0.99}
    # A mock run is never collected for publishing.
    refused = subprocess.run([sys.executable, "benchmarks/reason_measure.py", str(out), "--collect", "x", "--root",
                              str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0 and not (tmp_path / "benchmarks").exists()


@pytest.mark.slow
def test_classic_measure_runs_as_documented_and_matches_judge_bench(tmp_path, data_dir):
    """docs/classic.md's command on two sets with a 20-item limit: one row per set, each the Spearman
    `judge bench --scorer length --limit 20` gets on the same seeded subset (the rows it writes)."""
    import json

    from scipy.stats import spearmanr

    helped = subprocess.run([sys.executable, "benchmarks/classic_measure.py", "--help"], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert helped.returncode == 0 and "DATA_DIR" in helped.stdout and "--sets" in helped.stdout, helped.stderr
    out = tmp_path / "classic.jsonl"
    proc = subprocess.run([sys.executable, "benchmarks/classic_measure.py", str(data_dir), str(out),
                           '[["length", {}, 20]]', "--sets", "fed-turn,topical-usr"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    rows = {r["dataset"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert sorted(rows) == ["fed-turn", "topical-usr"]
    for dataset, row in rows.items():
        bench_out = tmp_path / f"{dataset}.jsonl"
        bench = subprocess.run([sys.executable, "-m", "judge", "bench", "--data-dir", str(data_dir), "--dataset", dataset,
                                "--scorer", "length", "--limit", "20", "-o", str(bench_out)],
                               cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert bench.returncode == 0, bench.stderr
        scored = [json.loads(line) for line in bench_out.read_text().splitlines()]
        assert row["n"] == len(scored) == 20 and row["failed"] == 0 and row["limit"] == 20
        expected = spearmanr([r["score"] for r in scored], [r["human"] for r in scored]).statistic
        assert row["spearman"] == pytest.approx(expected, abs=5e-4)


@pytest.mark.slow
def test_joint_bootstrap_prints_both_rules_and_the_widening(data_dir):
    proc = subprocess.run([sys.executable, "benchmarks/joint_bootstrap.py", "--data-dir", str(data_dir),
                           "--resamples", "300"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    alone, joint, last = proc.stdout.splitlines()
    assert alone.startswith("each set on its own") and joint.startswith("shared conversations together")
    assert "['fed-turn', 'fed-dial']" in last
    # Two sets sharing every test conversation count once: fewer units, and a wider spread.
    assert float(last.split("SD ratio ")[1].split()[0]) > 1


@pytest.mark.slow  # 9 s of timed runs against the fault server: kept out of the README's 10-minute command
def test_api_limits_paces_under_the_limit_that_the_same_concurrency_unpaced_meets():
    """The smallest run of benchmarks/api_limits.py: each mode's row, ratios against the best fixed
    concurrency of the same run, and the verdict line. The control, 16 in flight unpaced, meets the server's
    limit (27 to 30 429s here); adaptive pacing with the same 16 at most sends no request over it and fails no
    item. With pacing off the adaptive row is that control again and this fails. Which run is faster is
    printed, not asserted: on a shared host the wall times of a 2-second run are noise."""
    proc = subprocess.run([sys.executable, "benchmarks/api_limits.py", "--items", "120", "--rpm", "60",
                           "--time-scale", "30", "--fixed", "4", "16", "--concurrency", "16"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    row = r"^\s+{}\s+120\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+[\d.]+\s+[\d.]+\s+([\d.]+)x"
    fixed4, fixed16, adaptive = (re.search(row.format(re.escape(mode)), proc.stdout, re.M)
                                 for mode in ("fixed 4", "fixed 16", "adaptive (1..16)"))
    assert fixed4 and fixed16 and adaptive, proc.stdout
    assert fixed4[1] == fixed16[1] == "0", proc.stdout  # retried: every item scored
    assert int(fixed16[2]) >= 10, proc.stdout  # the limit bites at 16 in flight ...
    assert adaptive[1] == "0" and int(adaptive[2]) <= 2, proc.stdout  # ... and pacing keeps under it
    assert "1.00" in (fixed4[5], fixed16[5]), proc.stdout  # the best fixed concurrency is the ratios' base
    assert re.search(r"^target \(adaptive: 0 failed, at least as fast as the best fixed concurrency, fixed (4|16)\): "
                     r"(met|NOT met) \(\d+\.\d+ s vs \d+\.\d+ s, 0 failed\)$", proc.stdout, re.M), proc.stdout


@pytest.mark.slow  # four judge score processes and batches of 4 s against the fault server
def test_batch_kill_creates_one_batch_when_killed_twice():
    proc = subprocess.run([sys.executable, "benchmarks/batch_kill.py", "--items", "40", "--batch-seconds", "4"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "2nd pass: judge: attaching to 1 batch(es) submitted before (40 of the 40 requests)" in proc.stdout
    assert "3rd pass: judge: cache: 40 hits, 0 misses" in proc.stdout
    assert re.search(r"^batches created: 1; requests sent one by one: 0; rows scored by the 3rd pass: 40 of 40 "
                     r"\(the unkilled run: 40\)", proc.stdout, re.M), proc.stdout
    assert "target (killed twice while waiting: exactly 1 batch, every item scored): met" in proc.stdout


@pytest.mark.long
def test_pairwise_cost_times_both_orders_against_one_and_a_pointwise_item(data_dir):
    """One Topical-USR context with SmolLM2, each side once: every pass prints its row, both pairings print
    their ratios of the same run, and with one pair alone both orders evaluate far fewer than twice the
    tokens of one (the conversation is evaluated once)."""
    proc = subprocess.run([sys.executable, "benchmarks/pairwise_cost.py", "--data-dir", str(data_dir), "--contexts", "1",
                           "--once"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode in (0, 1), proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines() if line.startswith(("single ", "all "))]
    assert [(r[0], r[1]) for r in rows if r[1] in ("one", "both", "pointwise")] == [
        (p, s) for p in ("single", "all") for s in ("one", "both", "pointwise")], proc.stdout
    tokens = {(r[0], r[1]): int(r[5]) for r in rows if r[1] in ("one", "both", "pointwise")}
    assert tokens[("single", "both")] < 1.6 * tokens[("single", "one")], proc.stdout
    assert "single: both orders vs one, per pair: " in proc.stdout and "all: both orders vs one" in proc.stdout
    assert "target: both orders at most 1.6x one order per pair" in proc.stdout


def test_head_round_prints_round_11s_dev_table_as_the_journal_gives_it():
    """Round 11's dev reading comes from the two committed head files through the script, and the journal's
    table is that output (the rule's mean over the eight DSTC10 sets decides; the new sets choose nothing)."""
    dev = ROOT / "benchmarks" / "heads" / "round11-dev"
    proc = subprocess.run([sys.executable, "benchmarks/head_round.py", str(dev / "q15-dev-head-answer.json"),
                           str(dev / "q15-dev-head-families.json")], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| `")]
    assert len(rows) == 2 and rows[0].count("|") == rows[1].count("|") == 16
    journal = (ROOT / "docs" / "journal.md").read_text()
    for line in proc.stdout.splitlines():
        if line.startswith(("|", "rule:")):
            assert line in journal, line
    bad = subprocess.run([sys.executable, "benchmarks/head_round.py", str(dev / "q15-dev-head-answer.json"),
                          "--rule-sets", "topical-usr,reliable-eval-ice"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and "no held-out figure for reliable-eval-ice" in bad.stderr
    not_head = subprocess.run([sys.executable, "benchmarks/head_round.py", "README.md"], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
    assert not_head.returncode == 2 and "README.md: not a readable head file" in not_head.stderr
    one = subprocess.run([sys.executable, "benchmarks/head_round.py", str(dev / "q15-dev-head-answer.json")],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert one.returncode == 0 and "| `q15-dev-head-answer.json` |" in one.stdout and "rule:" not in one.stdout
