"""``judge estimate --view``: the page draws the JSON record ``--json`` writes (the same data, not a second
computation), and in a real headless Chromium (tools/browser.py) it reads as ``judge estimate``'s text: every line
and every table cell, for a results folder with an item cell (systems and their differences) and a pair cell
(win rates)."""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from judge.cli import main
from judge.records.labels import Label, append_label
from judge.records.pair_rows import PairRow
from judge.records.rows import Row
from tests.conftest import skip_unless_required
from tools.browser import missing, run_isolated

ROOT = Path(__file__).resolve().parents[1]
#: System: conversations answered, shift of the human rating. C has too few labelled conversations for an
#: interval; D's labels are all 3 (no spread: its labels-only interval is "no interval (see below)").
SYSTEMS = {"A": (30, 1.2), "B": (30, 0.0), "B2": (30, 0.05), "C": (4, 0.0), "D": (14, None)}
#: The pair cell's systems: D's labelled items are in no pair (skipped there, and counted).
PAIRED = ("A", "B", "B2", "C")


def _row(system: str, c: int, score: float) -> Row:
    return Row(id=f"{system}-{c}", method="m", seed=0, quality="overall", human=None, score=score, label_probs=None,
               examples=(), flags=(), estimated=False, complete=True, error=None, system=system, group=f"c{c}",
               n_prompt_tokens=0)


def _pair(a: str, b: str, c: int, preference: float) -> PairRow:
    return PairRow(id=f"{a}-{c} vs {b}-{c}", method="m", quality="overall", context=f"ctx:{c}", group=f"c{c}",
                   system_a=a, system_b=b, item_a=f"{a}-{c}", item_b=f"{b}-{c}", human_a=None, human_b=None,
                   preference=preference, winner="a" if preference > 0.5 else "b", consistent=None, tie=None, orders=(),
                   length_a=10, length_b=10, flags=(), estimated=False, complete=True, error=None, n_prompt_tokens=0)


def make_run(root: Path) -> tuple[Path, Path]:
    """A results folder of one item cell and one pair cell (every two of PAIRED's replies to a conversation), and
    labels on a uniform share of each system's items: a judge that sees the rating through noise; and an item cell
    of another set that none of the labels are of (reported, not estimated)."""
    rng = np.random.default_rng(4)
    rows, human = [], {}
    for system, (n, shift) in SYSTEMS.items():
        for c in range(n):
            human[f"{system}-{c}"] = 3.0 if shift is None else float(np.clip(round(3 + shift + rng.normal()), 1, 5))
            rows.append(_row(system, c, 0.15 * human[f"{system}-{c}"] + 0.1 * (system == "B2") + rng.normal(0, 0.1)))
    run = root / "run"
    cell = run / "items" / "m" / "toy" / "overall" / "seed0.jsonl"
    pairs = run / "compare" / "m" / "toy" / "overall" / "pairs.jsonl"
    for path in (cell, pairs):
        path.parent.mkdir(parents=True)
    cell.write_text("".join(r.to_json() + "\n" for r in rows))
    other = run / "items" / "m" / "toy2" / "overall" / "seed0.jsonl"
    other.parent.mkdir(parents=True)
    other.write_text("".join(_row("E", c, 0.1 * c).to_json() + "\n" for c in range(9)))
    pairs.write_text("".join(_pair(a, b, c, float(np.clip(0.5 + 0.2 * (human[f"{a}-{c}"] - human[f"{b}-{c}"])
                                                       + rng.normal(0, 0.1), 0, 1))).to_json() + "\n"
                             for a, b in combinations(PAIRED, 2) for c in range(30)
                             if f"{a}-{c}" in human and f"{b}-{c}" in human))
    labels = root / "labels.jsonl"
    for r in rows:
        c = int(r.id.split("-")[1])
        if c % 2 == 0 or (c == 1 and r.system != "C"):
            append_label(labels, Label(r.id, {"overall": human[r.id]}, "ann"))
    return run, labels


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    """``judge estimate RUN --labels ... --json ... --view ...``: the folder, what it printed, and the tmp dir."""
    tmp = tmp_path_factory.mktemp("estimate-view")
    run, labels = make_run(tmp)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["estimate", str(run), "--labels", str(labels), "--bootstrap", "200", "--json",
                     str(tmp / "e.json"), "--view", str(tmp / "e.html")]) == 0
    return tmp, printed.getvalue(), tmp / "e.html"


def page_data(html: Path) -> dict[str, Any]:
    text = html.read_text(encoding="utf-8")
    return json.loads(re.search(r'<script type="application/json" id="judge-data">(.*?)</script>', text,
                                re.S).group(1))  # type: ignore[union-attr]


def test_the_page_carries_the_json_record_as_written(made):
    tmp, printed, html = made
    written = json.loads((tmp / "e.json").read_text())
    data = page_data(html)
    assert data["sections"] == {"estimate": written} and data["cells"] == []
    items, unlabelled, pairs = written
    assert [g["name"] for g in items["groups"]] == list(SYSTEMS) and len(items["differences"]) == 10
    assert pairs["by"].startswith("pair") and len(pairs["groups"]) == 6 and pairs["differences"] == []
    assert (items["labelled_outside"], pairs["labelled_outside"]) == (0, 8)  # D's items c0, c1, c2, c4, ..., c12
    assert (unlabelled["groups"], unlabelled["n_labelled"], unlabelled["labelled_outside"]) == ([], 0, items["n_labelled"])
    assert ": quality overall, 9 rows in 9 conversations, none of them labelled: not estimated\n" in printed
    assert "note: 8 labelled items are in none of these rows" in printed
    # the marks the page shows are the text's: a difference is significant where its printed line ends in *
    marked = {line.split("  ")[0] for line in printed.splitlines() if line.endswith("*")}
    assert marked and marked == {d["name"] for d in items["differences"] if d["significant"]}
    assert items["min_conversations"] == 7
    # a page that cannot be written is refused before any work (here: a folder)
    assert main(["estimate", str(tmp / "run"), "--labels-from-rows", "--view", str(tmp)]) == 2


def _columns(line: str) -> list[str] | str:
    """A printed line as the page lays it out: a table row as its cells (columns are 2+ spaces apart), else
    the line."""
    cells = re.split(r"\s{2,}", line.strip())
    return cells if len(cells) >= 10 else line


def _shown(estimate: list[str | list[str]]) -> list[str | list[str]]:
    """The page's lines and table rows in order, a difference's mark column joined to lambda as the text
    prints it (``8.03*``)."""
    return [[*x[:9], x[9] + x[10]] if isinstance(x, list) and len(x) == 11 else x for x in estimate]


@pytest.mark.slow  # a browser start: about 3 s; the page's data is the fast test's
def test_the_browser_shows_what_the_text_prints(made):
    skip_unless_required(missing(), "JUDGE_REQUIRE_BROWSER", "browser")
    tmp, printed, html = made
    plan = {"page": str(html), "shot": str(tmp / "estimate.png")}
    proc = run_isolated([sys.executable, str(ROOT / "tests" / "estimate_browser.py"), json.dumps(plan)], cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-4000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["errors"] == [] and seen["requests"] == [html.resolve().as_uri()]
    assert seen["tabs"] == ["Estimates"]
    lines = [line for line in printed.splitlines() if line.strip()]
    starts = [i for i, line in enumerate(lines) for e in json.loads((tmp / "e.json").read_text())
              if line.startswith(f"{e['source']}: quality ")]  # each estimate's text starts with its source
    assert len(starts) == len(seen["estimates"]) == 3 and starts[0] == 0
    for start, end, shown in zip(starts, [*starts[1:], len(lines)], seen["estimates"], strict=True):
        assert _shown(shown) == [_columns(line) for line in lines[start:end]]
    text = "\n".join(printed.splitlines())
    for case in ("too few conversations (2)", "no interval (see below)", "\nno interval: ", "*", "A vs B  ",
                 "labelled items are in none of these rows", "none of them labelled: not estimated"):
        assert case in text  # each way of showing a number is in what was compared
    assert (tmp / "estimate.png").stat().st_size > 5_000
