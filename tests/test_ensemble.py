"""Ensembles are ordinary methods: built by the engine, run by the harness from the members' cache, and
given on the command line, with each item's score independent of how the set is cut into batches.

Real SmolLM2 (llama.cpp), the real length scorer, real data and a real SQLite cache under tmp_path.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from judge.core.errors import InputError
from judge.datasets import load_benchmark, load_items
from judge.engine import BackendPool, MethodSpec, build, prepare
from judge.harness import load_experiment, run_experiment
from judge.harness.config import parse_experiment
from judge.harness.fitted import meta_settings
from judge.methods.ensemble import kept_weights
from judge.records.results import cell_path
from judge.records.rows import read_rows as read_row_records
from judge.scorers.classic import create_classic
from judge.scorers.ensemble import percentile


def read_rows(path):
    """A rows file's rows as written (JSON objects), read through the row record."""
    return [r.to_dict() for r in read_row_records(path)]


ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "dialogues.jsonl"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=ROOT, env={**os.environ},
                          capture_output=True, text=True, timeout=900)


def test_percentile_is_the_mid_rank():
    ref = [0.1, 0.2, 0.2, 0.9]
    assert percentile(ref, 0.05) == 0.0
    assert percentile(ref, 0.2) == pytest.approx((1 + 0.5 * 2) / 4)
    assert percentile(ref, 0.9) == pytest.approx(3.5 / 4)
    assert percentile(ref, 5.0) == 1.0


def test_spec_refuses_malformed_ensembles():
    a = MethodSpec(prompt="yesno")
    b = MethodSpec(type="classic", scorer="length")
    with pytest.raises(InputError, match="at least two members"):
        MethodSpec(type="ensemble", members=(a,))
    with pytest.raises(InputError, match="2 weights for 3 members"):
        MethodSpec(type="ensemble", members=(a, b, MethodSpec(prompt="rating")), weights=(1.0, 2.0))
    with pytest.raises(InputError, match="listed twice"):
        MethodSpec(type="ensemble", members=(a, a))
    with pytest.raises(InputError, match="cannot itself be an ensemble"):
        MethodSpec(type="ensemble", members=(a, MethodSpec(type="ensemble", members=(a, b))))
    with pytest.raises(InputError, match="belong to ensembles"):
        MethodSpec(prompt="yesno", members=(a, b))
    assert MethodSpec(type="ensemble", members=(a, b)).name == "ensemble(yesno-none-k0+length)"


def _ensemble(weights: tuple[float, ...] = (), backend: str = "llamacpp") -> MethodSpec:
    return MethodSpec(name="ens", type="ensemble", weights=weights, members=(
        MethodSpec(name="yn", prompt="yesno", backend=backend, generate=_gen()),
        MethodSpec(name="len", type="classic", scorer="length")))


def _gen():
    from judge import GenerateConfig

    return GenerateConfig(threads=2, cache=False)


def test_scores_are_weighted_mean_percentiles_over_the_whole_set_in_any_batch():
    """The reference is the prepared set: scoring in pieces (a resumed run) gives the same numbers. The
    arithmetic is the point, not the model, so the LLM member runs on the mock backend (deterministic
    per prompt, like the real model); the real-model ensemble runs in the harness and CLI tests below."""
    items = load_items(str(EXAMPLES))
    spec = _ensemble(weights=(3.0, 1.0), backend="mock")
    backends = BackendPool()
    try:
        prep = prepare(spec, items)
        whole = list(build(prep, backends).score(items))
        pieces = [s for cut in (items[:5], items[5:9], items[9:]) for s in build(prep, backends).score(cut)]
        yn = [s.value for s in build(prep.members[0], backends).score(items)]
        ln = [s.value for s in build(prep.members[1], backends).score(items)]
    finally:
        backends.close()
    assert [s.value for s in whole] == [s.value for s in pieces]
    syn, sln = sorted(yn), sorted(ln)
    for s, a, b in zip(whole, yn, ln, strict=True):
        assert s.value == pytest.approx((3 * percentile(syn, a) + percentile(sln, b)) / 4)
        assert s.error is None and s.label_probs is None
    assert len({s.value for s in whole}) > 3  # the members disagree: not a constant


CONFIG = """
name = "ens"
data_dir = "{data}"
output = "{out}"
datasets = ["FT"]
limit = 8
[defaults]
generate = {{ threads = 2 }}
{backend}
[[methods]]
name = "yn"
prompt = "yesno"
[[methods]]
name = "yn-short"
prompt = "yesno"
{short}
[[methods]]
type = "classic"
scorer = "length"
[[methods]]
name = "ens"
type = "ensemble"
members = ["yn", "length"]
[[methods]]
name = "ens-short"
type = "ensemble"
members = ["yn-short", "length"]
[[methods]]
name = "ens-cv"
type = "ensemble"
members = ["yn", "length"]
fit = "cv"
"""


#: The short member's window: some FED-Turn prompts are too long for it, in SmolLM2's tokens and in the mock's
#: (4 characters each).
SHORT = {"smollm2": ("", "generate = { threads = 2, max_context = 160 }"),
         "mock": ('backend = "mock"', "generate = { threads = 2, max_context = 200 }")}


#: The accounting and the resume are harness logic: CI runs them on the mock backend (slow suite: 2-3 s);
#: `pytest -m long` with SmolLM2.
@pytest.mark.parametrize("backend", [pytest.param("mock", marks=pytest.mark.slow),
                                     pytest.param("smollm2", marks=pytest.mark.long)])
def test_harness_ensemble_reads_its_members_from_the_cache_and_resumes_identically(tmp_path, data_dir, backend,
                                                                                  monkeypatch):
    # A cache of its own: the counts below are this run's, whatever the suite's shared cache already holds.
    monkeypatch.setenv("JUDGE_CACHE", str(tmp_path / "cache.sqlite"))
    cfg = tmp_path / "ens.toml"
    out = tmp_path / "res"
    top, short = SHORT[backend]
    cfg.write_text(CONFIG.format(data=data_dir, out=out, backend=top, short=short))
    exp = load_experiment(cfg)
    summary = run_experiment(exp, progress=False, plots=False).to_dict()
    n = len(read_rows(cell_path(out, "yn", "fed-turn", "Overall", 0)))
    assert n == 8
    short = read_rows(cell_path(out, "yn-short", "fed-turn", "Overall", 0))
    failed = [i for i, r in enumerate(short) if r["error"]]
    assert failed and len(failed) < n, "the short member should fail some items, not all"
    f = len(failed)
    # Each member prompt that got an answer was computed once; the ensembles' passes over the members
    # were cache hits. A prompt too long for its window has no answer to store, so it is asked again
    # by the failed-item retry and by the ensemble pass (2 misses each beyond its first).
    assert summary["counters"]["cache_misses"] == 2 * n + 2 * f, summary["counters"]
    assert summary["counters"]["cache_hits"] == 2 * n + (n - f), summary["counters"]

    rows = {m: read_rows(cell_path(out, m, "fed-turn", "Overall", 0)) for m in ("yn", "length", "ens", "ens-short")}
    yn = sorted(r["score"] for r in rows["yn"])
    ln = sorted(r["score"] for r in rows["length"])
    for e, a, b in zip(rows["ens"], rows["yn"], rows["length"], strict=True):
        assert e["score"] == pytest.approx((percentile(yn, a["score"]) + percentile(ln, b["score"])) / 2, abs=1e-6)
        assert e["seed"] is None and e["group"] == a["group"]
    # A member that failed an item (prompt longer than its 160-token window) is left out of that item's
    # score, and the row says so; the item is not dropped.
    for i in failed:
        row = rows["ens-short"][i]
        assert row["score"] is not None and "member_failed" in row["flags"]
    assert "ens" in (out / "leaderboard.md").read_text()

    # With 8 items a fold has too little to learn from: the learned weights stay equal.
    assert [r["score"] for r in read_rows(cell_path(out, "ens-cv", "fed-turn", "Overall", 0))] == \
        [r["score"] for r in rows["ens"]]
    assert summary["methods"]["ens-cv"]["fit"] == "cv"

    # Kill-like resume: keep the first three ensemble rows only; the rerun rewrites the same bytes.
    paths = [cell_path(out, m, "fed-turn", "Overall", 0) for m in ("ens", "ens-cv")]
    full = [p.read_bytes() for p in paths]
    for p, b in zip(paths, full, strict=True):
        p.write_bytes(b"".join(b.splitlines(keepends=True)[:3]))
    run_experiment(exp, progress=False, plots=False)
    assert [p.read_bytes() for p in paths] == full


def test_config_errors_name_the_entry(tmp_path):
    base = {"datasets": ["FT"], "methods": [{"name": "yn", "prompt": "yesno"}, {"type": "classic", "scorer": "length"}]}
    bad = {**base, "methods": [*base["methods"], {"type": "ensemble", "members": ["yn", "lenght"]}]}
    with pytest.raises(InputError, match=r"methods\[2\].members: unknown method 'lenght'; did you mean 'length'"):
        parse_experiment(bad, "x.toml")
    bad = {**base, "methods": [*base["methods"], {"type": "ensemble", "members": ["yn"]}]}
    with pytest.raises(InputError, match=r"methods\[2\].members: an ensemble needs at least two"):
        parse_experiment(bad, "x.toml")
    bad = {**base, "methods": [*base["methods"], {"type": "ensemble", "members": ["yn", "length"], "combine": "max"}]}
    with pytest.raises(InputError, match=r"methods\[2\].combine: must be one of rank-mean, mean"):
        parse_experiment(bad, "x.toml")
    ok = parse_experiment({**base, "methods": [*base["methods"], {"type": "ensemble", "members": ["yn", "length"],
                                                                   "weights": [2, 1]}]}, "x.toml")
    ens = ok.methods[2]
    assert ens.type == "ensemble" and [m.name for m in ens.settings.members] == ["yn", "length"] and ens.settings.weights == (2.0, 1.0)
    # --model reaches the members of an ensemble as it reaches every LLM method.
    moved = ok.with_overrides(model="other.gguf")
    assert moved.methods[2].settings.members[0].model == "other.gguf"
    assert ok.with_overrides(methods=["ens-x"] if False else [ens.name]).methods == (ens,)


#: How the commands build the ensemble is the engine's: CI runs it on the mock backend, `pytest -m long` with
#: SmolLM2 (13-25 s of real-model work).
@pytest.mark.parametrize("backend", [pytest.param("mock", marks=pytest.mark.slow),
                                     pytest.param("llamacpp", marks=pytest.mark.long)])
def test_cli_bench_member_flags_build_the_same_ensemble(tmp_path, backend):
    """`judge bench FILE --member ... --member ...` prints the ensemble's statistics; its rows equal a
    `judge score` of the same members (both build through the engine)."""
    bench_rows = tmp_path / "bench.jsonl"
    proc = _cli("bench", str(EXAMPLES), "--member", "prompt=yesno", "--member", "scorer=length", "--weights", "2,1",
                "--threads", "2", "--backend", backend, "-o", str(bench_rows))
    assert proc.returncode == 0, proc.stderr
    assert "rank-mean ensemble of yesno-none-k0, length (weights 2, 1)" in proc.stdout
    assert "spearman" in proc.stdout
    score_rows = tmp_path / "score.jsonl"
    proc = _cli("score", str(EXAMPLES), "--member", "prompt=yesno", "--member", "scorer=length", "--weights", "2,1",
                "--threads", "2", "--backend", backend, "-o", str(score_rows))
    assert proc.returncode == 0, proc.stderr
    a = [json.loads(x) for x in bench_rows.read_text().splitlines()]
    b = [json.loads(x) for x in score_rows.read_text().splitlines()]
    assert [r["score"] for r in a] == [r["score"] for r in b] and len(a) == 12
    assert json.loads(score_rows.with_suffix(".meta.json").read_text())["spec"]["type"] == "ensemble"


@pytest.mark.parametrize(("args", "message"), [
    (["--member", "prompt=yesno"], "'--member': an ensemble needs at least two members"),
    (["--member", "prompt=yesno", "--member", "colour=red"], "'--member': expects KEY=VALUE pairs"),
    (["--member", "prompt=yesno", "--member", "k=two"], "k must be an integer, got str"),
    (["--member", "prompt=yesno", "--member", "k=2"], "k = 2 needs an example selector"),
    (["--member", "prompt=yesno", "--member", "scorer=length,k=2"], "a classic member takes only scorer, name and optional"),
    (["--member", "prompt=yesno", "--member", "prompt=rating", "--weights", "1"], "'--weights': 1 weights for 2 members"),
    (["--weights", "1,2"], "--weights needs ensemble members"),
])
def test_cli_member_errors_are_named(args, message):
    proc = _cli("score", str(EXAMPLES), *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr


def test_serve_refuses_an_ensemble_without_a_reference_set():
    proc = _cli("serve", "--member", "prompt=yesno", "--member", "scorer=length", "--port", "0")
    assert proc.returncode == 2
    assert "reference set" in proc.stderr and "--reference-set FILE" in proc.stderr


# -- weights learned by grouped cross-validation (fit = "cv") ----------------------------------------

def test_fit_weights_finds_the_informative_member_and_ties_keep_equal_weights():
    import numpy as np

    from judge.scorers.ensemble_fit import fit_weights, simplex_grid

    assert tuple(simplex_grid(2)[0]) == (0.5, 0.5) and len(simplex_grid(3)) == 66
    rng = np.random.default_rng(0)
    human = rng.normal(size=120)
    good = human + 0.3 * rng.normal(size=120)
    noise = rng.normal(size=120)
    assert fit_weights(np.column_stack([noise, good]), human) == (0.0, 1.0)
    # Two copies of one member cannot be told apart: every weighting ties, and equal weights win.
    assert fit_weights(np.column_stack([good, good]), human) == (0.5, 0.5)
    # Too few items, or constant ratings: nothing to fit on.
    assert fit_weights(np.column_stack([noise, good])[:5], human[:5]) == (0.5, 0.5)
    assert fit_weights(np.column_stack([noise, good]), np.ones(120)) == (0.5, 0.5)


def test_weight_grid_is_every_composition_in_product_order_and_scales_to_many_members():
    """The grid is built from the compositions themselves: the same points in the same order as filtering
    every tuple of a product (so fitted weights and their tie-breaks do not move), at the cost of the
    points alone, which a 9-member ensemble needs (the filtered product walks 2.4 billion tuples)."""
    import itertools

    from judge.scorers.ensemble_fit import compositions, simplex_grid

    for parts in range(1, 6):
        for total in (0, 1, 3, 10):
            brute = [c for c in itertools.product(range(total + 1), repeat=parts) if sum(c) == total]
            assert list(compositions(total, parts)) == brute, (total, parts)
    grid = simplex_grid(9)
    assert grid.shape == (43758, 9)  # C(18, 8)
    assert abs(grid.sum(axis=1) - 1).max() < 1e-12 and len({tuple(r) for r in grid}) == len(grid)


def _cv_ensemble() -> MethodSpec:
    return MethodSpec(name="cv", type="ensemble", fit="cv", members=(
        MethodSpec(name="rouge", type="classic", scorer="rouge-l"),
        MethodSpec(name="len", type="classic", scorer="length")))


def _cv_scores(items, quality):
    from judge.engine import build_scorer

    return {s.item_id: s.value for s in build_scorer(_cv_ensemble(), items, quality).score(items)}


def test_cv_weights_never_see_the_ratings_of_the_items_they_score(data_dir):
    """Topical-USR with two model-free members (ROUGE-L against the reference, length): an item's
    score uses weights fitted on the other folds, which are whole conversations, so rewriting the
    ratings of one fold leaves that fold's scores exactly as they were (and moves the others)."""
    import dataclasses

    from judge.datasets.benchmarks import dataset_info
    from judge.scorers.ensemble_fit import cv_weights, fold_of

    items = load_benchmark("TU", data_dir)
    quality = dataset_info("TU").quality("Overall")
    before = _cv_scores(items, quality)
    folds = {it.id: fold_of(it.group) for it in items}
    by_context: dict[str, set[int]] = {}
    for it in items:
        by_context.setdefault(it.group, set()).add(folds[it.id])
    assert all(len(f) == 1 for f in by_context.values()) and len(set(folds.values())) == 5
    rouge = {s.item_id: s.value for s in create_classic("rouge-l").score(items)}
    length = {s.item_id: s.value for s in create_classic("length").score(items)}
    sr, sl = sorted(rouge.values()), sorted(length.values())
    # Fold 0's raters now simply prefer longer responses: the other folds' weights move toward length.
    rewritten = [dataclasses.replace(it, annotations={"Overall": (1 + 4 * percentile(sl, length[it.id]),)})
                 if folds[it.id] == 0 else it for it in items]
    after = _cv_scores(rewritten, quality)
    assert all(after[i] == before[i] for i, f in folds.items() if f == 0)
    assert sum(after[i] != before[i] for i, f in folds.items() if f != 0) > 100
    # Each score is the fold's weighted mean of the members' percentiles over the whole set.
    values = [[percentile(sr, rouge[it.id]), percentile(sl, length[it.id])] for it in items]
    weights, fold_list, _ = cv_weights(values, [it.human("Overall") for it in items], [it.group for it in items], 2)
    assert weights[0] != (0.5, 0.5)  # ROUGE-L (Spearman about .4 here) outweighs length
    for it, v, f in zip(items, values, fold_list, strict=True):
        w = weights[f]
        assert before[it.id] == pytest.approx((w[0] * v[0] + w[1] * v[1]) / sum(w))


def test_cli_score_records_the_fold_weights_its_rows_used(tmp_path, turn_examples):
    """`judge score FILE --fit cv -o OUT` writes the weights each fold learned into OUT.meta.json, and
    each row's score is its members' percentiles weighted by its own fold's entry."""
    from judge.scorers.ensemble_fit import fold_of

    out = tmp_path / "cv.jsonl"
    proc = _cli("score", str(turn_examples), "--member", "scorer=rouge-l", "--member", "scorer=length", "--fit", "cv",
                "--quality", "overall", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    fitted = json.loads(out.with_suffix(".meta.json").read_text())["fitted"]
    assert fitted["fit"] == "cv" and fitted["members"] == ["rouge-l", "length"]
    items = load_items(str(turn_examples))
    assert sum(fitted["fold_items"]) == len(items)
    members = [{s.item_id: s.value for s in create_classic(name).score(items)} for name in ("rouge-l", "length")]
    ref = [sorted(m.values()) for m in members]
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    for it in items:
        w = fitted["folds"][fold_of(it.group)]
        expected = sum(wi * percentile(r, m[it.id]) for wi, r, m in zip(w, ref, members, strict=True)) / sum(w)
        assert rows[it.id]["score"] == pytest.approx(expected, abs=2e-6)


def test_cv_fit_is_refused_without_ratings_to_learn_from():
    with pytest.raises(InputError, match="give weights or fit, not both"):
        MethodSpec(type="ensemble", fit="cv", weights=(1.0, 1.0), members=_cv_ensemble().settings.members)
    with pytest.raises(InputError, match="must be one of fixed, cv, lodo"):
        MethodSpec(type="ensemble", fit="loo", members=_cv_ensemble().settings.members)
    with pytest.raises(InputError, match="name the quality"):
        prepare(_cv_ensemble(), load_items(str(EXAMPLES)))
    proc = _cli("score", str(EXAMPLES), "--scorer", "length", "--fit", "cv")
    assert proc.returncode == 2 and "--fit needs ensemble members" in proc.stderr


# -- weights learned on the other sets (fit = "lodo") ------------------------------------------------

LODO_CONFIG = """
name = "lodo"
data_dir = "{data}"
output = "{out}"
datasets = ["TU", "DZ", "PU", "DGU"]
qualities = ["overall"]
limit = 60
[[methods]]
name = "rouge"
type = "classic"
scorer = "rouge-l"
[[methods]]
name = "len"
type = "classic"
scorer = "length"
[[methods]]
name = "lodo"
type = "ensemble"
members = ["rouge", "len"]
fit = "lodo"
[[methods]]
name = "cv"
type = "ensemble"
members = ["rouge", "len"]
fit = "cv"
"""
LODO_SETS = {"topical-usr": "Overall", "dailydialog-zhao": "appropriateness", "persona-usr": "Overall",
             "dailydialog-gupta": "overall"}


def _spearman(a, b) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def _training_sets(rows: dict[str, dict[str, list[dict]]], data_dir: Path, held_out: str) -> list[str]:
    """The sets lodo may learn ``held_out``'s weights on: the others whose scored items share no
    conversation with its scored items (DailyDialog-Zhao and -Gupta sample a few of the same dialogues)."""
    from judge.datasets.split import conversation_of

    def conversations(ds: str) -> set[str]:
        items = {it.id: it for it in load_benchmark(ds, data_dir)}
        return {conversation_of(items[r["id"]]) for r in rows[ds]["rouge"]}

    mine = conversations(held_out)
    return [ds for ds in LODO_SETS if ds != held_out and not conversations(ds) & mine]


def _lodo_expected(rows: dict[str, dict[str, list[dict]]], held_out: str,
                   training: list[str] | None = None) -> tuple[float, float]:
    """The weights (rouge, len) with the best mean Spearman over the ``training`` sets (default: the sets
    other than ``held_out``), searched here by brute force over multiples of 0.1, ties to the weights
    nearest equal."""
    best, best_rho = None, -2.0
    for a in sorted(range(11), key=lambda i: (abs(i - 5), i)):
        w = (a / 10, 1 - a / 10)
        rhos = []
        for ds in LODO_SETS:
            if ds == held_out or (training is not None and ds not in training):
                continue
            r, n = rows[ds]["rouge"], rows[ds]["len"]
            sr, sn = sorted(x["score"] for x in r), sorted(x["score"] for x in n)
            combined = [w[0] * percentile(sr, x["score"]) + w[1] * percentile(sn, y["score"]) for x, y in zip(r, n)]
            rhos.append(_spearman(combined, [x["human"] for x in r]))
        rho = sum(rhos) / len(rhos)
        if rho > best_rho + 1e-12:
            best, best_rho = w, rho
    assert best is not None
    return best


def _lodo_run(tmp_path, data_dir, load=None):
    tmp_path.mkdir(parents=True, exist_ok=True)
    out = tmp_path / "res"
    cfg = tmp_path / "lodo.toml"
    cfg.write_text(LODO_CONFIG.format(data=data_dir, out=out))
    run_experiment(load_experiment(cfg), progress=False, plots=False, load=load, log=lambda m: None)
    rows = {ds: {m: read_rows(cell_path(out, m, ds, q, 0)) for m in ("rouge", "len", "lodo")}
            for ds, q in LODO_SETS.items()}
    # The members' unrounded scores (rows keep 6 decimals, which can tie two different ROUGE values).
    for ds, by_method in rows.items():
        items = {it.id: it for it in load_benchmark(ds, data_dir)}
        cell = [items[r["id"]] for r in by_method["rouge"]]
        for m, scorer in (("rouge", "rouge-l"), ("len", "length")):
            exact = {s.item_id: s.value for s in create_classic(scorer).score(cell)}
            by_method[m] = [{**r, "score": exact[r["id"]]} for r in by_method[m]]
    return out, rows


@pytest.mark.slow
def test_lodo_weights_come_from_the_other_sets_only(tmp_path, data_dir):
    """Four sets with two model-free members (ROUGE-L against the reference, length): each set's
    ensemble score is the weighted mean of its members' percentiles with the weights that rank the
    *other three* sets best (checked by brute force), and rewriting one set's ratings leaves that
    set's scores exactly as they were while the weights of the others move."""
    import json

    out, rows = _lodo_run(tmp_path / "a", data_dir)
    training = {ds: _training_sets(rows, data_dir, ds) for ds in LODO_SETS}
    # This sample holds a DailyDialog dialogue that Zhao and Gupta both rate: neither learns on the other.
    assert training["dailydialog-zhao"] == ["topical-usr", "persona-usr"]
    assert training["topical-usr"] == ["dailydialog-zhao", "persona-usr", "dailydialog-gupta"]
    weights = {}
    for ds in LODO_SETS:
        w = weights[ds] = _lodo_expected(rows, ds, training[ds])
        r, n = rows[ds]["rouge"], rows[ds]["len"]
        sr, sn = sorted(x["score"] for x in r), sorted(x["score"] for x in n)
        for e, x, y in zip(rows[ds]["lodo"], r, n, strict=True):
            assert e["score"] == pytest.approx(w[0] * percentile(sr, x["score"]) + w[1] * percentile(sn, y["score"]),
                                               abs=2e-6)
        meta = json.loads(cell_path(out, "lodo", ds, LODO_SETS[ds], 0).with_suffix(".meta.json").read_text())
        assert meta["trained_on"] == [f"{d} {q}" for d, q in LODO_SETS.items() if d in training[ds]]
        left = {d: f"shares conversations with {ds}" for d in LODO_SETS if d != ds and d not in training[ds]}
        assert meta.get("not_trained_on", {}) == left
    assert len(set(weights.values())) > 1 or (0.5, 0.5) not in weights.values()
    _check_recorded_weights(out, rows, weights, training)

    # DailyDialog-Gupta's raters now prefer long replies, whatever they said: its own scores cannot move.
    from judge.datasets import load_benchmark

    def load(name):
        items = load_benchmark(name, data_dir)
        if name != "dailydialog-gupta":
            return items
        import dataclasses

        return [dataclasses.replace(it, annotations={"overall": (float(len(it.response or "")),)}) for it in items]

    _, again = _lodo_run(tmp_path / "b", data_dir, load)
    assert [r["score"] for r in again["dailydialog-gupta"]["lodo"]] == [r["score"] for r in rows["dailydialog-gupta"]["lodo"]]
    # Nor can DailyDialog-Zhao's, which shares a conversation with Gupta and so never learns on it.
    assert [r["score"] for r in again["dailydialog-zhao"]["lodo"]] == [r["score"] for r in rows["dailydialog-zhao"]["lodo"]]
    moved = [ds for ds in LODO_SETS if "dailydialog-gupta" in training[ds]
             and [r["score"] for r in again[ds]["lodo"]] != [r["score"] for r in rows[ds]["lodo"]]]
    assert moved, "a set whose training data now rewards length should get other weights"
    for ds in moved:
        assert _lodo_expected(again, ds, training[ds]) != weights[ds]


def _check_recorded_weights(out: Path, rows: dict[str, dict[str, list[dict]]],
                            lodo: dict[str, tuple[float, float]], training: dict[str, list[str]]) -> None:
    """The learned weights reach the results: each cell's fit file, ``summary.json`` and the report
    give lodo's vector and cv's per-fold vectors, as recomputed here from the members' scores."""
    import json

    from judge.harness.fitted import fitted_path
    from judge.scorers.ensemble_fit import cv_weights

    summary = json.loads((out / "summary.json").read_text())
    fitted = {(c["method"], c["dataset"]): c.get("fitted") for c in summary["cells"]}
    report = (out / "leaderboard.md").read_text()
    assert "## Learned ensemble weights" in report
    for ds, q in LODO_SETS.items():
        assert fitted[("rouge", ds)] is None and fitted[("len", ds)] is None
        f = fitted[("lodo", ds)]
        assert f == json.loads(fitted_path(cell_path(out, "lodo", ds, q, 0)).read_text())
        assert f["fit"] == "lodo" and f["members"] == ["rouge", "len"]
        assert f["weights"] == pytest.approx(list(lodo[ds]))
        assert f["trained_on"] == [f"{d} {qq}" for d, qq in LODO_SETS.items() if d in training[ds]]
        shared = [d for d in LODO_SETS if d != ds and d not in training[ds]]
        where = f"the other {len(training[ds])} sets" + (
            f"; not offered (share its conversations): {', '.join(shared)}" if shared else "")
        assert f"| lodo | {ds} | {q} | {where} | rouge {lodo[ds][0]:.2f}, len {lodo[ds][1]:.2f} |" in report
        r, n = rows[ds]["rouge"], rows[ds]["len"]
        sr, sn = sorted(x["score"] for x in r), sorted(x["score"] for x in n)
        values = [[percentile(sr, x["score"]), percentile(sn, y["score"])] for x, y in zip(r, n, strict=True)]
        folds, of_item, whole = cv_weights(values, [x["human"] for x in r], [x["group"] for x in r], 2)
        cv = fitted[("cv", ds)]
        assert cv["fit"] == "cv" and cv["folds"] == [list(w) for w in folds]
        assert cv["fold_items"] == [of_item.count(k) for k in range(5)] and cv["whole_reference"] == list(whole)
        assert f"| cv | {ds} | {q} | 5 folds by conversation (mean [range] over folds) | rouge " in report


def test_lodo_needs_other_sets(tmp_path, data_dir):
    cfg = tmp_path / "one.toml"
    cfg.write_text(LODO_CONFIG.format(data=data_dir, out=tmp_path / "r").replace(
        'datasets = ["TU", "DZ", "PU", "DGU"]', 'datasets = ["TU"]'))
    with pytest.raises(InputError, match=r"methods\[2\].*has none for topical-usr: give two datasets or more"):
        run_experiment(load_experiment(cfg), progress=False, plots=False, log=lambda m: None)
    # A second set with the same conversations (the original release of TopicalChat-USR) is no other set.
    cfg.write_text(cfg.read_text().replace('datasets = ["TU"]', 'datasets = ["TU", "usr-topical"]'))
    with pytest.raises(InputError, match=r"has none for topical-usr \(usr-topical share its conversations\)"):
        run_experiment(load_experiment(cfg), progress=False, plots=False, log=lambda m: None)
    proc = _cli("score", str(EXAMPLES), "--member", "scorer=length", "--member", "prompt=yesno", "--fit", "lodo",
                "--quality", "overall")
    assert proc.returncode == 2 and "other sets of a judge run experiment" in proc.stderr


def _lodo_config(tmp_path: Path, data_dir: Path, datasets: str, limit: int = 40) -> Path:
    cfg = tmp_path / "lodo.toml"
    cfg.write_text(LODO_CONFIG.format(data=data_dir, out=tmp_path / "res")
                   .replace('datasets = ["TU", "DZ", "PU", "DGU"]', f"datasets = {datasets}")
                   .replace("limit = 60", f"limit = {limit}").replace('scorer = "rouge-l"', 'scorer = "length"'))
    return cfg


def test_lodo_never_learns_on_a_set_that_shares_the_scored_conversations(tmp_path, data_dir):
    """FED-Turn's turns are cut from FED-Dial's dialogs: neither set's lodo weights are learned on the
    other, the meta and summary say so with the reason, and DailyDialog-Zhao (sharing nothing with them
    here) trains both."""
    cfg = _lodo_config(tmp_path, data_dir, '["FT", "FD", "DZ"]')
    summary = run_experiment(load_experiment(cfg), progress=False, plots=False, log=lambda m: None).to_dict()
    out = tmp_path / "res"
    for ds, other in (("fed-turn", "fed-dial"), ("fed-dial", "fed-turn")):
        meta = json.loads(cell_path(out, "lodo", ds, "Overall", 0).with_suffix(".meta.json").read_text())
        assert meta["trained_on"] == ["dailydialog-zhao appropriateness"]
        assert meta["not_trained_on"] == {other: f"shares conversations with {ds}"}
        fitted = next(c["fitted"] for c in summary["cells"] if c["method"] == "lodo" and c["dataset"] == ds)
        assert fitted["trained_on"] == ["dailydialog-zhao appropriateness"]
    assert {e["dataset"]: e["sets"] for e in summary["not_trained_on"] if e["method"] == "lodo"} == {
        "fed-turn": {"fed-dial": "shares conversations with fed-turn"},
        "fed-dial": {"fed-turn": "shares conversations with fed-dial"}}
    meta = json.loads(cell_path(out, "lodo", "dailydialog-zhao", "appropriateness", 0)
                      .with_suffix(".meta.json").read_text())
    assert meta["trained_on"] == ["fed-turn Overall", "fed-dial Overall"] and "not_trained_on" not in meta
    report = (out / "leaderboard.md").read_text()
    assert "| lodo | fed-turn | Overall | the other 1 sets; not offered (share its conversations): fed-dial |" in report
    assert "| lodo | dailydialog-zhao | appropriateness | the other 2 sets |" in report


@pytest.mark.slow
def test_lodo_never_learns_on_one_set_under_another_name_or_path(tmp_path, data_dir):
    """By content: the registered name and a path (or a renamed copy) of the same file, a release file given by
    path beside its DSTC10 copy, and two registered releases of one corpus are left out of each other's
    training, in both directions (before the guards read content: by path, fed_data.json trained FED-Turn's weights on 78 of its own
    183 scored items)."""
    copy = tmp_path / "copy.json"
    copy.write_bytes((data_dir / "dstc10_track5" / "topical-usr_eval.json").read_bytes())
    fed = (data_dir / "fed" / "fed_data.json").as_posix()
    for datasets, pairs in (
            (f'["TU", {{path = "{copy.as_posix()}", name = "tu-again"}}, "DZ"]', [("topical-usr", "tu-again")]),
            (f'["FT", {{path = "{fed}"}}, "FD", "DZ"]', [("fed-turn", "fed"), ("fed-dial", "fed"),
                                                          ("fed-turn", "fed-dial")]),
            ('["topical-usr", "usr-topical", "DZ"]', [("topical-usr", "usr-topical")])):
        cfg = _lodo_config(tmp_path, data_dir, datasets)
        summary = run_experiment(load_experiment(cfg), progress=False, plots=False, log=lambda m: None).to_dict()
        left_out = {e["dataset"]: set(e["sets"]) for e in summary["not_trained_on"] if e["method"] == "lodo"}
        fitted = {c["dataset"]: c["fitted"]["trained_on"] for c in summary["cells"] if c["method"] == "lodo"}
        for a, b in pairs:
            assert b in left_out[a] and a in left_out[b], (datasets, left_out)
            assert not any(t.startswith(f"{b} ") for t in fitted[a]) and not any(t.startswith(f"{a} ") for t in fitted[b])
        assert all(t.startswith("dailydialog-zhao ") for d, ts in fitted.items() if d != "dailydialog-zhao" for t in ts)
        shutil.rmtree(tmp_path / "res")


def test_lodo_reports_a_training_set_it_could_not_use(tmp_path, data_dir):
    """A training set whose ratings are all equal weighs nothing in the fit: the results list it as not
    used, with the reason, and never among the sets trained on."""
    cfg = _lodo_config(tmp_path, data_dir, '["TU", "DZ", "PU"]')

    def load(name):
        items = load_benchmark(name, data_dir)
        if name != "persona-usr":
            return items
        return [dataclasses.replace(it, annotations={"Overall": (3.0,)}) for it in items]

    summary = run_experiment(load_experiment(cfg), progress=False, plots=False, load=load, log=lambda m: None).to_dict()
    fitted = {c["dataset"]: c["fitted"] for c in summary["cells"] if c["method"] == "lodo"}
    assert fitted["topical-usr"]["trained_on"] == ["dailydialog-zhao appropriateness"]
    assert fitted["topical-usr"]["dropped"] == {"persona-usr Overall": "constant human ratings"}
    assert "dropped" not in fitted["persona-usr"]
    assert "the other 1 sets; not used: persona-usr Overall (constant human ratings)" in \
        (tmp_path / "res" / "leaderboard.md").read_text()
    # The meta file: the sets offered to the fit (a setting), then what the fit used and why it left one out.
    meta_file = cell_path(tmp_path / "res", "lodo", "topical-usr", "Overall", 0).with_suffix(".meta.json")
    meta = json.loads(meta_file.read_text())
    assert meta["training_offered"] == ["dailydialog-zhao appropriateness", "persona-usr Overall"]
    assert meta["trained_on"] == ["dailydialog-zhao appropriateness"]
    assert meta["dropped"] == {"persona-usr Overall": "constant human ratings"}

    def rerun(config: Path = cfg) -> dict:
        return run_experiment(load_experiment(config), progress=False, plots=False, load=load, log=lambda m: None).to_dict()

    # A resume with the same settings is accepted, and one killed after the fit file but before its meta got the
    # fit's outcome completes it; a meta that named the offered sets `trained_on` reads as the same settings.
    meta_file.write_text(json.dumps({k: v for k, v in meta.items() if k not in ("trained_on", "dropped")}))
    rerun()
    assert json.loads(meta_file.read_text()) == meta
    earlier = {**{k: v for k, v in meta.items() if k not in ("training_offered", "dropped")},
               "trained_on": meta["training_offered"]}
    assert meta_settings(earlier) == meta_settings(meta)
    # Other sets offered to the fit would give other weights: the resume is refused.
    fewer = tmp_path / "fewer.toml"
    fewer.write_text(cfg.read_text().replace('datasets = ["TU", "DZ", "PU"]', 'datasets = ["TU", "DZ"]'))
    with pytest.raises(InputError, match=r"different settings \(training_offered\)"):
        rerun(fewer)


def test_fit_weights_report_names_every_set_it_leaves_out():
    import numpy as np

    from judge.scorers.ensemble_fit import MIN_TRAIN, fit_weights_report, fit_weights_sets

    rng = np.random.default_rng(0)
    x = rng.random((30, 2))
    good = (x, x[:, 0] + 0.1 * rng.random(30))
    small = (x[: MIN_TRAIN - 1], x[: MIN_TRAIN - 1, 1])
    flat = (x, np.full(30, 2.0))
    members_flat = (np.ones((30, 2)), x[:, 1])
    weights, dropped = fit_weights_report([good, small, flat, members_flat], 2)
    assert weights == fit_weights_sets([good], 2) == fit_weights_sets([good, small, flat, members_flat], 2)
    assert weights[0] > weights[1]
    assert dropped == {1: f"{MIN_TRAIN - 1} items every member scored (fewer than {MIN_TRAIN})",
                       2: "constant human ratings",
                       3: "no weighting of the members correlates with the ratings (constant scores)"}


# -- optional members: left out where a set lacks their input ------------------------------------------
OPTIONAL_CONFIG = """
name = "optional"
data_dir = "{data}"
output = "{out}"
datasets = ["TU", "FT"]
qualities = ["overall"]
limit = 30
[[methods]]
name = "len"
type = "classic"
scorer = "length"
[[methods]]
name = "rouge"
type = "classic"
scorer = "rouge-l"
[[methods]]
name = "ens"
type = "ensemble"
members = ["len", "rouge"]
optional = ["rouge"]
"""


def test_optional_member_is_left_out_only_where_its_input_is_missing(tmp_path, data_dir):
    """Topical-USR has references and FED-Turn has none: the ensemble combines length and ROUGE-L on the
    first and is length's percentile alone on the second; the cell's meta says which member was left
    out and why, and the run lists the ROUGE-L cell itself as skipped, as before."""
    out = tmp_path / "res"
    cfg = tmp_path / "opt.toml"
    cfg.write_text(OPTIONAL_CONFIG.format(data=data_dir, out=out))
    logged: list[str] = []
    summary = run_experiment(load_experiment(cfg), progress=False, plots=False, log=logged.append).to_dict()
    assert [(lo["method"], lo["dataset"], list(lo["members"])) for lo in summary["left_out"]] == [
        ("ens", "fed-turn", ["rouge"])]
    assert "Ensemble `ens` on fed-turn Overall without its optional `rouge`" in (out / "leaderboard.md").read_text()
    for ds, q, both in (("topical-usr", "Overall", True), ("fed-turn", "Overall", False)):
        ens = read_rows(cell_path(out, "ens", ds, q, 0))
        items = {it.id: it for it in load_benchmark(ds, data_dir)}
        cell = [items[r["id"]] for r in ens]
        lengths = {s.item_id: s.value for s in create_classic("length").score(cell)}
        sl = sorted(lengths.values())
        expected = {i: percentile(sl, v) for i, v in lengths.items()}
        if both:
            rouge = {s.item_id: s.value for s in create_classic("rouge-l").score(cell)}
            sr = sorted(rouge.values())
            expected = {i: (expected[i] + percentile(sr, rouge[i])) / 2 for i in expected}
        assert [r["score"] for r in ens] == pytest.approx([expected[r["id"]] for r in ens], abs=2e-6)
        assert not any("member_failed" in (r.get("flags") or []) for r in ens)
        meta = json.loads(cell_path(out, "ens", ds, q, 0).with_suffix(".meta.json").read_text())
        if both:
            assert "left_out" not in meta
        else:
            assert list(meta["left_out"]) == ["rouge"] and "'reference'" in meta["left_out"]["rouge"]
    assert len({r["score"] for r in read_rows(cell_path(out, "ens", "topical-usr", "Overall", 0))}) > 1


def test_a_required_member_without_its_input_stops_the_run_naming_it(tmp_path, data_dir):
    cfg = tmp_path / "opt.toml"
    cfg.write_text(OPTIONAL_CONFIG.format(data=data_dir, out=tmp_path / "res").replace('optional = ["rouge"]\n', ""))
    with pytest.raises(InputError, match=r"fed-turn Overall: .*member 'rouge': scorer 'rouge-l' needs 'reference'.*"
                                         r"list it under optional"):
        run_experiment(load_experiment(cfg), progress=False, plots=False, log=lambda m: None)
    assert not (tmp_path / "res").exists() or not list((tmp_path / "res").rglob("*.jsonl"))


def test_optional_is_checked_with_the_spec():
    length, rouge = MethodSpec(type="classic", scorer="length"), MethodSpec(type="classic", scorer="rouge-l")
    with pytest.raises(InputError, match="bleu4 is not a member"):
        MethodSpec(type="ensemble", members=(length, rouge), optional=("bleu4",))
    with pytest.raises(InputError, match="fit = 'lodo' learns one weight per member"):
        MethodSpec(type="ensemble", members=(length, rouge), optional=("rouge-l",), fit="lodo")
    with pytest.raises(InputError, match="belong to ensembles"):
        MethodSpec(type="classic", scorer="length", optional=("length",))
    base = {"datasets": ["FT"], "methods": [{"type": "classic", "scorer": "length"}]}
    bad = {**base, "methods": [*base["methods"], {"type": "classic", "scorer": "rouge-l"},
                               {"type": "ensemble", "members": ["length", "rouge-l"], "optional": ["rouge"]}]}
    with pytest.raises(InputError, match=r"methods\[2\].optional: rouge is not a member"):
        parse_experiment(bad, "x.toml")
    # Given weights follow the members kept; a set left with only weight-0 members is refused.
    ens = MethodSpec(type="ensemble", members=(length, rouge), optional=("rouge-l",), weights=(0.0, 1.0))
    no_refs = [it for it in load_items(EXAMPLES) if it.level == "turn"]
    no_refs = [dataclasses.replace(it, references=()) for it in no_refs]
    with pytest.raises(InputError, match="only members with weight 0 are left"):
        prepare(ens, no_refs)
    kept = prepare(ens.with_changes(weights=(2.0, 1.0)), no_refs)
    assert [m.spec.name for m in kept.members] == ["length"] and kept_weights(kept) == (2.0,)
    assert kept.left_out[0][0] == "rouge-l"


def test_cli_optional_member_flag(tmp_path):
    """`--member scorer=rouge-l,optional=true` on the example file (its dialog records have no reference):
    the ensemble scores every record, and the meta records where ROUGE-L was left out."""
    rows = tmp_path / "rows.jsonl"
    dialogs = tmp_path / "dialogs.jsonl"
    dialogs.write_text("".join(line + "\n" for line in EXAMPLES.read_text().splitlines() if '"dialog"' in line))
    proc = _cli("score", str(dialogs), "--member", "scorer=length", "--member", "scorer=rouge-l,optional=true",
                "-o", str(rows))
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(x) for x in rows.read_text().splitlines()]
    assert out and all(r["score"] is not None for r in out)
    meta = json.loads(rows.with_suffix(".meta.json").read_text())
    assert meta["spec"]["optional"] == ["rouge-l"]
    proc = _cli("score", str(dialogs), "--member", "scorer=length", "--member", "scorer=rouge-l", "-o", str(rows))
    assert proc.returncode == 2 and "member 'rouge-l'" in proc.stderr and "optional" in proc.stderr


@pytest.mark.slow  # every item of both sets (the shared name is one item of each)
def test_lodo_learns_across_corpora_whose_texts_share_a_name(tmp_path, data_dir):
    """PredictiveEngagement's ConvAI turns (PEC) and its DailyDialog turns (PED) hold one query whose text names
    a conversation of both ("What do you mean ?"); two corpora share no conversation, so each set's lodo weights
    are learned on the other."""
    cfg = _lodo_config(tmp_path, data_dir, '["PED", "PEC"]', limit=5000)
    summary = run_experiment(load_experiment(cfg), progress=False, plots=False, log=lambda m: None).to_dict()
    assert "not_trained_on" not in summary
    for ds, other in (("engagement-dailydialog", "engagement-convai"), ("engagement-convai", "engagement-dailydialog")):
        meta = json.loads(cell_path(tmp_path / "res", "lodo", ds, "engagement", 0).with_suffix(".meta.json").read_text())
        assert meta["trained_on"] == [f"{other} engagement"]
