"""docs/gate.md's commands run as the page prints them (``judge score`` on the mock backend, whose figures the
page says it shows), in order, in a folder beside this checkout's examples; the outputs the page prints are the
ones the commands give, byte for byte, and each command's exit code is the one the page says."""

from __future__ import annotations

import os
from pathlib import Path

from judge.cli import main
from tests.test_docs_commands import fenced_blocks, judge_commands

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "gate.md"


def test_the_pages_commands_give_the_outputs_and_exit_codes_it_prints(tmp_path, capsys, monkeypatch):
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    text = PAGE.read_text(encoding="utf-8")
    commands = judge_commands(text)
    assert [c[0] for c in commands] == ["score", "score", "gate", "score", "gate"]
    codes, outs = [], []
    for args in commands:
        extra = ["--backend", "mock", "--no-cache"] if args[0] == "score" else []
        codes.append(main([*args, *extra]))
        outs.append(capsys.readouterr().out)
    assert codes == [0, 0, 4, 0, 4]
    printed = fenced_blocks(text, ("text",))
    assert printed[0] == outs[2]  # the first gate's report
    assert printed[1] == (tmp_path / "gate.md").read_text(encoding="utf-8")  # its --markdown table
    assert "too few conversations (1 + 1)" in outs[4] and "inconclusive (exit 4)" in outs[4]
    assert os.path.exists(tmp_path / "scores.jsonl")
