"""``judge gate``: pass, fail and inconclusive on constructed rows (paired and unpaired), the exit codes, the
Markdown table, human ratings beside the judge's, two groups of one file, results folders, and the same bytes
twice. The statistics' own rules are checked on known numbers."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from judge.cli import main
from judge.cli.gate import EXIT_FAIL, EXIT_INCONCLUSIVE
from judge.records.labels import Label
from judge.records.rows import Row
from judge.stats.gate import paired_delta, unpaired_delta, verdict

ROOT = Path(__file__).resolve().parents[1]


def row(id: str, score: float | None, *, group: str | None = None, human: float | None = None,
        quality: str | None = "overall", meta: dict | None = None) -> Row:
    return Row(id=id, method="m", seed=0, quality=quality, human=human, score=score, label_probs=None, examples=(),
               flags=(), estimated=False, complete=True, error=None if score is not None else "failed", system=None,
               group=group, n_prompt_tokens=1, meta=meta)


def write(path: Path, rows: list[Row]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(r.to_json() + "\n" for r in rows), encoding="utf-8")
    return path


def base_scores(n: int) -> list[float]:
    """Spread-out baseline scores, known and fixed."""
    return [0.3 + 0.4 * ((7 * i) % n) / n for i in range(n)]


def pair_files(tmp_path: Path, shifts: list[float], human: bool = False) -> tuple[Path, Path]:
    """Baseline and candidate rows of the same contexts (ids c0, c1, ...), the candidate's score shifted."""
    base = base_scores(len(shifts))
    b = [row(f"c{i}", s, group=f"conv{i}", human=3.0 if human else None) for i, s in enumerate(base)]
    c = [row(f"c{i}", s + d, group=f"conv{i}", human=(3.0 + d) if human else None)
         for i, (s, d) in enumerate(zip(base, shifts, strict=True))]
    return write(tmp_path / "base.jsonl", b), write(tmp_path / "cand.jsonl", c)


def gate(capsys, *args: object) -> tuple[int, str]:
    code = main(["gate", *map(str, args)])
    return code, capsys.readouterr().out


def refused(capsys, *args: object) -> str:
    """The error of a gate that must refuse its input (exit 2)."""
    assert main(["gate", *map(str, args)]) == 2
    return capsys.readouterr().err


# -- the statistics ------------------------------------------------------------------------------------------

def test_a_paired_delta_resamples_conversations_not_turns():
    base = [0.5] * 30
    cand = [0.5 + (0.1 if i % 2 else -0.1) for i in range(30)]
    convs = [f"k{i // 3}" for i in range(30)]  # ten conversations of three turns
    d = paired_delta(base, cand, convs, n_boot=500)
    assert d.paired and d.conversations == (10,) and d.n_baseline == 30
    assert math.isclose(d.delta, 0.0, abs_tol=1e-12) and d.low < 0 < d.high
    # Every conversation's turns move together: the same differences as one turn per conversation.
    alone = paired_delta(base, cand, [f"t{i}" for i in range(30)], n_boot=500)
    assert alone.conversations == (30,)


def test_the_resamples_are_the_cluster_bootstrap_of_the_statistics():
    """The means come from conversation sums, but over the very resamples the benchmarks' stratified bootstrap
    draws with the same seed (one set: the paired delta's; two sets: the unpaired one's two sides)."""
    import numpy as np

    from judge.stats.correlation import stratified_samples
    from judge.stats.gate import _cluster_means, part_seed

    values = np.array([0.1, 0.5, 0.2, 0.9, 0.4, 0.3, 0.8, 0.6, 0.7, 0.0])
    groups = ["a", "a", "b", "c", "c", "c", "d", "e", "f", "g"]
    samples, sizes = stratified_samples([(0, 10, groups, None), (1, 10, groups[::-1], None)], 200, 5)
    assert sizes == [7, 7]
    for part in (0, 1):
        g = groups if part == 0 else groups[::-1]
        expected = [values[idx].mean() for idx in samples[part]]
        assert np.allclose(_cluster_means(values, g, 200, part_seed(5, part)), expected, rtol=0, atol=1e-12)


def test_an_unpaired_delta_resamples_each_side_on_its_own():
    d = unpaired_delta([0.4, 0.5, 0.6] * 4, [f"a{i}" for i in range(12)], [0.6, 0.7, 0.8] * 3,
                       [f"b{i}" for i in range(9)], n_boot=500)
    assert not d.paired and d.conversations == (12, 9)
    assert math.isclose(d.delta, 0.2) and 0.05 < d.low < 0.2 < d.high < 0.35


def test_below_the_floor_there_is_no_interval_and_the_verdict_is_inconclusive():
    d = paired_delta([0.5] * 6, [0.9] * 6, [f"k{i}" for i in range(6)])
    assert d.too_few and not d.has_interval and verdict(d, 0.1) == "inconclusive"
    assert unpaired_delta([0.5] * 2, ["a", "b"], [0.5] * 2, ["c", "d"]).too_few


@pytest.mark.parametrize(("low", "high", "expected"), [(-0.05, 0.1, "pass"), (-0.0500000001, 0.1, "pass"),
                                                       (-0.2, -0.0501, "fail"), (-0.2, 0.0, "inconclusive"),
                                                       (-0.06, -0.05, "inconclusive")])
def test_the_verdict_reads_the_interval_against_the_tolerance(low, high, expected):
    d = paired_delta([0.0] * 8, [0.0] * 8, [f"k{i}" for i in range(8)])
    assert verdict(replace(d, low=low, high=high, conversations=(8,)), 0.05) == expected


# -- the command ---------------------------------------------------------------------------------------------

def test_paired_pass_fail_and_inconclusive_with_distinct_exit_codes(tmp_path, capsys):
    n = 20
    small = [0.01 * (1 if i % 2 else -1) for i in range(n)]
    b, c = pair_files(tmp_path, small)
    code, out = gate(capsys, b, c, "--max-drop", "0.05")
    assert code == 0 and "paired by context (20 shared contexts, 20 conversations" in out
    assert out.rstrip().endswith("verdict: pass (exit 0)")
    b, c = pair_files(tmp_path, [-0.2 + s for s in small])
    code, out = gate(capsys, b, c, "--max-drop", "0.05")
    assert code == EXIT_FAIL == 1 and "delta -0.200 [" in out and "verdict: fail (exit 1)" in out
    b, c = pair_files(tmp_path, [-0.05 + 10 * s for s in small])  # the interval straddles -0.05
    code, out = gate(capsys, b, c, "--max-drop", "0.05")
    assert code == EXIT_INCONCLUSIVE == 4 and "verdict: inconclusive (exit 4)" in out


def test_unpaired_when_the_sides_judged_other_conversations(tmp_path, capsys):
    b = write(tmp_path / "last_week.jsonl", [row(f"a{i}", s, group=f"a{i}") for i, s in enumerate(base_scores(15))])
    c = write(tmp_path / "this_week.jsonl",
              [row(f"b{i}", s + 0.1, group=f"b{i}") for i, s in enumerate(base_scores(12))])
    code, out = gate(capsys, b, c, "--max-drop", "0.05")
    assert code == 0 and "unpaired (15 baseline and 12 candidate conversations resampled independently)" in out
    worse = write(tmp_path / "worse.jsonl", [row(f"b{i}", s - 0.4, group=f"b{i}") for i, s in enumerate(base_scores(12))])
    assert gate(capsys, b, worse, "--max-drop", "0.05")[0] == EXIT_FAIL
    near = write(tmp_path / "near.jsonl", [row(f"b{i}", s - 0.05, group=f"b{i}") for i, s in enumerate(base_scores(12))])
    code, out = gate(capsys, b, near, "--max-drop", "0.05")
    assert code == EXIT_INCONCLUSIVE and "unpaired (15 baseline" in out and "delta -0.053 [-0.142, +0.028]" in out
    assert "share no context" in refused(capsys, b, c, "--max-drop", "0.05", "--pairing", "paired")


def test_too_few_conversations_is_inconclusive_and_says_so(tmp_path, capsys):
    b, c = pair_files(tmp_path, [0.3] * 5)
    code, out = gate(capsys, b, c, "--max-drop", "0.05")
    assert code == EXIT_INCONCLUSIVE and "delta +0.300 (too few conversations (5))" in out


def test_the_same_inputs_give_the_same_bytes(tmp_path, capsys):
    b, c = pair_files(tmp_path, [-0.05 + 0.1 * (1 if i % 3 else -1) for i in range(12)], human=True)
    runs = []
    for name in ("one.md", "two.md"):
        code, out = gate(capsys, b, c, "--max-drop", "0.05", "--markdown", tmp_path / name)
        runs.append((code, out, (tmp_path / name).read_bytes()))
    assert runs[0] == runs[1]
    assert gate(capsys, b, c, "--max-drop", "0.05", "--seed", "1")[1] != runs[0][1]  # the seed is what fixes it


def test_the_markdown_table_shows_the_judge_and_human_deltas(tmp_path, capsys):
    b, c = pair_files(tmp_path, [0.1] * 10, human=True)
    code, out = gate(capsys, b, c, "--max-drop", "0.05", "--format", "md")
    lines = out.splitlines()
    assert code == 0
    assert lines[0] == "### judge gate: pass"
    assert lines[4] == ("| quality | pairing | conversations | baseline | candidate | delta [CI] | human delta [CI] "
                        "| verdict |")
    assert lines[6].startswith("| overall | paired | 10 | ") and "| +0.100 [+0.100, +0.100] | +0.100 [+0.100, " \
        "+0.100] | **pass** |" in lines[6]


def test_human_ratings_are_reported_and_gate_only_with_on_human(tmp_path, capsys):
    n = 10
    base = base_scores(n)
    b = write(tmp_path / "b.jsonl", [row(f"c{i}", s, group=f"k{i}", human=4.0) for i, s in enumerate(base)])
    c = write(tmp_path / "c.jsonl", [row(f"c{i}", s, group=f"k{i}", human=3.0) for i, s in enumerate(base)])
    code, out = gate(capsys, b, c, "--max-drop", "0.5")
    assert code == 0 and "human  4.000 -> 3.000  delta -1.000 [-1.000, -1.000]" in out
    code, out = gate(capsys, b, c, "--max-drop", "0.5", "--on", "human")
    assert code == EXIT_FAIL and "human  4.000 -> 3.000  delta -1.000 [-1.000, -1.000]  fail" in out
    # A labels file per side replaces the rows' own ratings (a rater's latest label counts).
    labels = []
    for side, value in (("b", 2.0), ("c", 5.0)):
        path = tmp_path / f"{side}.labels.jsonl"
        path.write_text("".join(Label(f"c{i}", {"overall": 1.0}, rater="r").to_json() + "\n" +
                                Label(f"c{i}", {"overall": value}, rater="r").to_json() + "\n" for i in range(n)))
        labels += ["--labels", path]
    code, out = gate(capsys, b, c, "--max-drop", "0.5", "--on", "human", *labels)
    assert code == 0 and "human  2.000 -> 5.000  delta +3.000" in out
    assert "give each side its own" in refused(capsys, b, c, "--max-drop", "0.5", *labels[:2])
    nohuman, _ = pair_files(tmp_path, [0.0] * 8)
    assert "no human ratings" in refused(capsys, nohuman, nohuman, "--max-drop", "0", "--on", "human")


def test_two_versions_of_one_file_pair_on_a_shared_script(tmp_path, capsys):
    rows = []
    for version, shift in (("v1", 0.0), ("v2", -0.3)):
        for i, s in enumerate(base_scores(9)):
            for turn in (2, 4):
                rows.append(row(f"{version}-{i}#{turn}", s + shift, group=f"{version}-{i}",
                                meta={"version": version, "case": f"case{i}", "channel": "web" if i % 2 else "app"}))
    f = write(tmp_path / "log.jsonl", rows)
    code, out = gate(capsys, f, "--by", "version", "--baseline", "v1", "--candidate", "v2", "--max-drop", "0.1",
                     "--pair-on", "case", "--per", "channel")
    assert code == EXIT_FAIL
    assert "paired by context (18 shared contexts, 9 conversations resampled jointly" in out
    assert "overall · web: " in out and "(breakdown, not gated)" in out
    # Without --pair-on the ids differ: the two versions are compared unpaired.
    code, out = gate(capsys, f, "--by", "version", "--baseline", "v1", "--candidate", "v2", "--max-drop", "0.1")
    assert code == EXIT_FAIL and "unpaired (9 baseline and 9 candidate conversations" in out
    assert "no row has version = v3 (the file has: v1, v2)" in refused(
        capsys, f, "--by", "version", "--baseline", "v1", "--candidate", "v3", "--max-drop", "0.1")
    assert "field 'model'" in refused(capsys, f, "--by", "model", "--baseline", "1", "--candidate", "2",
                                      "--max-drop", "0.1")


def test_a_rise_is_the_drop_where_lower_is_better(tmp_path, capsys):
    base = base_scores(10)
    for quality in ("robotic", "curt"):
        b = write(tmp_path / "b.jsonl", [row(f"c{i}", s, group=f"k{i}", quality=quality) for i, s in enumerate(base)])
        c = write(tmp_path / "c.jsonl", [row(f"c{i}", s + 0.2, group=f"k{i}", quality=quality)
                                         for i, s in enumerate(base)])
        flags = ["--lower-is-better", "curt"] if quality == "curt" else []
        code, out = gate(capsys, b, c, "--max-drop", "0.1", *flags)
        assert code == EXIT_FAIL and f"{quality} (lower is better): paired" in out
        assert gate(capsys, c, b, "--max-drop", "0.1", *flags)[0] == 0
    assert gate(capsys, b, c, "--max-drop", "0.1")[0] == 0  # curt is no known negative quality


def test_a_breakdown_field_missing_from_a_row_is_named_with_its_file(tmp_path, capsys):
    b, c = pair_files(tmp_path, [0.0] * 8)
    assert f"{b}, record c0, field 'channel'" in refused(capsys, b, c, "--max-drop", "0", "--per", "channel")
    assert "field 'case'" in refused(capsys, b, c, "--max-drop", "0", "--pair-on", "case")


def test_results_folders_are_compared_cell_by_cell(tmp_path, capsys):
    for run, shift in (("base", 0.0), ("cand", -0.01)):
        for quality in ("overall", "engaging"):
            write(tmp_path / run / "items" / "yesno" / "chat" / quality / "seed0.jsonl",
                  [row(f"c{i}", s + shift, group=f"k{i}", quality=quality) for i, s in enumerate(base_scores(8))])
    code, out = gate(capsys, tmp_path / "base", tmp_path / "cand", "--max-drop", "0.02", "--quality", "engaging")
    assert code == 0 and "yesno/chat/engaging/seed0 · engaging: paired" in out and "overall" not in out.split("tolerance")[1]
    code, out = gate(capsys, tmp_path / "base", tmp_path / "cand", "--max-drop", "0.005", "--format", "md")
    assert code == EXIT_FAIL and out.count("**fail**") == 2 and "| cell | quality |" in out


def test_failed_rows_are_left_out_and_counted(tmp_path, capsys):
    base = base_scores(10)
    b = write(tmp_path / "b.jsonl", [row(f"c{i}", s, group=f"k{i}") for i, s in enumerate(base)])
    c = write(tmp_path / "c.jsonl", [row(f"c{i}", None if i == 3 else s, group=f"k{i}") for i, s in enumerate(base)])
    code, out = gate(capsys, b, c, "--max-drop", "0")
    assert code == 0 and "9 shared contexts" in out and "failed: 0 baseline and 1 candidate rows have no score" in out
    assert "left out: 1 baseline and 0 candidate contexts without a partner" in out


def test_a_deterministic_judge_passes_against_itself(tmp_path, capsys):
    """The same file scored twice by a deterministic judge (log-probabilities, the mock backend here) gates
    to a delta of exactly 0 and a pass: the gate cannot flake on identical inputs."""
    outs = []
    for name in ("first.jsonl", "second.jsonl"):
        assert main(["score", str(ROOT / "examples" / "bot_v1.jsonl"), "--backend", "mock", "--no-cache",
                     "-o", str(tmp_path / name)]) == 0
        outs.append(tmp_path / name)
    capsys.readouterr()
    code, out = gate(capsys, *outs, "--max-drop", "0")
    assert code == 0 and "delta +0.000 [+0.000, +0.000]  pass" in out and "paired by context (8 shared" in out
    assert json.loads(outs[0].read_text().splitlines()[0])["score"] is not None


@pytest.mark.slow  # fourteen prompts (5-20 s); the mock backend's run above guards the same path in the fast tier
def test_a_real_model_scoring_a_chat_log_twice_gates_to_a_pass(tmp_path, capsys, smollm2):
    """End to end with SmolLM2 (llama.cpp): a chat log of seven conversations is read, scored twice through the
    engine's row path, and the two runs gate against each other: paired, a delta of exactly 0, a pass."""
    from judge.datasets import load_items
    from judge.engine.run import run_rows
    from judge.prompts.templates import get_prompt
    from judge.scorers.llm import LLMJudge

    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"id": f"chat-{i}", "model": "bot", "messages": [
        {"role": "system", "content": "You are a cooking assistant."},
        {"role": "user", "content": f"What can I make with {food}?"},
        {"role": "assistant", "content": f"A simple {food} soup: simmer it with onion and stock for twenty minutes."}]})
        + "\n" for i, food in enumerate(("leeks", "carrots", "lentils", "rice", "beans", "tomatoes", "squash"))))
    items = load_items(log)
    runs = []
    for name in ("first.jsonl", "second.jsonl"):
        rows: list[Row] = []
        assert run_rows(LLMJudge(get_prompt("yesno"), smollm2), items, "yesno", None, rows.append) == 0
        runs.append(write(tmp_path / name, rows))
    assert runs[0].read_bytes() == runs[1].read_bytes()
    code, out = gate(capsys, *runs, "--max-drop", "0")
    assert code == 0 and "paired by context (7 shared contexts, 7 conversations" in out
    assert "delta +0.000 [+0.000, +0.000]  pass" in out
