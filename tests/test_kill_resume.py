"""Crash safety of `judge run` and `judge score` with the real embedded model (SmolLM2 via llama.cpp).

Each command is SIGKILLed at several points -- early (the first prompt is in the cache, no row has
reached the output yet), mid-window (half the prompts of the window are cached), and during the
final report (every prompt is cached; the run is writing its files) -- then run again. The rerun
must write files byte-identical to an uninterrupted run, and must ask the model only for the prompts
the killed run had not finished: a kill loses at most the prompts in flight.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
N = 12
CONFIG = f"""
name = "kill"
limit = {N}
datasets = ["DGR"]
[[methods]]
name = "yesno"
prompt = "yesno"
generate = {{threads = 2}}
"""
CELL = "items/yesno/dailydialog-grade/relevance/seed0.jsonl"
#: How many prompts must be in the cache before the kill.
KILL_POINTS = {"early": 1, "mid-window": N // 2, "final-report": N}


def _cached(cache: Path) -> int:
    if not cache.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{cache}?mode=ro", uri=True, timeout=1) as db:
            return int(db.execute("SELECT COUNT(*) FROM dists").fetchone()[0])
    except sqlite3.OperationalError:  # the table is not created yet
        return 0


def _commands(kind: str, tmp: Path, data_dir: Path, out: Path) -> list[str]:
    if kind == "run":
        config = tmp / "kill.toml"
        config.write_text(CONFIG)
        return [sys.executable, "-m", "judge", "run", str(config), "--data-dir", str(data_dir), "-o", str(out),
                "--no-progress"]
    data = tmp / "items.jsonl"
    if not data.exists():
        src = (ROOT / "examples" / "dialogues.jsonl").read_text().splitlines()
        data.write_text("\n".join(src[:N]) + "\n")
    return [sys.executable, "-m", "judge", "score", str(data), "-o", str(out / "scores.jsonl"), "--threads", "2"]


def _run(cmd: list[str], cache: Path) -> str:
    p = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "JUDGE_CACHE": str(cache)}, capture_output=True,
                       text=True, timeout=900)
    assert p.returncode == 0, p.stderr
    return p.stderr


def _outputs(kind: str, out: Path) -> bytes:
    return (out / CELL).read_bytes() if kind == "run" else (out / "scores.jsonl").read_bytes()


#: Every case is `long` (CI keeps a killed run's resume in tests/test_cache.py and test_schedule.py, and on the
#: cluster in tests/test_ray.py): `pytest -m long` kills `judge run` and `judge score` at each point.
CASES = [pytest.param(kind, point, marks=pytest.mark.long, id=f"{kind}-{point}")
         for kind in ("run", "score") for point in KILL_POINTS]


@pytest.mark.slow
@pytest.mark.parametrize("kind, point", CASES)
def test_sigkill_then_rerun_matches_uninterrupted_run(tmp_path, data_dir, kind, point):
    ref, out = tmp_path / "ref", tmp_path / "out"
    out.mkdir()
    ref.mkdir()
    _run(_commands(kind, tmp_path, data_dir, ref), tmp_path / "ref-cache.sqlite")

    cache = tmp_path / "cache.sqlite"
    cmd = _commands(kind, tmp_path, data_dir, out)
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, "JUDGE_CACHE": str(cache)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 600
        while _cached(cache) < KILL_POINTS[point] and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    done = _cached(cache)
    assert done >= KILL_POINTS[point]
    if proc.returncode == 0:
        # The last milliseconds (rename, meta, reports) can finish before the kill lands.
        assert point == "final-report"
    else:
        assert proc.returncode == -signal.SIGKILL
        if kind == "run":
            # Killed while scoring: no summary yet; while reporting: the summary may already be written.
            assert point == "final-report" or not (out / "summary.json").exists()
        elif (out / "scores.jsonl").exists():
            # Killed after the atomic rename: the file is whole (never half-written).
            assert point == "final-report" and _outputs(kind, out) == _outputs(kind, ref)


    err = _run(cmd, cache)  # resume
    assert _outputs(kind, out) == _outputs(kind, ref)
    # Only what the killed run had not finished went to the model again (`judge run` also skips the
    # rows already in its cell file, so it asks the cache for fewer prompts than `judge score`).
    if f"resuming: {N} of {N}" in err:  # every row was saved before the kill: nothing to score at all
        assert done == N and " misses" not in err, err
    else:
        assert f" hits, {N - done} misses" in err, err
    if kind == "score":
        assert f"cache: {done} hits, {N - done} misses" in err, err
