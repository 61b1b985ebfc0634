"""Reports rendered from a saved results folder: Markdown, HTML (parsed), CSV and PNG sizes."""

from __future__ import annotations

import csv
import io
import json
import struct
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest

from judge.datasets.paper import paper_value
from judge.harness import load_experiment, run_experiment
from judge.records.summary import CellStats, Corr, Summary, read_summary
from judge.report import render_all, render_csv, render_markdown

CONFIG = """
name = "rep"
limit = 25
datasets = ["DGR", "EG", "FT"]
[[methods]]
type = "classic"
scorer = "length"
paper = "InstructGPT 4ex"
[[methods]]
type = "classic"
scorer = "length"
name = "length-copy"
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory, data_dir) -> Path:
    root = tmp_path_factory.mktemp("rep")
    cfg = root / "c.toml"
    cfg.write_text(CONFIG)
    out = root / "out"
    exp = load_experiment(cfg).with_overrides(data_dir=str(data_dir), output=str(out))
    run_experiment(exp, progress=False, plots=False, log=lambda m: None)
    return out


class _Table(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.classes: list[list[str]] = []
        self._in = False
        self.tables = 0

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables += 1
        if self.tables != 1:  # the leaderboard only (compute time and comparisons follow it)
            return
        if tag == "tr":
            self.rows.append([])
            self.classes.append([])
        if tag in ("td", "th"):
            self._in = True
            self.rows[-1].append("")
            self.classes[-1].append(dict(attrs).get("class") or "")

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self._in = False

    def handle_data(self, data):
        if self._in:
            self.rows[-1][-1] += data


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_rerender_from_saved_results(results):
    for name in ("leaderboard.md", "leaderboard.html", "results.csv"):
        (results / name).unlink(missing_ok=True)
    written = render_all(results)  # reads summary.json and the item files only
    names = {p.name for p in written}
    assert {"leaderboard.md", "leaderboard.html", "results.csv", "heatmap.png", "scatter_length.png"} <= names
    summary = read_summary(results).to_dict()

    md = (results / "leaderboard.md").read_text()
    assert "| method | DGR | EG | FT | avg |" in md
    assert "↳ paper: InstructGPT 4ex | 0.472* " not in md  # the paper's DGR .472 is significant
    assert "↳ paper: InstructGPT 4ex | 0.472 | 0.305 | 0.506 |" in md
    assert "human agreement (Krippendorff α, interval)" in md

    parser = _Table()
    parser.feed((results / "leaderboard.html").read_text())
    head = parser.rows[0]
    assert head == ["method", "DGR", "EG", "FT", "avg"]
    body = {r[0]: r for r in parser.rows[1:]}
    res = {(r["method"], r["dataset"]): r for r in summary["results"]}
    dgr = res[("length", "dailydialog-grade")]
    cell = body["length"][1]
    assert cell.startswith(f"{dgr['spearman']:.3f}")
    assert f"[{dgr['ci']['low']:.2f}, {dgr['ci']['high']:.2f}]" in cell
    assert cell.split(" ")[0].endswith("*") == (dgr["p"] >= 0.05)
    assert body["n (items)"][1:4] == ["25", "25", "25"]
    # Ties for best are both marked.
    assert "best" in parser.classes[1][1] and "best" in parser.classes[3][1]
    assert body["paper: InstructGPT 4ex"][1:4] == ["0.472", "0.305", "0.506"]

    rows = list(csv.DictReader(io.StringIO((results / "results.csv").read_text())))
    assert len(rows) == 6 and rows[0]["method"] == "length" and rows[0]["paper"] == "0.472"

    from judge.report.plots import DPI, heatmap_size, scatter_size

    w, h = heatmap_size(2, 4)
    assert _png_size(results / "plots" / "heatmap.png") == (round(w * DPI), round(h * DPI))
    w, h = scatter_size(3)
    assert _png_size(results / "plots" / "scatter_length.png") == (round(w * DPI), round(h * DPI))
    assert (results / "plots" / "heatmap.png").stat().st_size > 5000


def _with_k_methods(summary: Summary) -> Summary:
    """A summary with a random and a BM25 selector at several k (values planted for the curve)."""
    methods: dict = {}
    cells: list[CellStats] = []
    averages: dict = {}
    for sel, ks, base in (("random", (4, 8), 0.1), ("bm25-context", (4, 8), 0.3), ("none", (0,), 0.05)):
        for k in ks:
            m = f"{sel}-k{k}"
            methods[m] = {"type": "llm", "selector": sel, "k": k, "backend": "llamacpp", "model": None}
            for seed in ((0, 1) if sel == "random" else (0,)):
                v = base + k / 100 + seed / 50
                cells.append(CellStats(m, "dailydialog-grade", "relevance", seed,
                                       replace(summary.cells[0].stats, spearman=Corr(v, 0.01, 25))))
            averages[m] = {"per_set": {"dailydialog-grade": base + k / 100}, "overall": base + k / 100}
    return replace(summary, methods=methods, results=(), cells=tuple(cells), averages=averages)


def test_k_curve_plot(tmp_path, results):
    from judge.report.plots import DPI, K_CURVE_SIZE, k_curve

    summary = read_summary(results)
    assert k_curve(summary, tmp_path / "none.png") is None  # classic methods only: nothing to draw
    p = k_curve(_with_k_methods(summary), tmp_path / "k.png")
    assert p is not None and _png_size(p) == (round(K_CURVE_SIZE[0] * DPI), round(K_CURVE_SIZE[1] * DPI))


def test_markdown_marks_seeds_and_nonsignificance(results):
    s = read_summary(results).to_dict()
    r = s["results"][0]
    # The mark reads the conversation bootstrap's p (the CI's), not scipy's item-level one.
    r["sd"], r["p"], r["ci"]["p"] = 0.0123, 0.001, 0.5
    md = render_markdown(Summary.from_dict(s))
    assert f"{r['spearman']:.3f} ± 0.012\\*" in md
    assert "method,kind,uses_future,dataset,quality,n,n_conversations,spearman" in render_csv(Summary.from_dict(s))


def test_paper_values_lookup():
    assert paper_value("InstructGPT", "fed-turn", "Understandable").value == pytest.approx(0.382)
    v = paper_value("TNLG 6.7B", "fed-turn", "Understandable")
    assert v.value == pytest.approx(0.021) and not v.significant and v.text() == "0.021*"
    assert paper_value("Flan-T5 3B", "fed-dial", "Depth").value == pytest.approx(0.650)
    assert paper_value("OPT-6.7B 4ex", "EG", "relevance").significant is False
    assert paper_value("InstructGPT 4ex", "topical-usr", "Engaging") is None  # the paper used Overall only
    assert json.dumps(paper_value("Flan-T5-3B 0ex", "FD", "Overall").value) == "0.444"


def test_an_average_over_fewer_sets_is_marked_and_never_best(tmp_path, results, data_dir):
    """A correlation left undefined (every score equal) drops that set from the method's average; the
    leaderboard says over how many sets the average is, and only full averages compete for bold."""
    import shutil

    from judge.records.results import cell_path
    from judge.records.rows import read_rows

    out = tmp_path / "out"
    shutil.copytree(results, out)
    path = cell_path(out, "length-copy", "fed-turn", "Overall", 0)
    rows = read_rows(path)
    path.write_text("".join(replace(r, score=1.0).to_json() + "\n" for r in rows))
    cfg = tmp_path / "c.toml"
    cfg.write_text(CONFIG)
    exp = load_experiment(cfg).with_overrides(data_dir=str(data_dir), output=str(out))
    summary = run_experiment(exp, progress=False, plots=False, log=lambda m: None).to_dict()
    assert summary["averages"]["length-copy"]["overall_n"] == [2, 3]
    assert summary["averages"]["length"]["overall_n"] == [3, 3]
    md = (out / "leaderboard.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| length-copy |"))
    avg = row.rstrip(" |").split(" | ")[-1]
    # The partial average still carries its CI (over the parts it has).
    assert " (2 of 3) [" in avg and "**" not in avg, row
    full = next(line for line in md.splitlines() if line.startswith("| length |")).rstrip(" |").split(" | ")[-1]
    full = full.split(" [")[0]
    # The partial average is the larger number here, yet it is not bold (nor is a lone full average).
    # (Averages now carry the not-significant mark of their own bootstrap, `\\*`.)
    assert float(avg.split()[0].replace("\\*", "")) > float(full.replace("\\*", "").strip("*"))


def test_paper_row_carries_the_papers_own_average(results):
    """The `avg` column of a `↳ paper` row is the paper's values averaged by the same rule (Table 6,
    InstructGPT 4ex on DGR, EG, FT: (.472 + .305 + .506) / 3)."""
    md = (results / "leaderboard.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| ↳ paper: InstructGPT 4ex |"))
    assert row.rstrip(" |").split(" | ")[-1] == "0.428"
