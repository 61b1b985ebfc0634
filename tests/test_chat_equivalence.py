"""Equivalence, not trust: shipped sets converted to OpenAI's chat format give the native loader's items and,
through `judge score` (mock backend), its scores.

FED-Dial's dialogs, TopicalChat-USR's (TU) and PersonaChat-USR's (PU) responses are written as ``messages``
records (the knowledge or persona as the system prompt, the rated response as the last assistant message).
A chat log's system prompt is the bot's instructions, shown labelled (``The bot's instructions: ...``), so the
native side of TU and PU is the shipped records with that label put before their ``fact``: the same DSTC10
loader reads them. Each rated response is the chat file's last reply (``ID#N``); its earlier replies are
items of their own, which the native file does not rate.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.cli import main
from judge.data.items import USER
from judge.datasets import load_items
from judge.datasets._common import clean_fact
from judge.datasets.chat import INSTRUCTIONS_LABEL

#: Set file, records used (the first N: the rule is per record, and the test stays fast), level.
SETS = {"FD": ("fed-dial_eval.json", 40, "dialog"), "TU": ("topical-usr_eval.json", 30, "turn"),
        "PU": ("persona-usr_eval.json", 30, "turn")}


def _role(speaker: str) -> str:
    return "user" if speaker == USER else "assistant"


def _native_copy(data_dir: Path, name: str, n: int, out: Path) -> Path:
    """The set's first ``n`` records, their fact labelled as the bot's instructions (as a chat log shows a
    system prompt); otherwise byte-for-byte the shipped records."""
    records = json.loads((data_dir / "dstc10_track5" / name).read_text(encoding="utf-8"))[:n]
    for record in records:
        fact = clean_fact(record.get("fact"))
        if fact is not None:
            record["fact"] = INSTRUCTIONS_LABEL + fact
    out.write_text(json.dumps(records), encoding="utf-8")
    return out


def _chat_copy(native: list, out: Path) -> Path:
    """The native items as OpenAI ``messages`` records: what a chat stack would have logged."""
    with out.open("w", encoding="utf-8") as fh:
        for item in native:
            fact = item.fact[len(INSTRUCTIONS_LABEL):] if item.fact else None
            messages = [{"role": "system", "content": fact}] if fact else []
            turns = item.dialog if item.level == "dialog" else item.context
            messages += [{"role": _role(t.speaker), "content": t.text} for t in turns]
            if item.level == "turn":
                messages.append({"role": "assistant", "content": item.response})
            fh.write(json.dumps({"id": item.id, "model": item.system, "messages": messages}) + "\n")
    return out


def _scores(path: Path, out: Path, *extra: str) -> dict[str, float]:
    assert main(["score", str(path), "--backend", "mock", "--model", "m", "--no-cache", "-o", str(out),
                 *extra]) == 0
    return {row["id"]: row["score"] for row in map(json.loads, out.read_text().splitlines())}


@pytest.mark.parametrize("abbrev", list(SETS))
def test_a_set_in_chat_format_gives_the_native_items_and_scores(abbrev, data_dir, tmp_path):
    name, n, level = SETS[abbrev]
    native_file = _native_copy(data_dir, name, n, tmp_path / f"{abbrev}-native.json")
    native = load_items(native_file)
    chat_file = _chat_copy(native, tmp_path / f"{abbrev}-chat.jsonl")
    chat = {it.id: it for it in load_items(chat_file, level=level)}
    # The rated response is the record's last message: ID#INDEX.
    key = {it.id: it.id if level == "dialog" else f"{it.id}#{len(it.context) + (1 if it.fact else 0)}"
           for it in native}
    assert len(native) == n
    for item in native:
        got = chat[key[item.id]]
        assert (got.level, got.context, got.response, got.dialog, got.fact, got.system) == \
            (item.level, item.context, item.response, item.dialog, item.fact, item.system), item.id
        # Known by content: the chat copy's conversations are the registered set's.
        assert got.conversation == item.conversation, item.id
    if abbrev == "TU":
        assert sum(it.fact is not None for it in native) > n // 2  # the labelled knowledge is compared
    # judge score reads both (the chat log streams); the rated responses' scores are equal.
    native_scores = _scores(native_file, tmp_path / "native.jsonl")
    chat_scores = _scores(chat_file, tmp_path / "chat.jsonl", "--level", level)
    assert len(native_scores) == n
    assert {i: chat_scores[key[i]] for i in native_scores} == native_scores
    # The whole-file path (--view reads the file whole) gives the same rows as the stream.
    whole = _scores(chat_file, tmp_path / "whole.jsonl", "--level", level, "--view", str(tmp_path / "v.html"))
    assert whole == chat_scores


def test_fed_dialogs_match_the_shipped_file_unchanged(data_dir, tmp_path):
    """FED-Dial has no facts: its chat copy scores as the shipped file itself does."""
    shipped = data_dir / "dstc10_track5" / "fed-dial_eval.json"
    native = load_items(shipped)[:40]
    chat_file = _chat_copy(native, tmp_path / "fd.jsonl")
    chat = _scores(chat_file, tmp_path / "chat.jsonl", "--level", "dialog")
    full = _scores(shipped, tmp_path / "native.jsonl", "--limit", "40")
    assert chat == full
