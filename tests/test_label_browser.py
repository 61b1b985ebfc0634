"""``judge label`` in a real browser: Debian's Chromium, headless, driven by Playwright, in a network namespace
of its own (tools/browser.py) where the labelling server runs too. A rater labels items by clicking, the server
is killed (SIGKILL) mid-session and started again, the rater goes on, a second rater starts; the labels file
must hold every label saved, in the seeded order, and the page must resume at the next unlabelled item.

Without chromium or Playwright the test is skipped, unless ``JUDGE_REQUIRE_BROWSER`` is set (CI sets it)."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from judge.datasets.source import resolve_source
from judge.label.order import uniform_order
from judge.records.labels import read_labels
from tests.conftest import skip_unless_required
from tools.browser import missing, run_isolated

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "bot_v1.jsonl"


@pytest.mark.slow  # a browser and two server starts: about 13 s; tests/test_label.py guards the same routes fast
def test_labels_survive_a_killed_server_and_the_rater_resumes(tmp_path):
    skip_unless_required(missing(), "JUDGE_REQUIRE_BROWSER", "browser")
    labels = tmp_path / "labels.jsonl"
    command = [sys.executable, "-m", "judge", "label", str(DATA), "--quality", "overall", "--labels", str(labels),
               "--rater", "ann", "--seed", "7"]
    plan = {"command": command, "shots": str(tmp_path / "shots"), "before": 3, "after": 2, "second": "bo",
            "second_n": 2}
    proc = run_isolated([sys.executable, str(ROOT / "tests" / "label_browser.py"), json.dumps(plan)], cwd=ROOT,
                        timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["errors"] == []
    items = {it.id: it for it in resolve_source(str(DATA)).items}
    order = uniform_order(list(items), 7).ids

    # Each rater goes through the seeded order; the restart went on at the first item not labelled yet.
    assert [(s["id"], s["position"]) for s in seen["labelled"]] == \
        [(order[p], p) for p in range(5)] + [(order[p], p) for p in range(2)]
    assert seen["killed_at"]["id"] == order[3]
    assert seen["after_restart"]["id"] == order[3] and seen["after_restart"]["position"] == 3
    assert seen["after_restart"]["progress"] == "ann: 3 of 8 labelled"
    assert seen["second_first"]["id"] == order[0] and seen["second_first"]["progress"] == "bo: 0 of 8 labelled"
    assert "does not answer" in seen["error_when_down"] and "nothing was saved" in seen["error_when_down"]

    # Not one label lost, none added by the save the dead server never took; rater, time, probability, position.
    written = read_labels(labels)
    assert [(lb.rater, lb.id, lb.position, lb.scores) for lb in written] == \
        [("ann" if s["rater"] == "first" else "bo", s["id"], s["position"], {"overall": float(s["value"])})
         for s in seen["labelled"]]
    assert all(lb.probability == 1 / 8 for lb in written)
    for lb in written:
        assert lb.time is not None and datetime.fromisoformat(lb.time).utcoffset() == timedelta(0)

    # The page shows the conversation, the reply and the scale, and never the data's rating.
    first = items[seen["first"]["id"]]
    assert first.response in seen["first"]["text"] and first.context[0].text in seen["first"]["text"]
    assert "From 1 (worst) to 5 (best)" in seen["first"]["qualities"]
    assert "scores" not in seen["first"]["text"] and "human" not in seen["first"]["text"].lower()
    # Nothing but the two servers' own addresses was asked for.
    assert seen["requests"] and all(u.startswith(tuple(seen["urls"])) for u in seen["requests"])
    assert (tmp_path / "shots" / "after.png").stat().st_size > 5_000
