"""A real chatbot log loads whole: odd-but-real records are scored and flagged, never refused.

``tests/fixtures/real_log.jsonl`` is a small human-bot log written for this test (0-2 ratings, one or
two raters, some lines unrated) with the oddities real logs have: an empty bot reply in the context of
the next rated turn, a blank user message, a bot that opens or speaks twice, a user who sends several
messages in a row, a pasted wall of text, line breaks, emoji, accents and right-to-left scripts, a bot
that echoes the user or repeats itself, and missing optional fields. One test per oddity on the
loader (real templates), and one `judge score` run over the whole file with the real SmolLM2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judge.data.items import ITEM_FLAGS, LONG_TURN_CHARS, SYSTEM, USER
from judge.datasets import load_items
from judge.prompts.templates import get_prompt

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "tests" / "fixtures" / "real_log.jsonl"

#: Every line's expected flags (docs/data-format.md, "Odd but real data").
EXPECTED = {
    "c1-t1": [],
    "c1-t2": ["empty_response"],
    "c1-t3": ["empty_context_turn"],
    "c1-t4": ["empty_context_turn"],
    "c2-t1": ["empty_context"],
    "c2-t2": ["context_ends_with_system"],
    "c3-t1": ["repeated_speaker"],
    "c3-t2": ["repeated_speaker", "multiline_turn"],
    "c4-t1": ["long_turn"],
    "c5-t1": ["non_ascii"],
    "c6-t1": ["non_ascii"],
    "c7-t1": ["response_repeats_context"],
    "c7-t2": ["response_repeats_context"],
    "c8-t1": [],
    "c8-t2": [],
}


@pytest.fixture(scope="module")
def items():
    return {it.id: it for it in load_items(LOG)}


def _render(item, prompt="yesno-criteria"):
    return get_prompt(prompt).render(item)


def test_every_line_loads_with_its_flags(items):
    assert list(items) == list(EXPECTED)
    assert {i: list(it.flags) for i, it in items.items()} == EXPECTED
    # Every flag an item of this format can carry is exercised by this log (a chat log's non-text parts are
    # tests/test_chat_logs.py's).
    assert {f for fl in EXPECTED.values() for f in fl} == set(ITEM_FLAGS) - {"non_text_part"}


def test_empty_context_turn_is_data_shown_empty(items):
    # The case: the bot's earlier reply was empty, and it is in the context of the next rated turn.
    it = items["c1-t3"]
    assert [t.text for t in it.context if t.speaker == SYSTEM][-1] == ""
    assert "System: \nUser: hello? are you there?" in _render(it)
    # A whitespace-only user message is the same: kept as "" (stripped), shown empty.
    assert items["c1-t4"].context[-1].text == "" and _render(items["c1-t4"]).count("User: \n") == 1
    assert "Person A: \nResponse: Is there" in _render(items["c1-t4"], "yesno")


def test_empty_response_is_scored_as_empty(items):
    assert items["c1-t2"].response == ""
    assert "(empty response)" in _render(items["c1-t2"])


def test_empty_context_is_an_opening_turn(items):
    it = items["c2-t1"]
    assert it.context == () and it.response.startswith("Hello!")
    assert "Conversation:\nNext system reply: Hello!" in _render(it)


def test_context_ending_with_the_system(items):
    it = items["c2-t2"]
    assert it.context[-1].speaker == SYSTEM
    assert "System: Lisbon is lovely in May.\nNext system reply: Would you like" in _render(it)


def test_repeated_speakers_are_kept_in_order(items):
    it = items["c3-t1"]
    assert [t.speaker for t in it.context] == [USER, USER, USER]
    assert "User: i need to cancel my order\nUser: order number 55812\nUser: it was the blue jacket" in _render(it)


def test_multiline_turn_keeps_its_line_breaks(items):
    assert items["c3-t2"].context[-1].text == "yes please, and also:\n- refund to my card\n- no store credit"


def test_long_turn_is_kept_whole(items):
    text = items["c4-t1"].context[0].text
    assert len(text) > LONG_TURN_CHARS and text in _render(items["c4-t1"])
    assert text.endswith("held under the agreement.")


def test_non_ascii_text_is_kept_exactly(items):
    assert items["c5-t1"].response == "Il y a « Café Lumière », à deux minutes à pied. ☕"
    assert items["c6-t1"].context[0].text == "مرحبا، هل يمكنك مساعدتي؟"
    assert "שלום, what time do you open?" in _render(items["c6-t1"])


def test_response_repeating_the_context(items):
    # An echo of the user (case and spacing ignored) and a bot that repeats its own earlier reply.
    assert items["c7-t1"].response == "what is the capital of australia?"
    assert items["c7-t2"].response == items["c7-t2"].context[-2].text


def test_missing_optional_fields(items):
    # No scores, an empty list of ratings, no group: loaded, grouped by their text, scored, not rated.
    a, b = items["c8-t1"], items["c8-t2"]
    assert a.human("overall") is None and b.human("overall") is None
    assert a.group == b.group and a.group.startswith("conv:")
    assert a.references == () and a.fact is None and a.next_user is None


@pytest.mark.slow  # 13-25 s of real-model work: kept out of the README's 10-minute command
def test_judge_score_scores_the_whole_log_with_its_flags(tmp_path):
    """Real SmolLM2 through `judge score`: every line scored (none refused, none failed), flags in the rows."""
    out = tmp_path / "scores.jsonl"
    proc = subprocess.run([sys.executable, "-m", "judge", "score", str(LOG), "--quality", "overall",
                           "--prompt", "yesno-criteria", "--threads", "2", "-o", str(out)],
                          cwd=ROOT, env={**os.environ}, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == list(EXPECTED)
    assert all(r["score"] is not None and r.get("error") is None for r in rows), rows
    assert {r["id"]: r["flags"] for r in rows} == EXPECTED
