"""Scheduling by prefix: several LLM methods of one model score their items in one pass, their prompts
ordered so that those sharing a prefix run back to back, and each method gets exactly what it got alone.

Real components throughout: the packaged SmolLM2 via llama.cpp, the shipped templates and data, the
harness writing real cell files, the real SQLite cache. The one stand-in is a recorder around the real
backend's ``label_logprobs`` (it calls the real method and notes the prompts in the order they came),
since the order prompts reach llama.cpp is what scheduling changes and nothing else shows it.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judge.datasets import load_benchmark
from judge.datasets.benchmarks import dataset_info
from judge.engine import BackendPool, MethodSpec, build_scorer
from judge.engine.schedule import common_prefix
from judge.harness import load_experiment, run_experiment
from judge.prompts.templates import builtin_prompts, get_prompt
from judge.scorers.llm import LLMJudge
from judge.scorers.units import run_lanes

ROOT = Path(__file__).resolve().parents[1]
CRITERIA = ["yesno-criteria", "yesno-aspect-relevant", "rating-criteria"]


def _record(backend) -> list[str]:
    """Note every prompt text the real backend is asked for, in order (it still answers them)."""
    calls: list[str] = []
    real = backend.label_logprobs

    def recording(prompts, candidates, top_n=20):
        calls.extend(p.text for p in prompts)
        return real(prompts, candidates, top_n)

    backend.label_logprobs = recording
    return calls


def _config(tmp: Path, methods: list[str], cache: Path, *, limit: int = 6, dataset: str = "DGR") -> Path:
    rule = 'rule = "expected"\n'
    body = "".join(f'[[methods]]\nname = "{m}"\nprompt = "{m}"\n{rule if m.startswith("rating") else ""}'
                   f'generate = {{ threads = 2, cache_path = "{cache}" }}\n' for m in methods)
    path = tmp / f"exp-{len(list(tmp.glob('exp-*.toml')))}.toml"
    path.write_text(f'name = "sched"\nlimit = {limit}\ndatasets = ["{dataset}"]\n{body}')
    return path


def _run(config: Path, data_dir: Path, out: Path, **overrides) -> dict:
    exp = load_experiment(config).with_overrides(data_dir=str(data_dir), output=str(out), **overrides)
    return run_experiment(exp, progress=False, plots=False, log=lambda m: None).to_dict()


def _cells(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted((out / "items").rglob("*.jsonl"))}


def _cache_entries(path: Path) -> dict[str, dict]:
    """Cache rows by key, each value without ``n_evaluated_tokens`` (how much of the prompt the model ran
    after prefix reuse: what scheduling saves, and never read back: a cached answer evaluates nothing)."""
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT key, value FROM dists").fetchall()
    out = {}
    for key, value in rows:
        d = json.loads(value)
        d.pop("n_evaluated_tokens")
        out[key] = d
    return out


@pytest.mark.slow
def test_scheduled_run_writes_the_rows_and_cache_entries_of_method_by_method_runs(tmp_path, data_dir):
    together, alone = tmp_path / "together.sqlite", tmp_path / "alone.sqlite"
    summary = _run(_config(tmp_path, CRITERIA, together), data_dir, tmp_path / "a")
    for m in CRITERIA:  # one `judge run --methods M` each: the method-by-method path
        _run(_config(tmp_path, CRITERIA, alone), data_dir, tmp_path / "b", methods=[m])
    assert _cells(tmp_path / "a") == _cells(tmp_path / "b")
    assert len(_cells(tmp_path / "a")) == 3
    assert _cache_entries(together) == _cache_entries(alone)
    assert len(_cache_entries(together)) == 3 * 6
    # Each cell's time file charges it its own cache misses (6 prompts each, none shared between methods).
    for m in CRITERIA:
        t = summary["timing"][m]
        assert (t["rows"], t["cache_misses"], t["cache_hits"]) == (6, 6, 0), (m, t)
        assert t["seconds"] > 0
    # The scheduled pass never runs more tokens. It runs no fewer here: the KV prefix is reused in whole
    # batches of n_batch (512) tokens only, so answers do not depend on the prompt before them, and these
    # zero-shot prompts share less than one batch (docs/harness.md, "Prompt families").
    with sqlite3.connect(together) as db:
        evaluated = [json.loads(v)["n_evaluated_tokens"] for (v,) in db.execute("SELECT value FROM dists")]
    with sqlite3.connect(alone) as db:
        evaluated_alone = [json.loads(v)["n_evaluated_tokens"] for (v,) in db.execute("SELECT value FROM dists")]
    assert sum(evaluated) <= sum(evaluated_alone), (sum(evaluated), sum(evaluated_alone))


@pytest.mark.long  # 21 s of SmolLM2
def test_prompts_of_one_family_go_to_the_backend_back_to_back(smollm2, data_dir):
    """Three FED turn qualities in the shared family (three items): each item's three prompts reach llama.cpp one after
    the other, and the second and third evaluate only their question (the conversation is reused)."""
    items = load_benchmark("fed-turn", data_dir)[:3]
    info = dataset_info("fed-turn")
    qualities = [info.quality(q) for q in ("Interesting", "Fluent", "Overall")]
    judges = [LLMJudge(get_prompt(f"fedq-turn-{q.key}"), smollm2, quality=q) for q in qualities]
    calls = _record(smollm2)
    smollm2.llm.reset()
    try:
        got = list(run_lanes(judges, [items] * 3))
    finally:
        del smollm2.label_logprobs  # the real method again
    assert len(calls) == 9
    conversation = {it.id: judges[0].build_prompt(it)[0].text.rsplit("Question:", 1)[0] for it in items}
    order = [next(i for i, c in conversation.items() if text.startswith(c)) for text in calls]
    # Each item's prompts are consecutive: 3 runs of 3, never interleaved with another item's.
    runs = [order[i:i + 3] for i in range(0, 9, 3)]
    assert all(len(set(r)) == 1 for r in runs), order
    assert sorted(r[0] for r in runs) == sorted(conversation)
    by_lane: dict[int, list] = {0: [], 1: [], 2: []}
    for lane, score in got:
        by_lane[lane].append(score)
    for lane in by_lane:  # each method's scores come in its items' order
        assert [s.item_id for s in by_lane[lane]] == [it.id for it in items]
        assert all(s.ok for s in by_lane[lane])
    # The family declares where its shared part ends (shared_until): llama.cpp evaluates it as batches of
    # its own, so of each item's three prompts one runs its conversation and the other two only their
    # question; the instructions before the conversation end at a batch boundary too (every template's),
    # so only the first item's first prompt runs in full.
    for n in range(len(items)):
        ran = sorted(ss[n].n_evaluated_tokens for ss in by_lane.values())
        full = [ss[n].n_prompt_tokens for ss in by_lane.values()]
        assert (ran[2] in full) == (n == 0) and ran[2] <= max(full) and ran[1] < 30 and ran[0] < 30, (ran, full)
    # The same scores, bit for bit, as each quality scored alone (answers never depend on the prompt before).
    for lane, judge in enumerate(judges):
        smollm2.llm.reset()
        alone = list(LLMJudge(judge.prompt, smollm2, quality=judge.quality).score(items))
        assert [s.value for s in alone] == [s.value for s in by_lane[lane]]
        assert [s.label_probs for s in alone] == [s.label_probs for s in by_lane[lane]]


@pytest.mark.slow  # the one test of an ensemble's members scheduled together (scheduling needs llama.cpp's reuse)
def test_ensemble_members_of_one_model_are_scored_in_one_pass(smollm2, data_dir, tmp_path):
    """`judge score --member ...` (an ensemble): its LLM members on one model are scheduled together, so
    their prompts of one item reach the model back to back; each member's scores are its scores alone."""
    items = load_benchmark("dailydialog-grade", data_dir)[:2]
    q = dataset_info("dailydialog-grade").quality("relevance")
    from judge.core.config import GenerateConfig

    gen = GenerateConfig(threads=2, cache=False)
    members = tuple(MethodSpec(name=p, prompt=p, generate=gen) for p in ("yesno-criteria", "yesno-aspect-relevant"))
    spec = MethodSpec(type="ensemble", members=members)
    backends = BackendPool()
    scorer = build_scorer(spec, items, q, backends=backends)
    try:
        backend = backends.get(members[0])
        calls = _record(backend)
        ensemble = list(scorer.score(items))
        assert len(calls) == 2 * len(items)
        pairs = [calls[i:i + 2] for i in range(0, len(calls), 2)]
        assert all(common_prefix([a, b]) > 0.8 * len(a) for a, b in pairs)  # one item's two questions
        del backend.label_logprobs
        assert all(s.ok for s in ensemble)
        alone = [list(build_scorer(m, items, q, backends=backends).score(items)) for m in members]
        fresh = build_scorer(spec, items, q, backends=backends)
        fresh.warm()
        per_member = fresh._members_scores([make for _, make in fresh.members], items)
        for scores, (by_id, _) in zip(alone, per_member, strict=True):
            assert [s.value for s in scores] == pytest.approx([by_id[s.item_id].value for s in scores], abs=1e-6)
    finally:
        backends.close()


def test_fed_family_templates_render_and_declare_their_family(data_dir):
    fed = load_benchmark("fed", data_dir)
    turn = next(it for it in fed if it.level == "turn")
    dialog = next(it for it in fed if it.level == "dialog")
    for level, tag, item in (("turn", "turn", turn), ("dialog", "dial", dialog)):
        names = [n for n in builtin_prompts() if n.startswith(f"fedq-{tag}-")]
        qualities = dataset_info("fed-turn" if level == "turn" else "fed-dial").qualities
        assert len(names) == len(qualities) == (9 if level == "turn" else 11)
        texts, cuts = [], []
        for q in qualities:
            p = get_prompt(f"fedq-{tag}-{q.key.replace(' ', '-')}")
            assert p.family == f"fedq-{tag}" and p.level == level and p.quality == q
            texts.append(p.render(item, [], q))
            cuts.append(p.shared_chars(texts[-1]))
        # Conversation first, the question last: every prompt is the same text up to its question.
        shared = common_prefix(texts)
        assert all(t[:shared].endswith("Question: How ") or t[:shared].endswith("Question: ") for t in texts), \
            texts[0][shared - 40:shared + 20]
        assert all(t.count("\n", shared) == 1 and t.endswith("Answer:") for t in texts)
        # The shared part each prompt declares (shared_until) ends where its question begins.
        assert all(0 < c <= shared and t[c:].startswith("Question:") for c, t in zip(cuts, texts))
    for name in ("yesno-criteria", "rating-criteria", "rating-criteria-shared", "yesno-aspect-fluent"):
        assert get_prompt(name).family == "criteria"
    assert get_prompt("fed-turn-fluent").family is None  # the paper's prompts stay as they were


@pytest.mark.slow
def test_check_prints_the_shared_prefix_of_each_family(tmp_path, data_dir):
    config = tmp_path / "check.toml"
    config.write_text('name = "c"\nlimit = 6\ndatasets = [{ name = "fed-turn", qualities = "all" }, "TU"]\n'
                      '[[methods]]\nname = "fedq"\nprompt = "fedq"\n'
                      + "".join(f'[[methods]]\nname = "{p}"\nprompt = "{p}"\n' for p in CRITERIA))
    proc = subprocess.run([sys.executable, "-m", "judge", "run", str(config), "--data-dir", str(data_dir), "--check"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = [x for x in proc.stdout.splitlines() if x.startswith("family ")]
    assert len(lines) == 3, proc.stdout  # fedq-turn on FT; criteria on FT and on TU
    fedq = next(x for x in lines if x.startswith("family fedq-turn on fed-turn, llamacpp (default model): 9 prompts"))
    criteria = next(x for x in lines if x.startswith("family criteria on topical-usr, llamacpp (default model): 3 prompts"))
    for line in (fedq, criteria):
        shared, total = (float(v) for v in line.split("shared prefix ")[1].split(" tokens")[0].split(" of "))
        assert 0 < shared < total
    # The fedq prompts differ only by their last line; rating-criteria's first line says how to answer,
    # so the three criteria prompts have only the preamble's first words in common.
    assert "6 items" in fedq and float(fedq.rsplit("(", 1)[1].split("%")[0]) >= 80
    assert float(criteria.rsplit("(", 1)[1].split("%")[0]) < 20



def test_family_prefixes_are_measured_on_items_spread_over_the_set(data_dir):
    """`--check` measures a family's prefix on `sample` items spread evenly over a set (tokenizing every
    prompt of a leaderboard cost more than the rest of the check), says how many, and gets what the
    same measure gives on exactly those items."""
    from judge.engine.build import prepare
    from judge.engine.schedule import family_shares

    info = dataset_info("fed-turn")
    items = load_benchmark(info.name, data_dir)[:40]
    quality = info.quality(info.overall)

    def shares(its, **kw):
        cells = [("fed-turn", prepare(MethodSpec(name=p, prompt=p, backend="mock"), its, quality), its)
                 for p in CRITERIA[:2]]
        (share,) = family_shares(cells, **kw)
        return share

    full, part = shares(items), shares(items, sample=4)
    assert (full.items, full.measured, part.items, part.measured) == (40, 40, 40, 4)
    assert "measured" not in full.describe() and "40 items (4 measured): shared prefix" in part.describe()
    picked = shares([items[i] for i in (0, 10, 20, 30)])
    assert (part.shared, part.length) == (picked.shared, picked.length) != (full.shared, full.length)

def test_reply_alone_prompts_are_measured_as_a_family_of_their_own(data_dir):
    """The reply-alone prompts (context = "none") share their instruction with each other, not the
    conversation with the given ones: `--check` gives them a line of their own, rendered as they are sent."""
    from judge.engine.build import prepare
    from judge.engine.schedule import family_shares

    info = dataset_info("fed-turn")
    items = load_benchmark(info.name, data_dir)[:10]
    quality = info.quality(info.overall)
    cells = [("fed-turn", prepare(MethodSpec(name=f"{p}-{view}", prompt=p, context=view, backend="mock"), items,
                                  quality), items) for p in CRITERIA[:2] for view in ("given", "none")]
    given, alone = family_shares(cells)
    assert (given.family, alone.family) == ("criteria", "criteria (context none)")
    assert given.prompts == alone.prompts == tuple(CRITERIA[:2])
    assert alone.length < given.length and alone.shared < given.shared


@pytest.mark.slow
def test_sigkill_of_a_scheduled_run_then_rerun_matches_uninterrupted_run(tmp_path, data_dir):
    """The kill/resume guarantee of tests/test_kill_resume.py for a run whose cells are scheduled together."""
    n = 8
    ref_cache, cache = tmp_path / "ref.sqlite", tmp_path / "kill.sqlite"
    ref_cfg = _config(tmp_path, CRITERIA[:2], ref_cache, limit=n)
    kill_cfg = _config(tmp_path, CRITERIA[:2], cache, limit=n)
    _run(ref_cfg, data_dir, tmp_path / "ref")
    cmd = [sys.executable, "-m", "judge", "run", str(kill_cfg), "--data-dir", str(data_dir), "-o", str(tmp_path / "out"),
           "--no-progress"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=os.environ.copy(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def cached() -> int:
        try:
            with sqlite3.connect(f"file:{cache}?mode=ro", uri=True, timeout=1) as db:
                return int(db.execute("SELECT COUNT(*) FROM dists").fetchone()[0])
        except sqlite3.OperationalError:
            return 0

    try:
        deadline = time.monotonic() + 600
        while cached() < n and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    done = cached()
    assert proc.returncode == -signal.SIGKILL and n <= done < 2 * n, (proc.returncode, done)
    rerun = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert _cells(tmp_path / "out") == _cells(tmp_path / "ref")
    assert f"{2 * n - done} misses" in rerun.stderr, rerun.stderr


def test_check_passes_where_a_familys_model_is_not_installed(tmp_path, data_dir, capsys):
    """The family lines are a report: a model that is not there yet (a packaged Qwen not installed, a GGUF
    not downloaded) gives the shared prefixes in characters and says why; the check itself passes, and the
    run stops on the model with the same message."""
    from judge.cli import main

    config = tmp_path / "check.toml"
    config.write_text('name = "c"\nlimit = 3\ndatasets = [{ name = "fed-turn", qualities = ["Overall", "Fluent"] }]\n'
                      '[defaults]\nmodel = "/nonexistent/judge.gguf"\n'
                      '[[methods]]\nname = "fedq"\nprompt = "fedq"\n')
    assert main(["run", str(config), "--data-dir", str(data_dir), "--check"]) == 0
    out = capsys.readouterr().out
    assert "note: family prefixes of /nonexistent/judge.gguf in characters:" in out
    assert "neither a packaged model" in out
    assert "family fedq-turn on fed-turn, llamacpp /nonexistent/judge.gguf: 2 prompts" in out and " characters per prompt" in out
