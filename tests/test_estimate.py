"""judge estimate: PPI++ intervals over conversations on constructed data with known truth, agreement with
ppi-python's PPI++ on unclustered inputs, the refusals, the command end to end (mock and real SmolLM2), and
docs/trust.md's commands."""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from judge.cli import main
from judge.core.errors import InputError
from judge.records.labels import Label, append_label
from judge.records.pair_rows import PairRow
from judge.records.rows import Row, read_records, read_rows
from judge.report.coverage_table import coverage_markdown, load_coverage, splice_coverage
from judge.report.estimate_join import join_labels, join_pair_labels, scored_rows
from judge.stats import ppi
from judge.stats.estimate import Joined, estimate, uniformity_p

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def _row(i: int, system: str, conv: str, score: float, human: float | None = None) -> Row:
    return Row(id=f"r{i}", method="m", seed=0, quality="overall", human=human, score=score, label_probs=None,
               examples=(), flags=(), estimated=False, complete=True, error=None, system=system, group=conv,
               n_prompt_tokens=0)


def biased_world(seed: int = 0, n_conv: int = 150, per: int = 2) -> tuple[list[Row], np.ndarray]:
    """Two systems answer the same conversations; people rate B 0.4 higher. The judge sees the rating through
    noise and a bias: it rates A 0.6 too high and B 0.2 too low, so its own difference has the wrong sign."""
    rng = np.random.default_rng(seed)
    rows, human = [], []
    for c in range(n_conv):
        base = rng.normal(3.0, 0.6)
        for system, shift, bias in (("A", 0.0, 0.6), ("B", 0.4, -0.2)):
            for _ in range(per):
                y = base + shift + rng.normal(0, 0.5)
                rows.append(_row(len(rows), system, f"c{c}", y + bias + rng.normal(0, 0.3)))
                human.append(y)
    return rows, np.array(human)


def _uniform(n_rows: int, n: int, seed: int) -> np.ndarray:
    weight = np.zeros(n_rows)
    weight[np.random.default_rng(seed).permutation(n_rows)[:n]] = 1.0
    return weight


def test_a_biased_judge_is_corrected_and_its_own_mean_is_not():
    rows, human = biased_world()
    joined = Joined(np.where(_uniform(len(rows), 120, 1) > 0, human, np.nan), _uniform(len(rows), 120, 1), 1, False)
    est = estimate(scored_rows(rows), joined, n_boot=500)
    truth = {s: human[[r.system == s for r in rows]].mean() for s in ("A", "B")}
    by = {g.name: g for g in est.groups}
    diff = est.differences[0]
    assert diff.name == "A - B"
    for s in ("A", "B"):  # PPI covers each system's human mean; the judge's own mean misses it
        assert by[s].ppi_low <= truth[s] <= by[s].ppi_high
        assert not by[s].ppi_low <= by[s].judge_mean <= by[s].ppi_high
    assert diff.ppi_low <= truth["A"] - truth["B"] <= diff.ppi_high < 0 < diff.judge_mean
    # the judge correlates within systems: narrower than labels only, worth more labels than were given
    assert diff.ppi_high - diff.ppi_low < 0.8 * (diff.labels_only_high - diff.labels_only_low)
    assert diff.effective_n > 1.5 * diff.n_labels


def test_coverage_holds_over_draws_where_the_naive_interval_fails():
    """60 seeded draws of 60 labels from the biased world: PPI covers the difference near 95% of the time."""
    rows, human = biased_world(seed=3, n_conv=80)
    groups = np.array([r.system == "B" for r in rows], dtype=int)
    convs = np.array([int(r.group[1:]) for r in rows])  # type: ignore[index]
    lay = ppi.layout(convs, groups, np.array([r.score for r in rows]))
    _, matrix = ppi.contrasts(["A", "B"])
    weight = np.stack([_uniform(len(rows), 60, s) for s in range(60)])
    d = ppi.estimate_draws(lay, weight, np.broadcast_to(human, weight.shape), matrix, ppi.boot_counts(80, 400, 0),
                           fraction=np.full(60, 60 / len(rows)))
    truth = matrix @ np.array([human[groups == 0].mean(), human[groups == 1].mean()])
    covered = (d.ppi_low <= truth) & (truth <= d.ppi_high)
    assert covered.mean() >= 0.88
    judge_diff = (matrix @ np.array([lay.f_sum[:, 0].sum() / lay.n_sum[:, 0].sum(),
                                     lay.f_sum[:, 1].sum() / lay.n_sum[:, 1].sum()]))[2]
    assert not ((d.ppi_low[:, 2] <= judge_diff) & (judge_diff <= d.ppi_high[:, 2])).any()


def test_agrees_with_ppi_python_on_unclustered_items():
    """The authors' package (ppi-python 0.2.3, in the ``test`` extra). Its wheel also installs a top-level
    ``tests`` package; this repository's tests/ is a package of its own, found first, so the two do not mix."""
    import ppi_py
    rng = np.random.default_rng(7)
    n_all, n = 5000, 300
    f = rng.normal(size=n_all)
    y = 2.5 + 0.8 * f + rng.normal(scale=0.6, size=n_all)
    lab = _uniform(n_all, n, 2) > 0
    lay = ppi.layout(np.arange(n_all), np.zeros(n_all, dtype=int), f)
    _, matrix = ppi.contrasts(["all"])
    d = ppi.estimate_draws(lay, lab[None].astype(float), np.where(lab, y, 0)[None], matrix,
                           ppi.boot_counts(n_all, 1000, 0), target="traffic")
    lam = float(d.lam[0, 0])
    # the same lambda gives the same point; the tuned lambdas and the intervals agree to bootstrap tolerance
    assert float(ppi_py.ppi_mean_pointestimate(y[lab], f[lab], f, lam=lam)[0]) == pytest.approx(d.ppi[0, 0], abs=1e-9)
    low, high = (float(x[0]) for x in ppi_py.ppi_mean_ci(y[lab], f[lab], f, alpha=0.05))
    width = high - low
    theirs = ppi_py.ppi_mean_pointestimate(y[lab], f[lab], f)
    assert float(theirs[0]) == pytest.approx(d.ppi[0, 0], abs=0.1 * width)
    assert d.ppi_low[0, 0] == pytest.approx(low, abs=0.08 * width)
    assert d.ppi_high[0, 0] == pytest.approx(high, abs=0.08 * width)
    c_low, c_high = ppi_py.classical_mean_ci(y[lab], alpha=0.05)
    assert d.naive_high[0, 0] - d.naive_low[0, 0] == pytest.approx(c_high - c_low, rel=0.08)


def test_inverse_probability_weights_undo_a_sample_that_favours_good_items():
    rows, human = biased_world(seed=5, n_conv=200)
    rng = np.random.default_rng(0)
    p = np.clip(0.05 + 0.1 * (human - human.min()), 0.05, 0.6)  # better items are likelier to be labelled
    chosen = rng.random(len(rows)) < p
    labels = [Label(rows[i].id, {"overall": float(human[i])}, "r1", probability=float(p[i]))
              for i in np.flatnonzero(chosen)]
    est = estimate(scored_rows(rows), join_labels([r.id for r in rows], labels, "overall", "labels.jsonl"), n_boot=400)
    truth = human[[r.system == "A" for r in rows]].mean()
    a = est.groups[0]
    assert est.weighted and a.ppi_low <= truth <= a.ppi_high
    plain = human[chosen & np.array([r.system == "A" for r in rows])].mean()
    assert plain > a.ppi_high  # an unweighted mean of the chosen items is biased upwards


def test_several_raters_are_averaged_per_item():
    rows = [_row(i, "A", f"c{i}", 0.5) for i in range(3)]
    labels = [Label("r0", {"overall": 2.0}, "ann"), Label("r0", {"overall": 4.0}, "bob"),
              Label("r0", {"overall": 5.0}, "ann")]  # ann changed her mind: her later answer counts
    joined = join_labels([r.id for r in rows], labels, "overall", "l.jsonl")
    assert joined.label[0] == 4.5 and joined.n_raters == 2 and np.isnan(joined.label[1])


def test_refuses_labels_from_one_system_only():
    rows, human = biased_world(n_conv=40)
    labels = [Label(r.id, {"overall": float(h)}) for r, h in zip(rows, human, strict=True) if r.system == "A"][:30]
    with pytest.raises(InputError, match="not a uniform random sample"):
        estimate(scored_rows(rows), join_labels([r.id for r in rows], labels, "overall", "l.jsonl"))
    assert uniformity_p([100, 100], [10, 12]) > 0.5


def test_refuses_mixed_probabilities_unknown_ids_and_bad_probabilities():
    rows = [_row(i, "A", f"c{i}", 0.5) for i in range(4)]
    with pytest.raises(InputError, match="every probability or none"):
        join_labels([r.id for r in rows], [Label("r0", {"overall": 1.0}, probability=0.5), Label("r1", {"overall": 2.0})],
                    "overall", "l.jsonl")
    with pytest.raises(InputError, match="not in the rows"):
        join_labels([r.id for r in rows], [Label("zz", {"overall": 1.0})], "overall", "l.jsonl")
    with pytest.raises(InputError, match="probability must be"):
        join_labels([r.id for r in rows], [Label("r0", {"overall": 1.0}, probability=0.0)], "overall", "l.jsonl")
    with pytest.raises(InputError, match="no label of quality"):
        join_labels([r.id for r in rows], [Label("r0", {"coherent": 1.0})], "overall", "l.jsonl")


def test_the_command_on_a_mock_run_writes_text_and_json(tmp_path, capsys):
    rows_path = tmp_path / "rows.jsonl"
    assert main(["bench", "TU", "--data-dir", str(DATA), "--backend", "mock", "--no-progress", "--no-cache",
                 "--limit", "180", "-o", str(rows_path)]) == 0
    rows = read_rows(rows_path)
    for i in np.random.default_rng(0).permutation(len(rows))[:90]:
        append_label(tmp_path / "labels.jsonl", Label(rows[i].id, {"Overall": rows[i].human}, "ann"))  # type: ignore[dict-item]
    capsys.readouterr()
    assert main(["estimate", str(rows_path), "--labels", str(tmp_path / "labels.jsonl"), "--bootstrap", "300",
                 "--json", str(tmp_path / "est.json")]) == 0
    text = capsys.readouterr().out
    assert "90 labelled by 1 rater(s)" in text and "Argmax Decoding - Nucleus Decoding (p = 0.3)" in text
    doc = json.loads((tmp_path / "est.json").read_text())[0]
    assert len(doc["groups"]) == 6 and len(doc["differences"]) == 15
    assert sum(g["n_labels"] for g in doc["groups"]) == 90
    # rows' own human values are never labels unless asked
    assert main(["estimate", str(rows_path)]) == 2


def test_a_chat_log_groups_by_a_meta_field(tmp_path, capsys):
    rows = []
    for i in range(40):
        row = _row(i, None, f"c{i}", float(i % 5), None)  # type: ignore[arg-type]
        rows.append(json.dumps({**row.to_dict(), "meta": {"version": "v1" if i % 2 else "v2"}}))
    (tmp_path / "rows.jsonl").write_text("\n".join(rows) + "\n")
    for i in range(0, 40, 2):
        append_label(tmp_path / "l.jsonl", Label(f"r{i}", {"overall": float(i % 5) + 1}))
        append_label(tmp_path / "l.jsonl", Label(f"r{i + 1}", {"overall": float((i + 1) % 5) + 1}))
    assert main(["estimate", str(tmp_path / "rows.jsonl"), "--labels", str(tmp_path / "l.jsonl"), "--by", "version",
                 "--bootstrap", "200"]) == 0
    out = capsys.readouterr().out
    assert "v2 - v1" in out and "version" in out


def test_the_coverage_benchmark_on_constructed_rows(tmp_path):
    estimate_coverage = _coverage_module()
    rows, human = biased_world(seed=2, n_conv=60)
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(Row(**{**r.__dict__, "human": float(h)}).to_json() + "\n"
                            for r, h in zip(rows, human, strict=True)))
    r = estimate_coverage.run_one(path, 60, 100, 200, seed=0)
    assert r is not None and r["systems"] == 2
    assert 0.85 <= r["differences"]["coverage_ppi"] <= 1.0 and r["differences"]["width_ratio"] < 0.8
    table = coverage_markdown({"results": [{"set": "X", "judge": "biased", **r}]})
    assert table.count("\n| X | biased | 60 | 2 |") == 1


def test_the_coverage_benchmark_updates_some_sets_and_keeps_the_others(tmp_path, capsys):
    """``--update`` replaces the results of ``--sets`` in the summary and keeps every other set's: a set whose
    ratings changed is drawn again without the model judges' rows of the others."""
    estimate_coverage = _coverage_module()
    rows, human = biased_world(seed=2, n_conv=60)
    text = "".join(Row(**{**r.__dict__, "human": float(h)}).to_json() + "\n" for r, h in zip(rows, human, strict=True))
    for name in ("X", "Y"):
        (tmp_path / f"{name}-biased.jsonl").write_text(text)
    out = tmp_path / "coverage.json"
    common = ["--rows-dir", str(tmp_path), "--ns", "60", "--draws", "20", "--bootstrap", "20", "--output", str(out)]
    estimate_coverage.main([*common, "--sets", "X,Y"])
    before = json.loads(out.read_text())["results"]
    (tmp_path / "Y-biased.jsonl").write_text(text.replace('"human": ', '"human": 1'))  # Y's ratings change
    estimate_coverage.main([*common, "--sets", "Y", "--update"])
    after = json.loads(out.read_text())["results"]
    assert [r["set"] for r in after] == ["X", "Y"] and after[0] == before[0] and after[1] != before[1]
    capsys.readouterr()


def _doc_commands() -> list[str]:
    text = (ROOT / "docs" / "trust.md").read_text(encoding="utf-8")
    from tests.test_docs_commands import fenced_blocks

    return [line for block in fenced_blocks(text, ("bash",)) for line in block.splitlines()
            if line.startswith(("judge ", "python "))]


def _coverage_module():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import estimate_coverage
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return estimate_coverage


def test_the_trust_page_coverage_table_is_the_committed_summary():
    """No coverage figure is typed: the table between the markers, and the results page's section, are what
    the committed summary gives (``judge results render`` writes both)."""
    summary = load_coverage(ROOT)
    assert summary is not None
    page = (ROOT / "docs" / "trust.md").read_text(encoding="utf-8")
    assert splice_coverage(page, coverage_markdown(summary)) == page
    assert coverage_markdown(summary) in (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    assert {r["set"] for r in summary["results"]} >= {"TU", "PU", "DZ", "RE1", "RE2", "REI"}
    assert summary["draws"] >= 1000 and {r["n"] for r in summary["results"]} == {25, 50, 100, 200}


@pytest.mark.slow
def test_the_trust_page_commands_run(tmp_path):
    """docs/trust.md's example, as printed, from the repository root's point of view (data beside it): the
    lines of the table it shows are what the command prints, and --markdown prints the page's table."""
    commands = _doc_commands()
    assert any(c.startswith("judge estimate") for c in commands)
    printed = ""
    for command in commands:
        argv = shlex.split(command.replace("../shared/data", str(DATA)).replace(
            "benchmarks/", str(ROOT / "benchmarks") + "/"))
        argv = [sys.executable, "-m", "judge", *argv[1:]] if argv[0] == "judge" else [sys.executable, *argv[1:]]
        if "qwen2.5-coder-1.5b" in argv:  # the model judges' rows take minutes: their plan, which checks the rest
            argv.append("--check")
        # a fresh HOME has no saved speed figure, so --check first times the model: a minute idle, more when loaded
        done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (command, done.stderr)
        printed += done.stdout
    written = json.loads((tmp_path / "tu-estimate.json").read_text())
    assert written[0]["n_labelled"] == 80
    from tests.test_estimate_view import page_data

    assert page_data(tmp_path / "tu-estimate.html")["sections"] == {"estimate": written}
    page = (ROOT / "docs" / "trust.md").read_text(encoding="utf-8")
    shown = page[page.index("Two lines of what"):].split("```text\n")[1].split("```")[0]
    for line in shown.splitlines():
        assert line in printed
    start = page.index("<!-- coverage:start -->\n") + len("<!-- coverage:start -->\n")
    assert page[start:page.index("<!-- coverage:end -->")] in printed


@pytest.mark.slow
def test_smollm2_scores_a_file_that_is_labelled_and_estimated(tmp_path, capsys):
    """The real model (the default SmolLM2) end to end: score both example bots' replies, label every other
    item, estimate each bot's human mean and their difference."""
    both = tmp_path / "bots.jsonl"
    lines = [json.loads(line) for v in ("v1", "v2")
             for line in (ROOT / "examples" / f"bot_{v}.jsonl").read_text().splitlines()]
    both.write_text("".join(json.dumps({**d, "id": f"{d['system']}-{d['id']}"}) + "\n" for d in lines))
    rows_path = tmp_path / "rows.jsonl"
    assert main(["score", str(both), "--no-progress", "--no-cache", "-o", str(rows_path)]) == 0
    rows = read_rows(rows_path)
    assert len(rows) == 16 and all(r.score is not None for r in rows)
    for r in rows[::2]:
        append_label(tmp_path / "labels.jsonl", Label(r.id, {r.quality or "overall": 3.0}, "ann"))
    capsys.readouterr()
    assert main(["estimate", str(rows_path), "--labels", str(tmp_path / "labels.jsonl"), "--bootstrap", "200"]) == 0
    out = capsys.readouterr().out
    assert "bot-v1 - bot-v2" in out and "too few conversations" in out


def test_pair_rows_give_win_rates_from_the_items_labels(tmp_path, capsys):
    """judge compare's pair rows: a pair is labelled when both replies are; the verdict is for the first system in
    name order whichever side the judge read it on."""
    pairs = tmp_path / "pairs.jsonl"
    assert main(["compare", "--dataset", "TU", "--data-dir", str(DATA), "--backend", "mock", "--no-progress",
                 "--no-cache", "--limit", "30", "--systems", "New Human Generated,Argmax Decoding", "-o", str(pairs)]) == 0
    rows = [json.loads(line) for line in pairs.read_text().splitlines()]
    human = {r[f"item_{s}"]: r[f"human_{s}"] for r in rows for s in "ab"}
    for item in sorted(human)[::2] + sorted(human)[1::4]:
        append_label(tmp_path / "l.jsonl", Label(item, {"Overall": human[item]}, "ann"))
    capsys.readouterr()
    assert main(["estimate", str(pairs), "--labels", str(tmp_path / "l.jsonl"), "--bootstrap", "200",
                 "--json", str(tmp_path / "e.json")]) == 0
    doc = json.loads((tmp_path / "e.json").read_text())[0]
    [group] = doc["groups"]
    assert group["name"] == "Argmax Decoding vs New Human Generated" and doc["differences"] == []
    labelled = [r for r in rows if r["item_a"] in human and r["item_b"] in human
                and {r["item_a"], r["item_b"]} <= set(sorted(human)[::2] + sorted(human)[1::4])]
    wins = [(r["human_a"] > r["human_b"]) + 0.5 * (r["human_a"] == r["human_b"]) for r in labelled]
    wins = [w if r["system_a"] == "Argmax Decoding" else 1 - w for w, r in zip(wins, labelled, strict=True)]
    assert group["n_labels"] == len(labelled) and group["labels_only"] == pytest.approx(np.mean(wins))


def test_one_labels_file_serves_a_folder_whose_pair_cell_leaves_systems_out(tmp_path, capsys):
    """A results folder of an item cell (every system) and a pair cell of two systems: for the pairs, the labels of
    the other systems' items are skipped and counted; a label of an item in no cell is still refused."""
    cell = tmp_path / "run" / "items" / "mock" / "topical-usr" / "Overall" / "seed0.jsonl"
    pairs = tmp_path / "run" / "compare" / "mock-pw" / "topical-usr" / "Overall" / "pairs.jsonl"
    assert main(["bench", "TU", "--data-dir", str(DATA), "--backend", "mock", "--no-progress", "--no-cache",
                 "-o", str(cell)]) == 0
    assert main(["compare", "--dataset", "TU", "--data-dir", str(DATA), "--backend", "mock", "--no-progress",
                 "--no-cache", "--systems", "New Human Generated,Argmax Decoding", "-o", str(pairs)]) == 0
    rows, labels = read_rows(cell), tmp_path / "l.jsonl"
    chosen = [rows[i] for i in np.random.default_rng(1).permutation(len(rows))[:len(rows) // 2]]
    for r in chosen:
        append_label(labels, Label(r.id, {"Overall": r.human}, "ann"))  # type: ignore[dict-item]
    pair_rows = read_records(pairs, PairRow)
    outside = len({r.id for r in chosen} - {x for p in pair_rows for x in (p.item_a, p.item_b)})
    capsys.readouterr()
    assert main(["estimate", str(tmp_path / "run"), "--labels", str(labels), "--bootstrap", "200",
                 "--json", str(tmp_path / "e.json")]) == 0
    items, pair = json.loads((tmp_path / "e.json").read_text())
    assert items["labelled_outside"] == 0 and pair["labelled_outside"] == outside > 0
    assert pair["groups"][0]["name"] == "Argmax Decoding vs New Human Generated"
    assert f"note: {outside} labelled items are in none of these rows" in capsys.readouterr().out
    stray = [Label("nowhere", {"Overall": 3.0}, "ann")]
    with pytest.raises(InputError, match="'nowhere' is not in the rows"):
        join_pair_labels(pair_rows, stray, "Overall", str(labels), {r.id for r in rows})
    append_label(labels, stray[0])
    assert main(["estimate", str(tmp_path / "run"), "--labels", str(labels), "--bootstrap", "200"]) == 2
    assert f"{labels}, record nowhere, field 'id': labelled item 'nowhere' is not in the rows" in capsys.readouterr().err


def _two_sets(tmp_path: Path, labelled: tuple[str, ...]) -> tuple[Path, list[Path], Path, dict[str, int]]:
    """A results folder of two item cells on different sets, same quality (``judge bench TU`` and ``PU``), and one
    labels file on a uniform half of each ``labelled`` set's rows: the folder, its cells, the labels, the counts."""
    run, labels, counts = tmp_path / "run", tmp_path / "l.jsonl", {}
    cells = [run / "items" / "mock" / name / "Overall" / "seed0.jsonl" for name in ("pc-usr", "topical-usr")]
    for dataset, cell in zip(("PU", "TU"), cells, strict=True):
        assert main(["bench", dataset, "--data-dir", str(DATA), "--backend", "mock", "--no-progress", "--no-cache",
                     "--limit", "120", "-o", str(cell)]) == 0
        rows = read_rows(cell)
        chosen = np.random.default_rng(1).permutation(len(rows))[:len(rows) // 2] if dataset in labelled else []
        for i in chosen:
            append_label(labels, Label(rows[i].id, {"Overall": rows[i].human}, "ann"))  # type: ignore[dict-item]
        counts[dataset] = len(chosen)
    return run, cells, labels, counts


def test_one_labels_file_serves_a_folder_of_item_cells_on_two_sets(tmp_path, capsys):
    """Each item cell skips and counts the labels of the other cell's items; a label of an item in no cell is
    still refused, naming the labels file, record and field."""
    run, _, labels, counts = _two_sets(tmp_path, ("PU", "TU"))
    capsys.readouterr()
    assert main(["estimate", str(run), "--labels", str(labels), "--bootstrap", "200", "--json",
                 str(tmp_path / "e.json")]) == 0
    pu, tu = json.loads((tmp_path / "e.json").read_text())
    assert (pu["n_labelled"], pu["labelled_outside"]) == (counts["PU"], counts["TU"])
    assert (tu["n_labelled"], tu["labelled_outside"]) == (counts["TU"], counts["PU"]) and len(tu["groups"]) == 6
    text = capsys.readouterr().out
    assert f"note: {counts['TU']} labelled items are in none of these rows" in text
    append_label(labels, Label("nowhere", {"Overall": 3.0}, "ann"))
    assert main(["estimate", str(run), "--labels", str(labels), "--bootstrap", "200"]) == 2
    assert f"{labels}, record nowhere, field 'id': labelled item 'nowhere' is not in the rows" in capsys.readouterr().err


def test_a_folder_cell_with_none_of_the_labels_is_reported_and_the_others_estimated(tmp_path, capsys):
    """Labels on one set's items only: the other set's cell is reported (a line, a record without groups, and on
    the page the same), not an error; a single file keeps refusing labels not in its rows; if no cell of the
    labels' quality holds one of them, the folder is refused."""
    run, (pu_cell, tu_cell), labels, counts = _two_sets(tmp_path, ("TU",))
    capsys.readouterr()
    assert main(["estimate", str(run), "--labels", str(labels), "--bootstrap", "200", "--json",
                 str(tmp_path / "e.json")]) == 0
    pu, tu = json.loads((tmp_path / "e.json").read_text())
    assert (pu["groups"], pu["differences"], pu["n_labelled"], pu["labelled_outside"]) == ([], [], 0, counts["TU"])
    assert (pu["n_rows"], tu["n_labelled"], tu["labelled_outside"]) == (120, counts["TU"], 0) and tu["groups"]
    text = capsys.readouterr().out
    assert (f"{pu_cell}: quality Overall, 120 rows in {pu['n_conversations']} conversations, none of them labelled: "
            f"not estimated\nnote: {counts['TU']} labelled items are in none of these rows") in text
    assert f"{tu_cell}: quality Overall, 120 rows in" in text
    assert main(["estimate", str(pu_cell), "--labels", str(labels), "--bootstrap", "200"]) == 2
    assert re.search(rf"{re.escape(str(labels))}, record (topical-usr_\d+), field 'id': labelled item '\1' is not in "
                     "the rows", capsys.readouterr().err)  # a single file: refused as before
    engaging = tu_cell.parent.parent / "Engaging" / "seed0.jsonl"  # the labelled set now rated for another quality
    engaging.parent.mkdir()
    engaging.write_text("".join(dataclasses.replace(r, quality="Engaging").to_json() + "\n" for r in read_rows(tu_cell)))
    tu_cell.unlink()
    assert main(["estimate", str(run), "--labels", str(labels), "--bootstrap", "200"]) == 2
    assert "no cell of this folder holds a labelled item of its quality" in capsys.readouterr().err
