"""Rows record the hash of the prompt their model read and of the template that rendered it; ``judge view``
shows both and warns on each item whose prompt today's template renders otherwise. A copy of a built-in
template in a folder of its own is scored with, then edited: every item of its cells is warned about, and
none while the template is unchanged. On the mock backend, over the real benchmark data."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from threading import Thread

import pytest

from judge.cli import main
from judge.datasets import load_items
from judge.engine import MethodSpec, prepare
from judge.prompts.templates import short_sha
from judge.records.rows import read_rows
from judge.view import from_scored
from judge.view.page import page_data
from judge.view.serve import make_server

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "dialogues.jsonl"
EDIT = ("Answer Yes or No.", "Answer Yes or No, and be strict.")


def _template(tmp_path: Path) -> Path:
    folder = tmp_path / "prompts"
    folder.mkdir()
    path = folder / "mine.j2"
    path.write_text((ROOT / "prompts" / "yesno.j2").read_text(encoding="utf-8"), encoding="utf-8")
    return path


def _edit(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert EDIT[0] in text
    path.write_text(text.replace(*EDIT), encoding="utf-8")


def _drift(html: str) -> list[list[str | None]]:
    data = json.loads(re.search(r'<script type="application/json" id="judge-data">(.*?)</script>', html, re.S).group(1))
    return [c["rows"]["drift"] for c in data["cells"]]


def test_score_rows_carry_the_hashes_and_the_view_warns_once_the_template_is_edited(tmp_path: Path) -> None:
    template = _template(tmp_path)
    # The example conversations without their ratings: the view then computes no statistics, only prompts.
    unrated = tmp_path / "unrated.jsonl"
    unrated.write_text("".join(json.dumps({k: v for k, v in json.loads(line).items() if k not in ("scores", "scales")})
                               + "\n" for line in EXAMPLES.read_text(encoding="utf-8").splitlines()), encoding="utf-8")
    out = tmp_path / "s.jsonl"
    assert main(["score", str(unrated), "--backend", "mock", "--no-cache", "--prompt", str(template), "-o", str(out),
                 "--no-progress"]) == 0
    rows = read_rows(out)
    assert all(r.template_sha == short_sha(template.read_text(encoding="utf-8")) for r in rows)
    assert len({r.prompt_sha for r in rows}) == len(rows)  # each item's own prompt

    def view_data() -> dict:
        """The page data of the scored rows with the method prepared from the template as it is now."""
        items = load_items(unrated)
        spec = MethodSpec.from_mapping({"prompt": str(template), "backend": "mock"})
        prep = prepare(spec, items)
        view = from_scored(spec, prep, rows, items, {"chat": False, "wrapping": None}, {}, str(unrated))
        return page_data(view)

    (cell,) = view_data()["cells"]
    assert cell["rows"]["drift"] == [None] * len(rows)
    assert cell["rows"]["prompt_sha"] == [r.prompt_sha for r in rows] and cell["rows"]["template_sha"][0]
    _edit(template)
    (cell,) = view_data()["cells"]
    assert all(w and "today's template renders another text" in w and rows[0].template_sha in w
               for w in cell["rows"]["drift"]), cell["rows"]["drift"]


@pytest.mark.slow
def test_judge_view_of_a_run_warns_on_each_item_after_its_template_changed(tmp_path: Path, data_dir: Path) -> None:
    template = _template(tmp_path)
    results = tmp_path / "run"
    assert main(["bench", "--data-dir", str(data_dir), "--dataset", "FT", "--quality", "Overall", "--limit", "6",
                 "--backend", "mock", "--no-cache", "--prompt", str(template), "--results", str(results),
                 "--no-progress"]) == 0
    page = tmp_path / "v.html"
    assert main(["view", str(results), "--data-dir", str(data_dir), "-o", str(page)]) == 0
    (before,) = _drift(page.read_text(encoding="utf-8"))
    assert before == [None] * 6
    _edit(template)
    assert main(["view", str(results), "--data-dir", str(data_dir), "-o", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    (after,) = _drift(html)
    assert len(after) == 6 and all(w and "its template changed since the run" in w for w in after)
    server = make_server(page)
    thread = Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.server_address[1]}/", timeout=10) as resp:
            served = resp.read().decode("utf-8")
    finally:
        server.shutdown()
        server.server_close()
    assert _drift(served) == [after] and 'data-testid": "prompt-drift"' in served
