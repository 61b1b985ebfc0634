"""``judge view`` in a real browser: Debian's Chromium, headless, driven by Playwright, in a network
namespace of its own (tools/browser.py). One browser runs the whole scenario (tests/view_browser.py) on
the view of a run scored here on the mock backend; the tests check what it saw against the run's rows
and against every prompt the backend was sent. Screenshots of each view land in the test's tmp dir.

Without chromium or Playwright the tests are skipped, unless ``JUDGE_REQUIRE_BROWSER`` is set (CI sets
it, so a broken install fails there instead of passing silently)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from judge.backends.mock import MockBackend
from judge.cli import main
from judge.stats.floor import MIN_CONVERSATIONS, too_few_text
from judge.view import from_results
from tests.conftest import skip_unless_required
from tests.view_runs import record_prompts, run
from tools.browser import missing, run_isolated

ROOT = Path(__file__).resolve().parents[1]
SEARCH = "music"


@pytest.fixture(scope="module")
def seen(tmp_path_factory, data_dir):
    """Run, view, open in Chromium: what the page showed, with the view and every prompt sent."""
    skip_unless_required(missing(), "JUDGE_REQUIRE_BROWSER", "browser")
    tmp = tmp_path_factory.mktemp("browser")
    mp = pytest.MonkeyPatch()
    try:
        recorded = record_prompts(mp, MockBackend)
        run(tmp, data_dir, name="browser", sets='["TU", "FD"]', limit=30, k_shot="options = { fail_rate = 0.15 }")
    finally:
        mp.undo()
    sent = [text for text, _ in recorded]
    assert main(["view", str(tmp / "run"), "--data-dir", str(data_dir)]) == 0
    view = from_results([tmp / "run"], data_dir=str(data_dir))
    plan = {"page": str(tmp / "run" / "view.html"), "shots": str(tmp / "shots"), "method": "bm25c-2",
            "set": "topical-usr", "search": SEARCH, "compare": ["topical-usr · Overall", "yesno", "bm25c-2"]}
    proc = run_isolated([sys.executable, str(ROOT / "tests" / "view_browser.py"), json.dumps(plan)], cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-4000:]
    got = {**json.loads(proc.stdout.strip().splitlines()[-1]), "page": plan["page"]}
    assert got["errors"] == []  # no script error in the page's console
    return got, view, sent, Path(plan["shots"])


def flat(view) -> list[tuple[int, int]]:
    return [(c, r) for c, cell in enumerate(view.cells) for r in range(len(cell.rows))]


def gaps(view) -> dict[tuple[int, int], float | None]:
    from judge.stats import correlation as stats

    out = {}
    for c, cell in enumerate(view.cells):
        g = stats.rank_gap([r.score for r in cell.rows], [r.human for r in cell.rows])
        out.update({(c, r): None if x is None else round(x, 4) for r, x in enumerate(g)})
    return out


def by_disagreement(view, keys) -> list[list[int]]:
    """The page's default order: largest |rank gap| first, items without one last, then run order."""
    g, pos = gaps(view), {k: i for i, k in enumerate(flat(view))}
    return [list(k) for k in sorted(keys, key=lambda k: (g[k] is None, -abs(g[k] or 0), pos[k]))]


@pytest.mark.slow
def test_the_page_shows_every_item_in_disagreement_order(seen):
    got, view, _, shots = seen
    assert got["count"] == sum(len(c.rows) for c in view.cells) == 3 * (30 + 30)
    assert got["first_page"] == by_disagreement(view, flat(view))[:50]
    assert got["ready_ms"] > 0
    assert (shots / "items.png").stat().st_size > 10_000


def test_the_page_makes_no_request_beyond_its_own_file(seen):
    """Through the whole scenario (filters, search, detail, side by side) the browser asked for the view
    file and for nothing else: no script, style, font or image from anywhere, not even a file beside it."""
    got, *_ = seen
    page = Path(got["page"]).resolve().as_uri()
    assert got["requests"] == [page], got["requests"]


def test_an_items_prompt_is_the_prompt_the_backend_was_sent(seen):
    got, view, sent, _ = seen
    for shown in (got["first_open"], got["clicked"]):
        (block,) = shown["blocks"]
        cell = view.cells[block["cell"]]
        assert shown["item"] == cell.rows[block["row"]].id
        assert block["prompt"] == cell.prompts[block["row"]]
        assert block["prompt"] in Counter(sent)
    assert got["clicked"]["blocks"][0]["cell"] == got["search_rows"][1][0]  # the row clicked is the one opened


def test_filters_narrow_the_items(seen):
    got, view, _, shots = seen
    cells = [i for i, c in enumerate(view.cells) if c.method == "bm25c-2"]
    assert got["count_method"] == sum(len(view.cells[i].rows) for i in cells)
    (one,) = [i for i in cells if view.cells[i].dataset == "topical-usr"]
    cell = view.cells[one]
    assert got["count_cell"] == len(cell.rows) == 30
    assert got["scatter_points"] == sum(r.score is not None and r.human is not None for r in cell.rows)
    ci = cell.stats["ci"]
    if ci["n_units"] < MIN_CONVERSATIONS:  # below the floor: the value alone, no interval and no p
        assert f"Spearman {_rho(cell.stats['spearman']['value'])} {too_few_text(ci['n_units'])}: no interval, no p" \
            in got["cell_stats"].replace("  ", " ")
    else:
        assert re.search(rf"Spearman {_rho(cell.stats['spearman']['value'])} \[{_rho(ci['low'])}, "
                         rf"{_rho(ci['high'])}\]", got["cell_stats"])
    failed = [r for r, row in enumerate(cell.rows) if row.error]
    assert failed and got["count_failed"] == len(failed)  # the injected failures, and only those
    assert sorted(r for _, r in got["failed_rows"]) == failed
    items = from_results_items(view, cell)
    hits = [r for r, row in enumerate(cell.rows) if SEARCH in items[row.id]]
    assert hits and got["count_search"] == len(hits)
    assert got["search_rows"] == by_disagreement(view, [(one, r) for r in hits])[:50]
    assert (shots / "cell.png").stat().st_size > 10_000 and (shots / "search.png").stat().st_size > 10_000


def from_results_items(view, cell) -> dict[str, str]:
    """Each item's searchable text as the page builds it: id, reply and conversation, lower case."""
    table = view.items[cell.table]
    return {i: "\n".join([i, it.response or "", "\n".join(t.text for t in (it.context if it.level == "turn"
                                                                            else it.dialog))]).lower()
            for i, it in table.items()}


def test_two_methods_side_by_side(seen):
    got, view, sent, shots = seen
    a = next(i for i, c in enumerate(view.cells) if (c.method, c.dataset) == ("yesno", "topical-usr"))
    b = next(i for i, c in enumerate(view.cells) if (c.method, c.dataset) == ("bm25c-2", "topical-usr"))
    from judge.harness.summary import paired_comparison
    from judge.stats import correlation as stats

    comp = paired_comparison(view.cells[a].rows, view.cells[b].rows, view.n_boot, view.seed)
    assert got["paired_diff"] == f"A − B = {_rho(comp['diff'])}"
    assert f"[{_rho(comp['low'])}, {_rho(comp['high'])}]" in got["pair_stats"]
    assert got["pair_count"] == 30
    ids = [r.id for r in view.cells[a].rows]
    g = stats.rank_gap([r.score for r in view.cells[a].rows], [r.score for r in view.cells[b].rows])
    expected = sorted(range(len(ids)), key=lambda k: (g[k] is None, -abs(round(g[k], 4) if g[k] is not None else 0), k))
    assert got["pair_order"] == [ids[k] for k in expected]
    first, second = got["side_by_side"]["blocks"]
    assert (first["cell"], second["cell"]) == (a, b)
    assert first["prompt"] == view.cells[a].prompts[first["row"]] and first["prompt"] in sent
    assert second["prompt"] == view.cells[b].prompts[second["row"]] and second["prompt"] in sent
    assert view.cells[a].rows[first["row"]].id == view.cells[b].rows[second["row"]].id == ids[expected[0]]
    assert (shots / "compare.png").stat().st_size > 10_000


def _rho(x: float) -> str:
    """A correlation as the page prints it: three decimals, no leading zero."""
    return re.sub(r"^(-?)0\.", r"\1.", f"{x:.3f}")


@pytest.mark.slow  # a run, a view and a second browser: the README's picture, made as the docs say
def test_the_readme_picture_command_makes_its_pictures(seen, data_dir, tmp_path):
    out = tmp_path / "view.png"
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "view_screenshot.py"), "--backend", "mock", "--limit",
                           "8", "--data-dir", str(data_dir), "--out", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for png in (out, tmp_path / "view-compare.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
