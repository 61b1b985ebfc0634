"""`judge bench/score --scorer` end to end (real subprocess, real data) and the missing-extra message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str, pre: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "judge", *args] if pre is None else [sys.executable, "-c", pre, *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_bench_with_a_classic_scorer(data_dir, tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    r = run("bench", "--data-dir", str(data_dir), "--dataset", "dailydialog-gupta", "--limit", "40",
            "--scorer", "rouge-l", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "scorer rouge-l" in r.stdout and "n         40" in r.stdout
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 40 and all(0 <= row["score"] <= 1 and row["method"] == "rouge-l" for row in rows)


def test_score_with_scorer_option(data_dir) -> None:
    r = run("score", str(data_dir / "dstc10_track5" / "dailydialog-gupta_eval.json"), "--limit", "3",
            "--scorer", "rouge-l", "--scorer-option", "beta=1.0")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [row["method"] for row in rows] == ["rouge-l"] * 3 and "human" in rows[0]


def test_missing_input_is_a_clear_error(data_dir) -> None:
    r = run("bench", "--data-dir", str(data_dir), "--dataset", "fed-turn", "--scorer", "bleu4")
    assert r.returncode == 2
    assert "needs 'reference'" in r.stderr and "fed-turn_00000" in r.stderr


def test_unknown_scorer_suggests_names(data_dir) -> None:
    r = run("bench", "--data-dir", str(data_dir), "--dataset", "fed-turn", "--scorer", "rougel")
    assert r.returncode == 2 and "rouge-l" in r.stderr


def test_missing_extra_names_the_extra() -> None:
    # A real interpreter in which torch and sentence-transformers cannot be imported: a meta-path finder
    # raises ImportError for them, exactly as when the packages are absent.
    pre = ("import sys\n"
           "class Block:\n"
           "    def find_spec(self, name, path=None, target=None):\n"
           "        if name.split('.')[0] in ('torch', 'sentence_transformers'):\n"
           "            raise ImportError(name)\n"
           "sys.meta_path.insert(0, Block())\n"
           "from judge.scorers.classic import create_classic\n"
           "from judge.core.errors import MissingExtraError\n"
           "from judge.data.items import Item, Turn\n"
           "import judge; assert 'transformers' not in sys.modules\n"
           "item = Item('x', 'turn', context=(Turn('user', 'hi'),), response='hello')\n"
           "for name in ('lm-likelihood', 'embedding-cosine'):\n"
           "    try:\n"
           "        list(create_classic(name, model='gpt2' if name != 'embedding-cosine' else None).score([item]))\n"
           "    except MissingExtraError as e:\n"
           "        print(e)\n")
    r = run(pre=pre)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 2 and all("pip install 'dialogue-judge[classic]'" in line for line in lines)


def test_import_judge_does_not_import_heavy_deps() -> None:
    pre = ("import sys, judge, judge.scorers.classic, judge.cli\n"
           "judge.scorers.classic.classic_names()\n"
           "heavy = [m for m in ('torch', 'transformers', 'sentence_transformers', 'nltk', 'sacrebleu') "
           "if m in sys.modules]\n"
           "print(heavy)")
    r = run(pre=pre)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
