"""Determinism: the same input and settings give byte-identical output (real default model).

Both passes of the main test run with ``--no-cache``: with the cache on (the default) the second pass
would be served from SQLite without a single model call, and the test would check serialisation, not
the model. That the cache gives back what the model computed is a separate test below (and
tests/test_cache.py::test_hits_misses_and_zero_calls_on_repeat for the backend wrapper itself).

(That the llama.cpp backend's reused KV prefix does not change scores is tested in
tests/test_prefix_reuse.py, against from-scratch evaluation.)
"""

from __future__ import annotations

import hashlib
import json
import os
import re
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


def _score(data: Path, out: Path, cache: Path, *options: str) -> str:
    """``judge score`` in a subprocess with its own cache file; returns stderr."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JUDGE_CACHE": str(cache)}
    proc = subprocess.run(
        [sys.executable, "-m", "judge", "score", str(data), "-o", str(out), "--threads", "2", *options],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def _cache_counts(stderr: str) -> tuple[int, int]:
    """(hits, misses) from the ``judge: cache: H hits, M misses`` line."""
    m = re.search(r"judge: cache: (\d+) hits, (\d+) misses", stderr)
    assert m, f"no cache line in stderr: {stderr!r}"
    return int(m.group(1)), int(m.group(2))


@pytest.mark.slow
def test_judge_score_twice_is_byte_identical(tmp_path):
    data = _four_items(tmp_path)
    cache = tmp_path / "cache.sqlite"
    outs = []
    for run in (1, 2):
        out = tmp_path / f"run{run}.jsonl"
        err = _score(data, out, cache, "--no-cache")
        # Both passes ran the model: no cache was opened, so nothing could be served from one.
        assert "judge: cache:" not in err
        assert not cache.exists()
        outs.append(out.read_bytes())
    assert outs[0] == outs[1], "two identical runs wrote different bytes"
    rows = [json.loads(x) for x in outs[0].decode().splitlines()]
    assert [r["id"] for r in rows] == [json.loads(x)["id"] for x in data.read_text().splitlines()]
    assert all(r["score"] is not None for r in rows)
    # Not trivially identical: the scores differ between items.
    assert len({r["score"] for r in rows}) > 1, hashlib.sha256(outs[0]).hexdigest()


@pytest.mark.slow
def test_cached_rerun_writes_the_bytes_of_an_uncached_run(tmp_path):
    """The cache's own determinism: a pass that fills the cache and a pass served entirely from it
    both write exactly the bytes of a run without the cache."""
    data = _four_items(tmp_path)
    cache = tmp_path / "cache.sqlite"
    _score(data, tmp_path / "plain.jsonl", cache, "--no-cache")
    assert _cache_counts(_score(data, tmp_path / "fill.jsonl", cache)) == (0, 4)
    assert _cache_counts(_score(data, tmp_path / "hit.jsonl", cache)) == (4, 0)  # no model call at all
    plain = (tmp_path / "plain.jsonl").read_bytes()
    assert (tmp_path / "fill.jsonl").read_bytes() == plain
    assert (tmp_path / "hit.jsonl").read_bytes() == plain
