"""judge sets the threading defaults llama.cpp needs before any OpenMP runtime loads; a user's value wins."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from judge.core.threads import DEFAULTS, set_thread_defaults

ROOT = Path(__file__).resolve().parents[1]
PROBE = "import os, judge; print(os.environ['OMP_WAIT_POLICY'])"


def _probe(env: dict[str, str]) -> str:
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_defaults_fill_only_what_the_user_left_unset():
    env = {"OMP_WAIT_POLICY": "ACTIVE"}
    assert set_thread_defaults(env) == {}
    assert env == {"OMP_WAIT_POLICY": "ACTIVE"}
    empty: dict[str, str] = {"OMP_WAIT_POLICY": ""}  # set but empty counts as unset
    assert set_thread_defaults(empty) == DEFAULTS
    assert empty["OMP_WAIT_POLICY"] == "PASSIVE"


def test_importing_judge_sets_passive_waiting_unless_the_user_chose():
    base = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    assert _probe(base) == "PASSIVE"
    assert _probe({**base, "OMP_WAIT_POLICY": "ACTIVE"}) == "ACTIVE"
