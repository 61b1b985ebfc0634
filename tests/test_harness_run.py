"""`judge run` end to end with the `length` classic scorer (fast) and resume after a torn write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judge.core.errors import InputError
from judge.engine import ROW_KEYS
from judge.harness import load_experiment, run_experiment

ROOT = Path(__file__).resolve().parents[1]

CONFIG = """
name = "len"
limit = 30
datasets = ["DGR", {{name = "fed-turn", qualities = ["Overall", "Interesting"]}}, "FD"]
compare = [["length", "length-2"]]
[[methods]]
type = "classic"
scorer = "length"
paper = "Flan-T5-3B 4ex"
[[methods]]
type = "classic"
scorer = "length"
name = "length-2"
"""


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / "items").rglob("*.jsonl"))}


@pytest.fixture()
def config(tmp_path: Path, data_dir: Path) -> Path:
    p = tmp_path / "exp.toml"
    p.write_text(CONFIG.format())
    return p


def _run(config: Path, data_dir: Path, out: Path, plots: bool = False) -> dict:
    exp = load_experiment(config).with_overrides(data_dir=str(data_dir), output=str(out))
    return run_experiment(exp, progress=False, plots=plots, log=lambda m: None).to_dict()


def test_run_writes_results_folder(config, data_dir, tmp_path):
    out = tmp_path / "r"
    summary = _run(config, data_dir, out, plots=True)
    files = _files(out)
    assert len(files) == 2 * 4  # 2 methods x (DGR, FT Overall, FT Interesting, FD)
    rows = [json.loads(x) for x in files["items/length/dailydialog-grade/relevance/seed0.jsonl"].splitlines()]
    assert len(rows) == 30
    assert tuple(rows[0]) == ROW_KEYS  # the one row schema of score, bench and run
    assert rows[0]["method"] == "length" and rows[0]["seed"] is None and rows[0]["quality"] == "relevance"
    assert all(r["error"] is None and r["score"] >= 0 for r in rows)
    res = {(r["method"], r["dataset"], r["quality"]): r for r in summary["results"]}
    r = res[("length", "dailydialog-grade", "relevance")]
    assert r["n"] == 30 and r["ci"]["low"] <= r["spearman"] <= r["ci"]["high"]
    # Same items for every method, and the FT qualities share the set-level subset.
    a = [x["id"] for x in rows]
    b = [json.loads(x)["id"] for x in files["items/length-2/dailydialog-grade/relevance/seed0.jsonl"].splitlines()]
    assert a == b
    assert summary["ceiling"]["dailydialog-grade"]["relevance"]["interval"] is not None
    assert summary["comparisons"] and summary["comparisons"][0]["diff"] == 0
    for name in ("summary.json", "leaderboard.md", "leaderboard.html", "results.csv", "plots/heatmap.png"):
        assert (out / name).stat().st_size > 0


@pytest.mark.slow
def test_same_config_twice_is_byte_identical(config, data_dir, tmp_path):
    _run(config, data_dir, tmp_path / "a")
    _run(config, data_dir, tmp_path / "b")
    assert _files(tmp_path / "a") == _files(tmp_path / "b")


@pytest.mark.slow
def test_resume_after_torn_write_and_garbage(config, data_dir, tmp_path):
    ref, out = tmp_path / "ref", tmp_path / "out"
    _run(config, data_dir, ref)
    _run(config, data_dir, out)
    cell = out / "items/length/fed-turn/Overall/seed0.jsonl"
    data = cell.read_bytes()
    lines = data.splitlines(keepends=True)
    # Simulate a kill mid-write: 11 complete lines plus half of the 12th.
    cell.write_bytes(b"".join(lines[:11]) + lines[11][:17])
    other = out / "items/length-2/fed-dial/Overall/seed0.jsonl"
    other.unlink()  # a cell never started
    third = out / "items/length/dailydialog-grade/relevance/seed0.jsonl"
    third.write_bytes(third.read_bytes().splitlines(keepends=True)[0] + b"{not json}\n")
    _run(config, data_dir, out)
    assert _files(out) == _files(ref)


def test_resume_refuses_results_made_with_other_settings(config, data_dir, tmp_path):
    out = tmp_path / "r"
    _run(config, data_dir, out)
    exp = load_experiment(config).with_overrides(data_dir=str(data_dir), output=str(out), limit=20)
    with pytest.raises(InputError, match="different settings"):
        run_experiment(exp, progress=False)


def test_resume_refuses_rows_saved_against_other_ratings(config, data_dir, tmp_path):
    """A cell whose saved rows carry other human ratings than the set's today (the data or its loader changed
    since) is refused, naming the file and the item, rather than resumed with yesterday's ratings."""
    out = tmp_path / "r"
    _run(config, data_dir, out)
    cell = out / "items/length/fed-turn/Overall/seed0.jsonl"
    lines = cell.read_text().splitlines(keepends=True)
    first = json.loads(lines[0])
    cell.write_text(json.dumps({**first, "human": first["human"] + 1}) + "\n" + "".join(lines[1:]))
    with pytest.raises(InputError, match=f"other human ratings \\(item {first['id']}") as exc:
        _run(config, data_dir, out)
    assert exc.value.file == str(cell)


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_cli_run_check_and_report(config, data_dir, tmp_path):
    out = tmp_path / "r"
    p = _cli("run", str(config), "--data-dir", str(data_dir), "-o", str(out), "--limit", "12", "--check")
    assert p.returncode == 0, p.stderr
    assert "8 cells" in p.stderr and not out.exists()
    p = _cli("run", str(config), "--data-dir", str(data_dir), "-o", str(out), "--limit", "12", "--no-progress")
    assert p.returncode == 0, p.stderr
    (out / "leaderboard.md").unlink()
    p = _cli("report", str(out))
    assert p.returncode == 0, p.stderr
    assert "| length |" in (out / "leaderboard.md").read_text()
    p = _cli("report", str(tmp_path / "nowhere"))
    assert p.returncode == 2 and "summary.json" in p.stderr


def test_cli_run_unknown_selector_is_named_at_run_time(tmp_path, data_dir):
    p = tmp_path / "c.toml"
    p.write_text('datasets = ["DGR"]\n[[methods]]\nselector = "bm25-contxt"\nk = 4\n')
    r = _cli("run", str(p), "--data-dir", str(data_dir), "-o", str(tmp_path / "o"))
    assert r.returncode == 2
    assert "methods[0]" in r.stderr and "unknown selector 'bm25-contxt'" in r.stderr
    assert not (tmp_path / "o").exists()


def test_quality_nobody_rated_gives_an_empty_finished_cell(tmp_path):
    from judge.data.items import SYSTEM, USER, Item, Turn
    from judge.harness import parse_experiment

    items = [Item(id=f"d{i}", level="dialog", dialog=(Turn(USER, "hi"), Turn(SYSTEM, "hello " * i)),
                  system="s", annotations={"Overall": (float(i % 5), float((i + 1) % 5))}) for i in range(6)]
    exp = parse_experiment({"datasets": [{"name": "fed-dial", "qualities": ["Overall", "Error recovery"]}],
                            "methods": [{"type": "classic", "scorer": "length"}], "output": str(tmp_path / "o")})
    summary = run_experiment(exp, progress=False, plots=False, load=lambda name: items, log=lambda m: None).to_dict()
    empty = tmp_path / "o/items/length/fed-dial/Error_recovery/seed0.jsonl"
    assert empty.exists() and empty.read_bytes() == b""
    res = {r["quality"]: r for r in summary["results"]}
    assert res["Error recovery"]["n"] == 0 and res["Error recovery"]["spearman"] is None
    assert res["Overall"]["n"] == 6
    assert summary["ceiling"]["fed-dial"]["Overall"]["n_units"] == 6


def test_classic_scorer_lacking_an_input_is_skipped_not_fatal(tmp_path, data_dir):
    """A grid runs every applicable (scorer, set) pair; BLEU on a set without references is listed as not
    run, with the reason, and the rest of the grid completes."""
    cfg = tmp_path / "classic.toml"
    cfg.write_text(
        'name = "skip"\nlimit = 6\ndatasets = ["DZ", "DGR"]\nqualities = ["overall"]\n'
        '[[methods]]\ntype = "classic"\nscorer = "length"\n'
        '[[methods]]\ntype = "classic"\nscorer = "bleu4"\n'
    )
    summary = _run(cfg, data_dir, tmp_path / "out")
    skipped = {(s["method"], s["dataset"]) for s in summary["skipped"]}
    assert skipped == {("bleu4", "dailydialog-grade")}
    assert "needs 'reference'" in summary["skipped"][0]["reason"]
    ran = {(r["method"], r["dataset"]) for r in summary["results"]}
    assert {("length", "dailydialog-grade"), ("bleu4", "dailydialog-zhao")} <= ran
    assert "Not run (`–`): `bleu4` on dailydialog-grade" in (tmp_path / "out" / "leaderboard.md").read_text()


@pytest.mark.slow
def test_compute_time_is_kept_beside_the_rows_and_survives_a_resume(config, data_dir, tmp_path):
    out = tmp_path / "r"
    summary = _run(config, data_dir, out)
    cell = out / "items/length/fed-turn/Overall/seed0.jsonl"
    first = json.loads(cell.with_suffix(".time.json").read_text())
    assert first["rows"] == 30 and first["seconds"] >= 0 and first["cache_hits"] == first["cache_misses"] == 0
    assert first["peak_rss_mib"] > 10  # a Python process with numpy loaded
    t = summary["timing"]["length"]
    assert t["rows"] == 4 * 30 and t["s_per_item"] == pytest.approx(t["seconds"] / t["rows"], abs=1e-3)
    md = (out / "leaderboard.md").read_text()
    assert "## Compute time and memory" in md and "| length | 120 |" in md
    html = (out / "leaderboard.html").read_text()
    assert "<h2>Compute time and memory" in html and "<tr><td>length</td><td>120</td>" in html
    # A resume that finds every row saved adds nothing; one that recomputes 19 rows adds exactly those.
    again = _run(config, data_dir, out)
    assert again["timing"]["length"]["rows"] == 120
    lines = cell.read_bytes().splitlines(keepends=True)
    cell.write_bytes(b"".join(lines[:11]))
    resumed = _run(config, data_dir, out)
    assert json.loads(cell.with_suffix(".time.json").read_text())["rows"] == 30 + 19
    assert resumed["timing"]["length"]["rows"] == 120 + 19
    assert all(b"seconds" not in data for data in _files(out).values())  # the rows never carry time
