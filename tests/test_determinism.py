"""Determinism: the same input and settings give byte-identical output (real default model).

(That the llama.cpp backend's reused KV prefix does not change scores is tested in
tests/test_llamacpp.py::test_prefix_reuse_gives_identical_scores.)
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "dialogues.jsonl"


def _four_items(tmp_path: Path) -> Path:
    """Four example dialogues (good and bad responses mixed), as a user's own file."""
    lines = EXAMPLES.read_text(encoding="utf-8").splitlines()[:4]
    path = tmp_path / "four.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
def test_judge_score_twice_is_byte_identical(tmp_path):
    data = _four_items(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    outs = []
    for run in (1, 2):
        out = tmp_path / f"run{run}.jsonl"
        proc = subprocess.run(
            [sys.executable, "-m", "judge", "score", str(data), "-o", str(out), "--threads", "2"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
        )
        assert proc.returncode == 0, proc.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1], "two identical runs wrote different bytes"
    rows = [json.loads(x) for x in outs[0].decode().splitlines()]
    assert [r["id"] for r in rows] == [json.loads(x)["id"] for x in data.read_text().splitlines()]
    assert all(r["score"] is not None for r in rows)
    # Not trivially identical: the scores differ between items.
    assert len({r["score"] for r in rows}) > 1, hashlib.sha256(outs[0]).hexdigest()

