"""docs/results.md is generated: it equals what ``judge results render`` writes from the committed run
summaries (benchmarks/results/), byte for byte, and ``collect`` keeps what each figure needs.

The unit tests collect a tiny run of the model-free scorers and the mock backend in a tmp folder: its
figures are meaningless and never leave it.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from judge.cli import build_parser, main
from judge.data.kinds import BY_NAME, KINDS
from judge.harness import load_experiment
from judge.report import results_page as page
from judge.report.coverage_table import coverage_section, load_coverage

ROOT = Path(__file__).resolve().parents[1]

TINY = """
name = "tiny"
limit = 24
bootstrap = 200
split = "test"
datasets = ["TU", "FD"]
compare = [["mock-yesno", "length"], ["rouge-l", "length"]]
[[methods]]
name = "length"
type = "classic"
scorer = "length"
[[methods]]
name = "rouge-l"
type = "classic"
scorer = "rouge-l"
[[methods]]
name = "next-user"
type = "classic"
scorer = "next-user-sentiment"
allow_future = true
[[methods]]
name = "mock-yesno"
prompt = "yesno"
backend = "mock"
[[methods]]
name = "cv"
type = "ensemble"
members = ["length", "rouge-l"]
optional = ["rouge-l"]
fit = "cv"
"""


def test_page_is_rendered_from_the_committed_summaries():
    """A figure typed into docs/results.md, or a summary changed without re-rendering, fails here."""
    summaries = page.load_summaries(ROOT / page.SUMMARY_DIR)
    assert summaries, "no committed run summary"
    coverage = load_coverage(ROOT)
    assert coverage is not None, "no committed coverage summary"
    assert (ROOT / page.PAGE).read_text(encoding="utf-8") == page.render_page(summaries, page.load_history(ROOT),
                                                                               coverage_section(coverage))


def test_the_split_history_the_page_reads_is_what_the_data_gives(data_dir):
    """benchmarks/halves_history.json (today's test items earlier dev rounds read, the items the last split
    change moved) equals what benchmarks/halves_history.py writes from the data; it names today's halves."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from halves_history import history, text

    from judge.datasets.identity import index_digest

    committed = (ROOT / page.HISTORY).read_text()
    assert committed == text(history(data_dir))
    data = json.loads(committed)
    assert data["current"] == index_digest()
    # The counts for FED-Turn (72 of 183 test items once in a dev half; 21 of them in the 50-item
    # samples, 8 in the 25-item sample), and the six GRADE items the single-turn links moved.
    ft = data["read_in_dev"]["fed-turn"]
    assert (ft["test"], len(ft["once_dev"]), *map(len, ft["samples"].values())) == (183, 72, 8, 21, 0)
    assert {(m["item"][-5:], m["after"]) for m in data["moved"]} == {
        ("00008", "test"), ("00061", "test"), ("00158", "test"), ("00211", "test"), ("00102", "dev"), ("00252", "dev")}


def test_the_committed_replication_ceilings_are_what_the_data_gives(data_dir):
    """Every committed Reliable-Eval system-level row's human run-1 vs run-2 ceiling is the one today's loader
    gives: a ratings fix (the negative sliders turned back) reaches every summary, not only re-run ones."""
    from judge.report.system_level import ceiling

    rows = [r for s in page.load_summaries(ROOT / page.SUMMARY_DIR) for r in s.get("system_level", [])]
    assert rows, "no committed system-level row"
    for quality, scores in sorted({(r["quality"], r["scores"]) for r in rows}):
        expected = round(ceiling(data_dir, quality, scores, n_boot=0, seed=0).value, 6)
        assert {r["ceiling"]["value"] for r in rows if (r["quality"], r["scores"]) == (quality, scores)} == \
            {expected}, (quality, scores)


def test_a_summary_on_earlier_halves_says_so_and_lists_the_moved_items(collected: dict):
    """The page marks a run collected on other halves than today's, naming the moved items of its table's sets
    and how its averages were resampled; a run on today's halves gets no such note."""
    history = {"current": collected["run"]["halves"], "moved_by": "the last change (x -> y)", "read_in_dev": {},
               "moved": [{"set": "topical-usr", "item": "topical-usr_00007", "before": "dev", "after": "test"}]}
    assert "Earlier halves" not in page.render_page([collected], {**history, "read_in_dev": {"topical-usr": {
        "test": 3, "once_dev": [], "samples": {"round 1": []}}}})
    old = {**collected, "run": {k: v for k, v in collected["run"].items() if k != "halves"}}
    text = page.render_page([old], {**history, "read_in_dev": {"topical-usr": {
        "test": 3, "once_dev": ["topical-usr_00007"], "samples": {"round 1": []}}}})
    assert "**Earlier halves.** This run scored the halves before the last change" in text
    assert "TU: 00007 now in test" in text
    assert "resampled every set's conversations on its own" in text
    assert "- TU: 1 of its 3 test items (0 round 1): 00007." in text


def test_the_quality_lines_judge_models_prints_are_generated_too():
    """judge/models/models_quality.json (what ``judge models`` prints as a packaged model's quality) equals what
    ``render`` writes from the committed summaries, and ``judge models`` prints it."""
    from judge.cli.models import measured
    from judge.report.model_figures import QUALITY, read_quality, render_quality

    summaries = page.load_summaries(ROOT / page.SUMMARY_DIR)
    assert (ROOT / QUALITY).read_text(encoding="utf-8") == render_quality(summaries, page.load_history(ROOT))
    assert {name: m["quality"] for name, m in measured().items() if "quality" in m} == read_quality()


#: A figure with its CI as the docs print one: ``.372 [.31, .43]`` (``†`` when not significant), or a signed
#: difference ``+.005 [−.04, .06]`` (a plus sign, a hyphen or a Unicode minus).
_FIGURE = re.compile(r"([+\-−]?\.\d{3})†? \[([+\-−]?\.\d\d), ([+\-−]?\.\d\d)\]")


def _unsigned(text: str) -> str:
    """A printed figure as :func:`page.num` writes it: no plus sign, an ASCII minus."""
    return text.replace("−", "-").lstrip("+")


def test_every_figure_with_a_ci_outside_the_journal_comes_from_a_committed_summary():
    """The README and docs quote figures with their CI only from the committed runs (a typed or stale one
    fails here); the journal keeps the typed history, the results page is checked byte for byte above."""
    known = set()
    for s in page.load_summaries(ROOT / page.SUMMARY_DIR):
        for x in [*s["averages"], *s["cells"]]:
            known.add((page.num(x["spearman"]), page.num(x["ci_low"], 2), page.num(x["ci_high"], 2)))
        for c in s.get("comparisons", []):  # paired differences, as quoted with their sign
            known.add((page.num(c["diff"]), page.num(c["low"], 2), page.num(c["high"], 2)))
        for e in s.get("pairwise", []):  # pairwise agreement, beside the pointwise method's, and their difference
            for f in ((e.get("humans") or {}).get(k) for k in ("judge", "pointwise", "judge_same_pairs", "difference")):
                if f and f.get("value") is not None:
                    known.add((page.num(f["value"]), page.num(f["low"], 2), page.num(f["high"], 2)))
    docs = [ROOT / "README.md", *(p for p in sorted((ROOT / "docs").glob("*.md"))
                                  if p.name not in ("journal.md", "results.md"))]
    quoted = 0
    for doc in docs:
        text = " ".join(doc.read_text(encoding="utf-8").split())  # a figure may wrap across lines
        for m in _FIGURE.finditer(text):
            quoted += 1
            assert tuple(map(_unsigned, m.groups())) in known, f"{doc.name}: {m.group(0)} is in no committed summary"
    assert quoted >= 4, "the README quotes the headline figures"


def test_the_figure_check_reads_signed_differences():
    """``+.005 [−.04, .06]`` (a sign and a Unicode minus) once passed the check unread."""
    assert [tuple(map(_unsigned, m.groups())) for m in _FIGURE.finditer("+.005 [−.04, .06] and −.015 [-.03, .00]")] \
        == [(".005", "-.04", ".06"), ("-.015", "-.03", ".00")]


def _summary(name: str, date: str, averages: list[tuple[str, str, float, float]], models: dict[str, list[str]],
             split: str = "test", datasets: tuple[str, ...] = ("TU", "FD")) -> dict:
    """A committed summary reduced to what the quality lines read: (method, kind, spearman, p) averages."""
    return {"name": name, "run": {"date": date, "split": split, "datasets": list(datasets)},
            "methods": {m: {"models": dict.fromkeys(models[m], "sha")} for m, *_ in averages},
            "averages": [{"method": m, "kind": k, "spearman": r, "p": p, "ci_low": r - .05, "ci_high": r + .05,
                          "sets": 8, "of_sets": 8} for m, k, r, p in averages]}


def test_a_models_quality_line_holds_its_methods_by_kind_from_the_latest_test_run():
    from judge.report.model_figures import NOT_YET, model_quality

    models = {"a": ["m"], "b": ["m"], "mixed": ["m", "other"], "cv": ["m"], "o": ["other"]}
    old = _summary("first", "2026-01-01", [("a", "reference-free", .30, .001), ("b", "reference-free", .05, .4)], models)
    new = _summary("second", "2026-02-01", [("a", "reference-free", .35, .001), ("mixed", "reference-free", .9, .001),
                                            ("cv", "supervised", .41, .001)], models)
    dev = _summary("dev", "2026-03-01", [("a", "reference-free", .99, .001)], models, split="dev")
    # A later test run on other sets (engagement) averages something else under the same method's name.
    other = _summary("engagement", "2026-04-01", [("a", "reference-free", .77, .001)], models, datasets=("PED", "PEC"))
    lines = model_quality([new, dev, other, old], ["m", "other", "none"])
    assert lines["m"] == ("DSTC10 average Spearman on the test halves (conversation-bootstrap 95% CI; † not "
                          "significant); reference-free: .050 † [.00, .10] b, .350 [.30, .40] a; supervised: "
                          ".410 [.36, .46] cv; runs first, second (docs/results.md)")
    assert ".9" not in lines["m"] and ".99" not in lines["m"] and ".77" not in lines["m"]  # another model's, dev, not DSTC10
    assert lines["none"] == NOT_YET and lines["other"] == NOT_YET  # "mixed" is not the other model's alone


def test_every_committed_command_parses_and_names_its_config():
    for s in page.load_summaries(ROOT / page.SUMMARY_DIR):
        args = build_parser().parse_args(shlex.split(s["run"]["command"])[1:])
        assert args.command == "run" and args.config == s["run"]["config"]
        assert (ROOT / args.config).is_file()
        assert {c["kind"] for c in s["cells"]} <= set(KINDS)
        # A mock backend's figures mean nothing: none is ever published.
        assert not [m for m, e in s["methods"].items() if page.uses_mock(e["settings"])], s["name"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, data_dir) -> Path:
    root = tmp_path_factory.mktemp("tiny")
    (root / "tiny.toml").write_text(TINY)
    out = root / "out"
    assert main(["run", str(root / "tiny.toml"), "--data-dir", str(data_dir), "-o", str(out), "--no-progress"]) == 0
    return out


@pytest.fixture(scope="module")
def collected(tiny_run: Path) -> dict:
    return page.collect(tiny_run, "tiny", load_config=load_experiment, root=ROOT, allow_mock=True)


def test_collect_refuses_a_mock_run_unless_told(tiny_run: Path, tmp_path: Path):
    with pytest.raises(Exception, match="mock backend"):
        page.collect(tiny_run, "tiny", load_config=load_experiment, root=ROOT)
    assert main(["results", "collect", str(tiny_run), "--name", "tiny", "--root", str(tmp_path)]) == 2
    assert not (tmp_path / page.SUMMARY_DIR / "tiny.json").exists()
    assert page.uses_mock({"type": "ensemble", "members": {"a": {"backend": "mock"}}})
    assert not page.uses_mock({"type": "ensemble", "members": {"a": {"backend": "llamacpp"}}})


def test_collect_says_which_cells_an_earlier_run_left_outside_the_summary(tiny_run: Path, tmp_path: Path, data_dir,
                                                                          capsys):
    """A folder run in pieces: the last piece writes the summary, so collecting then leaves the other cells out
    and says which; the whole config once more lists them all again."""
    assert page.unlisted_cells(tiny_run) == []
    out = tmp_path / "out"
    shutil.copytree(tiny_run, out)
    config = str(tiny_run.parent / "tiny.toml")
    assert main(["run", config, "--data-dir", str(data_dir), "-o", str(out), "--datasets", "TU", "--methods", "length",
                 "--no-progress"]) == 0
    assert "length/fed-dial" in page.unlisted_cells(out) and "length/topical-usr" not in page.unlisted_cells(out)
    capsys.readouterr()
    assert main(["results", "collect", str(out), "--name", "tiny", "--root", str(tmp_path), "--allow-mock"]) == 0
    assert "cells of the folder are not in its summary and were left out (cv/fed-dial" in capsys.readouterr().err
    assert main(["run", config, "--data-dir", str(data_dir), "-o", str(out), "--no-progress"]) == 0
    assert page.unlisted_cells(out) == []


def test_collect_keeps_each_cell_with_its_kind_split_and_bootstrap(collected: dict, tiny_run: Path):
    summary = json.loads((tiny_run / "summary.json").read_text())
    kinds = {m: e["kind"] for m, e in collected["methods"].items()}
    assert kinds == {"length": "reference-free", "rouge-l": "reference-based", "next-user": "uses-future",
                     "mock-yesno": "reference-free", "cv": "supervised"}
    assert len(collected["cells"]) == len(summary["results"])
    for cell, r in zip(collected["cells"], summary["results"], strict=True):
        assert (cell["method"], cell["dataset"], cell["n"], cell["spearman"]) == (
            r["method"], r["dataset"], r["n"], r["spearman"])
        assert (cell["ci_low"], cell["ci_high"], cell["p"]) == (r["ci"]["low"], r["ci"]["high"], r["ci"]["p"])
        assert cell["kind"] == kinds[r["method"]] and cell["split"] == "test" and cell["n_boot"] == 200
    run = collected["run"]
    assert re.fullmatch(r"[0-9a-f]{40}(\+changes)?", run["commit"])
    from judge.datasets.identity import index_digest

    assert run["halves"] == index_digest()  # the halves it scored, which the page compares with today's
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", run["date"])
    assert collected["methods"]["mock-yesno"]["settings"]["backend"] == "mock"


def test_collect_rebuilds_the_command_that_made_the_run(collected: dict, tiny_run: Path):
    args = build_parser().parse_args(shlex.split(collected["run"]["command"])[1:])
    assert args.config == str(tiny_run.parent / "tiny.toml")
    assert args.methods is None and args.limit is None and args.split is None  # the config's own
    summary = json.loads((tiny_run / "summary.json").read_text())
    del summary["methods"]["cv"]
    narrowed = build_parser().parse_args(shlex.split(page.regenerate_command(summary, "x", load_experiment))[1:])
    assert narrowed.methods == "length,rouge-l,next-user,mock-yesno"


def test_collect_refuses_a_command_it_cannot_rebuild(tiny_run: Path):
    """After --model or --backend the config's command would score another method."""
    summary = json.loads((tiny_run / "summary.json").read_text())
    summary["methods"]["mock-yesno"]["backend"] = "llamacpp"
    with pytest.raises(Exception, match="pass --command"):
        page.regenerate_command(summary, "tiny", load_experiment)


def test_models_are_named_with_their_sha256():
    from judge.models.packaged import SMOLLM2

    assert page._models({"type": "llm", "model": None, "backend": "llamacpp"}) == {SMOLLM2.name: SMOLLM2.sha256}
    assert page._models({"type": "llm", "model": None, "backend": "mock"}) == {}
    member = {"type": "classic", "options": {"model": "smollm2"}}
    assert page._models({"type": "ensemble", "members": {"a": member}}) == {"smollm2": SMOLLM2.sha256}


def _tables(text: str) -> list[tuple[str, list[str]]]:
    """(heading, method names) of every table of figures (not the paired ones), under the nearest ## heading."""
    out = []
    for section in re.split(r"\n(?=## )", text):
        title = section.splitlines()[0]
        for table in re.findall(r"(?:^\|.*\|\n)+", section, flags=re.M):
            if table.startswith("| a | b |"):
                continue
            names = [row.split("|")[1].strip() for row in table.splitlines()[2:]]
            out.append((title, names))
    return out


def test_render_keeps_the_kinds_apart_in_their_order(collected: dict):
    text = page.render_page([collected])
    titles = [BY_NAME[k].page_title for k in KINDS]
    positions = [text.index(f"## {t}\n") for t in titles]
    assert positions == sorted(positions)
    kinds = {m: e["kind"] for m, e in collected["methods"].items()}
    tables = _tables(text)
    assert len(tables) == 4
    for title, names in tables:
        assert names and all(BY_NAME[kinds[n]].page_title == title[3:] for n in names), (title, names)
    assert f"Regenerate: `{collected['run']['command']}`" in text
    # Nothing is bolded against anything else.
    assert not [line for line in text.splitlines() if line.startswith("|") and "**" in line]


def test_paired_comparisons_are_kept_and_shown_only_within_one_kind(collected: dict):
    """mock-yesno and length are both reference-free: their paired test (per set and on the average) is
    under that table; rouge-l (reference-based) against length is kept in the summary but never shown."""
    pairs = {(c["a"], c["b"], c.get("abbrev") or c["sets"]) for c in collected["comparisons"]}
    assert {("mock-yesno", "length", 2), ("mock-yesno", "length", "TU"), ("rouge-l", "length", "TU")} <= pairs
    text = page.render_page([collected])
    free = text.split("## " + BY_NAME["reference-free"].page_title, 1)[1].split("\n## ", 1)[0]
    avg = next(c for c in collected["comparisons"] if c["a"] == "mock-yesno" and c.get("sets") == 2)
    row = next(line for line in free.splitlines() if line.startswith("| mock-yesno | length | avg of 2 sets |"))
    assert row.endswith(f"| {page.p_display(avg['p'], 200, avg['n_degenerate'])} |") and page.num(avg["diff"]) in row
    assert "| rouge-l | length |" not in text


def test_render_marks_non_significant_figures_and_floors(collected: dict):
    text = page.render_page([collected])
    for c in collected["cells"]:
        row = next(line for line in text.splitlines()
                   if line.startswith(f"| {c['method']} | {c['abbrev']} |"))
        assert ("†" in row) == (c["spearman"] is not None and not c["p"] < page.ALPHA), row
        assert row.endswith(f"| {page.p_display(c['p'], 200, c['n_degenerate'])} |")


def test_p_display():
    assert page.p_display(0.001, 1000) == "< .001"
    assert page.p_display(1 / 995, 1000, 5) == "< .001"
    assert page.p_display(0.002, 1000) == ".002"
    assert page.p_display(0.0823, 1000) == ".082"
    assert page.p_display(0.2, 1000) == ".20"
    assert page.p_display(None, 1000) == "–"
    assert page.num(-0.0412) == "-.041" and page.num(0.5) == ".500" and page.num(None) == "–"


def test_method_kind_maps_todays_summaries_onto_four_kinds():
    assert page.method_kind({"kind": "reference-free", "uses_future": False}) == "reference-free"
    assert page.method_kind({"kind": "reference-based", "uses_future": False}) == "reference-based"
    assert page.method_kind({"kind": "reference-based", "uses_future": True}) == "uses-future"
    assert page.method_kind({"kind": "reference-free", "type": "ensemble", "fit": "cv",
                             "uses_future": True}) == "supervised"
    assert page.method_kind({"kind": "reference-free", "type": "ensemble", "fit": "lodo"}) == "reference-free"
    # Kinds the summaries name themselves pass through.
    assert page.method_kind({"kind": "supervised"}) == "supervised"
    assert page.method_kind({"kind": "uses-future"}) == "uses-future"


def test_check_fails_when_the_page_is_edited_by_hand(collected: dict, tmp_path: Path, capsys):
    page.write_summary(collected, tmp_path / page.SUMMARY_DIR)
    assert main(["results", "render", "--root", str(tmp_path)]) == 0
    assert main(["results", "check", "--root", str(tmp_path)]) == 0
    doc = tmp_path / page.PAGE
    first = next(c for c in collected["cells"] if c["spearman"] is not None)
    typed = doc.read_text().replace(f"| {page.num(first['spearman'])}", "| .999", 1)
    assert typed != doc.read_text()
    doc.write_text(typed)
    capsys.readouterr()
    assert main(["results", "check", "--root", str(tmp_path)]) == 1
    assert "+| " in capsys.readouterr().out


def test_collect_cli_writes_the_summary(tiny_run: Path, tmp_path: Path, capsys):
    assert main(["results", "collect", str(tiny_run), "--name", "tiny", "--root", str(tmp_path), "--allow-mock",
                 "--command", "judge run x.toml"]) == 0
    written = json.loads((tmp_path / page.SUMMARY_DIR / "tiny.json").read_text())
    assert written["run"]["command"] == "judge run x.toml" and written["schema"] == page.SUMMARY_SCHEMA


CONFIGS = ROOT / "benchmarks" / "configs"


@pytest.mark.slow  # the ceiling reads both free-topic runs whole: a few seconds
def test_collect_keeps_the_system_level_table_and_render_sets_the_ceiling_beside(data_dir, tmp_path: Path):
    """The Reliable-Eval config's model-free method on RE1, collected with its system-level table."""
    assert main(["run", str(CONFIGS / "reliable_eval_q15_test.toml"), "--data-dir", str(data_dir), "--methods",
                 "length", "--datasets", "RE1", "--limit", "40", "--no-progress", "-o", str(tmp_path / "re")]) == 0
    assert main(["results", "collect", str(tmp_path / "re"), "--name", "re", "--root", str(tmp_path),
                 "--data-dir", str(data_dir)]) == 0
    collected = json.loads((tmp_path / page.SUMMARY_DIR / "re.json").read_text())
    rows = collected["system_level"]
    assert {(r["quality"], r["scores"]) for r in rows} == {(q, s) for q in ("overall", "robotic", "interesting", "fun",
                                                                          "consistent", "fluent", "repetitive", "topic")
                                                           for s in ("raw", "z")}
    overall = next(r for r in rows if r["quality"] == "overall" and r["scores"] == "raw")
    assert overall["abbrev"] == "RE1" and 3 <= overall["n_systems"] <= 10 and overall["n_conversations"] <= 40
    assert overall["ceiling"]["n_systems"] == 10 and 0.6 < overall["ceiling"]["value"] <= 1  # people agree with people
    text = page.render_page([collected])
    table = text.split("## Reliable-Eval: system level", 1)[1]
    line = next(x for x in table.splitlines() if x.startswith("| length | RE1 | overall | raw 0-100 |"))
    assert line.endswith(f"| {page.num(overall['ceiling']['value'])} [{page.num(overall['ceiling']['low'], 2)}, "
                         f"{page.num(overall['ceiling']['high'], 2)}] (n = 10) |"), line
    assert re.search(r"\| (\d+ of \d+|–) \| (\d+ of \d+|–) \| \S+ \[", line), line  # the bot's two ranks
    assert "| length | RE1 | robotic (lower is better) | raw 0-100 |" in table
    # The dialog-level table names each quality and marks the negative ones.
    assert "| length | RE1 | repetitive (lower is better) | 40 |" in text
    assert "takes it sign-flipped" in text


def test_collect_keeps_the_pairs_labels_and_render_sets_the_published_judges_beside(data_dir, tmp_path: Path):
    """The pairs config on one LLMBar set (mock backend), collected and rendered."""
    assert main(["run", str(CONFIGS / "pairsets_q15.toml"), "--data-dir", str(data_dir), "--datasets", "LBGO",
                 "--backend", "mock", "--no-progress", "-o", str(tmp_path / "pairs")]) == 0
    # The CLI's collect: a run that only compared pairs has no per-item folder and no system level.
    assert main(["results", "collect", str(tmp_path / "pairs"), "--name", "pairs", "--root", str(tmp_path),
                 "--allow-mock"]) == 0
    collected = json.loads((tmp_path / page.SUMMARY_DIR / "pairs.json").read_text())
    assert "system_level" not in collected
    entry = next(e for e in collected["pairwise"] if e["abbrev"] == "LBGO")
    assert entry["labels"]["kind"] == "gold" and entry["labels"]["accuracy"]["n"] == entry["n_pairs"]
    text = page.render_page([collected])
    section = text.split("## Pairwise against the pairs' own labels", 1)[1]
    assert "## Pairwise: which of two replies is better" not in text  # labelled pairs are not rated pairs
    from judge.datasets.published_judges import published_judges
    from judge.report.pairwise import fmt

    accuracy = fmt(entry["labels"]["accuracy"]["value"])
    assert re.search(rf"^\| q15-pairwise \(mock\) \| ours: prompt pairwise, both orders \| {re.escape(accuracy)} \[",
                     section, flags=re.M), section
    gpt4 = [p for p in published_judges("llmbar-gptout") if p["judge"] == "GPT-4"]
    best = max(gpt4, key=lambda p: (p["accuracy"], p["strategy"]))
    assert f"| GPT-4 | {best['strategy']} | {fmt(best['accuracy'])} |" in section
    assert "- q15-pairwise: accuracy against the gold label" in section


def test_a_heads_line_reads_the_head_against_its_prompt_never_against_another_head():
    """A run comparing a new head with its prompt and with an earlier head: the line names the prompt, whichever
    comparison the config lists last (the earlier head is no prompt)."""
    from judge.report.model_figures import head_quality

    models = {"prompt": ["m"], "old": ["m"], "new": ["m"]}
    s = _summary("heads", "2026-05-01", [("prompt", "reference-free", .37, .001), ("old", "reference-free", .35, .001),
                                         ("new", "reference-free", .40, .001)], models)
    s["methods"]["old"]["settings"] = s["methods"]["new"]["settings"] = {"type": "head"}
    s["methods"]["prompt"]["settings"] = {"type": "llm"}
    pair = {"n": 100, "sets": 8, "diff": .03, "low": .01, "high": .05, "p": .01}
    s["comparisons"] = [{"a": "new", "b": "prompt", **pair}, {"a": "new", "b": "old", **pair, "diff": .05}]
    line = head_quality([s], ["m"])["m"]
    assert "new .400 [.35, .45] against its prompt prompt .370 [.32, .42]" in line and "paired difference .030" in line
    s["comparisons"] = s["comparisons"][1:]
    assert head_quality([s], ["m"]) == {}
