"""One engine: every entry point builds a judge through ``judge.engine`` and writes the same rows.

Real SmolLM2 (llama.cpp), real data, real SQLite caches under tmp_path, real subprocesses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judge import GenerateConfig, load_benchmark, make_judge
from judge.core.errors import InputError
from judge.datasets.benchmarks import dataset_info
from judge.engine import PROMPT_KEYS, ROW_KEYS, MethodSpec
from judge.harness import load_experiment, run_experiment

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str, cache: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ}
    if cache is not None:
        env["JUDGE_CACHE"] = str(cache)
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)


def test_make_judge_shows_k_examples_from_the_scored_items_without_a_pool(data_dir):
    """The documented default pool: the rated items being scored, each item's conversation kept out.
    Which examples a prompt shows is decided before any model: the mock backend answers here (real BM25,
    real templates), and the real model's k-shot path runs in test_manual_examples_through_make_judge."""
    info = dataset_info("dailydialog-zhao")
    items = load_benchmark(info.name, data_dir)[::50][:12]  # spread over many conversations
    judge = make_judge("yesno", selector="bm25-context", k=4, quality=info.quality(info.overall), backend="mock",
                       config=GenerateConfig(threads=2, cache=False))
    try:
        scores = list(judge.score(items[:12]))
    finally:
        judge.backend.close()
    groups = {it.id: it.group for it in items}
    assert [len(s.examples) for s in scores] == [4] * 12
    for s in scores:
        assert s.item_id not in s.examples and all(groups[e] != groups[s.item_id] for e in s.examples)


def test_examples_without_a_quality_are_refused_before_the_model_loads():
    with pytest.raises(InputError, match="quality"):
        make_judge("yesno", selector="bm25-context", k=4, model="/nonexistent.gguf")


@pytest.mark.slow
def test_manual_examples_through_make_judge(data_dir):
    """`selector="manual"` gets its quality from the builder (it failed with 'needs a quality' before)."""
    info = dataset_info("fed-turn")
    items = load_benchmark(info.name, data_dir)
    q = info.quality("Interesting")
    judge = make_judge("fed", selector="manual", k=3, quality=q, pool=items,
                       config=GenerateConfig(threads=2, cache=False))
    try:
        s = next(judge.score([items[100]]))
    finally:
        judge.backend.close()
    assert s.ok and len(s.examples) == 3


def test_api_key_is_refused_as_an_option(tmp_path):
    with pytest.raises(InputError, match="--api-key-env"):
        MethodSpec(backend="openai", options={"api_key": "sk-secret"})
    proc = _cli("score", "examples/dialogues.jsonl", "--backend", "openai", "--backend-option", "api_key=sk-secret")
    assert proc.returncode == 2 and "--api-key-env" in proc.stderr and "sk-secret" not in proc.stderr
    cfg = tmp_path / "c.toml"
    cfg.write_text('datasets = ["DZ"]\n[[methods]]\nbackend = "openai"\noptions = { api_key = "sk-secret" }\n')
    proc = _cli("run", str(cfg), "--check", "--data-dir", "../shared/data")
    assert proc.returncode == 2 and "methods[0]" in proc.stderr and "--api-key-env" in proc.stderr


def _config(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "exp.toml"
    p.write_text(text)
    return p


#: Which rows bench and run write is the engine's: CI runs it on the mock backend, `pytest -m long` with SmolLM2
#: (13-25 s of real-model work).
@pytest.mark.parametrize("backend", [pytest.param("mock", marks=pytest.mark.slow),
                                     pytest.param("llamacpp", marks=pytest.mark.long)])
def test_bench_rows_equal_run_cell_rows_and_bench_prints_the_ci(tmp_path, data_dir, backend):
    """`judge bench` is a one-cell `judge run`: same rows byte for byte, and it prints that 4 items hold too few
    conversations for a bootstrap CI."""
    cache = tmp_path / "cache.sqlite"
    bench_out = tmp_path / "bench.jsonl"
    proc = _cli("bench", "--data-dir", str(data_dir), "--dataset", "DZ", "--limit", "4", "--selector",
                "bm25-context", "--k", "2", "--threads", "2", "--backend", backend, "-o", str(bench_out), cache=cache)
    assert proc.returncode == 0, proc.stderr
    for word in ("spearman", "pearson", "kendall", "too few conversations (", "s/item over 4 rows", "cache 0 hits, 4 misses",
                 "n         4"):
        assert word in proc.stdout, proc.stdout
    cfg = _config(tmp_path, 'datasets = ["DZ"]\n[[methods]]\nprompt = "yesno"\nselector = "bm25-context"\nk = 2\n'
                            f'backend = "{backend}"\ngenerate = {{ threads = 2 }}\n')
    run_out = tmp_path / "run"
    proc = _cli("run", str(cfg), "--data-dir", str(data_dir), "--limit", "4", "-o", str(run_out), "--no-progress",
                cache=cache)
    assert proc.returncode == 0, proc.stderr
    cell = run_out / "items" / "yesno-bm25-context-k2" / "dailydialog-zhao" / "appropriateness" / "seed0.jsonl"
    assert bench_out.read_bytes() == cell.read_bytes()
    rows = [json.loads(x) for x in cell.read_text().splitlines()]
    assert len(rows) == 4 and all(tuple(r) == ROW_KEYS + PROMPT_KEYS for r in rows)
    assert all(len(r["examples"]) == 2 and r["estimated"] is False and r["complete"] is True for r in rows)


@pytest.mark.long  # 13-25 s of real-model work
def test_rerun_of_a_finished_run_makes_no_model_call(tmp_path, data_dir):
    """A second `judge run` of the same config into a new folder is served from the SQLite cache."""
    text = ('datasets = [{ name = "fed-turn", qualities = ["Overall", "Interesting"] }]\n'
            '[[methods]]\nname = "m3"\nprompt = "fed"\nselector = "manual"\nk = 3\n'
            f'generate = {{ threads = 2, cache_path = "{tmp_path / "c.sqlite"}" }}\n')
    exp = load_experiment(_config(tmp_path, text)).with_overrides(data_dir=str(data_dir), limit=3)
    first = run_experiment(exp.with_overrides(output=str(tmp_path / "a")), progress=False, plots=False,
                           log=lambda m: None).to_dict()
    second = run_experiment(exp.with_overrides(output=str(tmp_path / "b")), progress=False, plots=False,
                            log=lambda m: None).to_dict()
    assert first["counters"]["cache_misses"] == 6
    assert second["counters"] == {"cache_hits": 6, "cache_misses": 0}
    # Each folder's time record says which run did the work: the first loaded the model and computed,
    # the second read every answer from the cache.
    t1, t2 = first["timing"]["m3"], second["timing"]["m3"]
    assert (t1["rows"], t1["cache_hits"], t1["cache_misses"]) == (6, 0, 6)
    assert (t2["rows"], t2["cache_hits"], t2["cache_misses"]) == (6, 6, 0)
    assert t1["load_s"] > 0 and t1["peak_rss_mib"] > 100 and t1["s_per_item"] > 0
    a = sorted((tmp_path / "a" / "items").rglob("*.jsonl"))
    b = sorted((tmp_path / "b" / "items").rglob("*.jsonl"))
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]
    assert all(r["n_failed"] == 0 and r["spearman"] is not None for r in first["results"])


@pytest.mark.slow
def test_score_limit_does_not_shrink_the_example_pool(tmp_path):
    """`judge score --limit 2` scores two items but draws examples from the whole file (it used to draw
    them from the first two items only, where the guard left none)."""
    out = tmp_path / "s.jsonl"
    proc = _cli("score", "examples/dialogues.jsonl", "--limit", "2", "--selector", "bm25-context", "--k", "2",
                "--quality", "overall", "--threads", "2", "--no-cache", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["ex-01", "ex-02"]
    assert all(len(r["examples"]) == 2 and not set(r["examples"]) & {"ex-01", "ex-02"} for r in rows)


def test_a_template_check_is_repeated_for_other_items_and_skipped_only_for_the_same(tmp_path, data_dir):
    """`prepare` renders every item once so that a template error stops a run before a model loads; a
    check already passed for the same template, quality and item objects (an ensemble's member that is
    also a cell) is not repeated, and other items, even with the same ids, are checked again."""
    from dataclasses import replace

    from judge.core.errors import TemplateError
    from judge.engine.build import prepare

    template = tmp_path / "strict.j2"
    template.write_text('{#- judge\nanswer = "yesno"\n-#}\n{{ item.response[0] }} Answer:')
    info = dataset_info("fed-turn")
    items = load_benchmark(info.name, data_dir)[:5]
    spec = MethodSpec(name="strict", prompt=str(template), backend="mock")
    quality = info.quality(info.overall)
    prepare(spec, items, quality)
    prepare(spec, items, quality)  # the same check: skipped, and still passes
    emptied = [*items[:4], replace(items[4], response="")]  # same ids, one reply now empty: '[0]' fails
    with pytest.raises(TemplateError, match=r"strict\.j2"):
        prepare(spec, emptied, quality)


def test_a_template_check_renders_the_reply_alone_as_it_is_sent_and_once(tmp_path, data_dir, monkeypatch):
    """The check of a reply-alone method (context = "none") renders the items without their conversation,
    so a template that needs one fails before a model loads, although the same items passed as given;
    a second prepare of the same method and items (an ensemble's member that is also a cell) renders
    nothing again."""
    from judge.core.errors import TemplateError
    from judge.engine.build import prepare
    from judge.prompts.templates import PromptTemplate

    template = tmp_path / "needs-context.j2"
    template.write_text('{#- judge\nanswer = "yesno"\n-#}\n{{ item.context[0].text }} {{ item.response }} Answer:')
    info = dataset_info("fed-turn")
    items = load_benchmark(info.name, data_dir)[:5]
    quality = info.quality(info.overall)
    prepare(MethodSpec(name="given", prompt=str(template), backend="mock"), items, quality)
    with pytest.raises(TemplateError, match=r"needs-context\.j2"):
        prepare(MethodSpec(name="alone", prompt=str(template), context="none", backend="mock"), items, quality)
    renders = []
    original = PromptTemplate.render
    monkeypatch.setattr(PromptTemplate, "render", lambda self, *a, **k: renders.append(1) or original(self, *a, **k))
    alone = MethodSpec(name="alone", prompt="yesno-criteria", context="none", backend="mock")
    prepare(alone, items, quality)
    assert len(renders) == len(items)
    prepare(alone, items, quality)
    assert len(renders) == len(items)
