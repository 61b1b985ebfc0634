"""The suite itself, as a newcomer meets it: without the benchmark files it says once, at the start,
what is missing and which command fetches it, and skips the tests that read them (no error per test)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_missing_benchmark_data_is_one_message_and_skips(tmp_path):
    missing = tmp_path / "no-data"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/test_split.py", "tests/test_properties.py", "-rs",
         "-p", "no:cacheprovider", "-k", "split or gupta or benchmark_records"],
        cwd=ROOT, env={**os.environ, "JUDGE_TEST_DATA": str(missing)}, capture_output=True, text=True, timeout=600)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:]
    header = f"judge: benchmark data not found at {missing}: the tests that read it are skipped"
    assert out.count(header) == 1, out[:2000]
    assert f"judge data download --data-dir {missing}" in out
    assert " error" not in out and "Traceback" not in out
    assert "skipped" in out


def test_ci_runs_the_readmes_test_command_exactly_then_the_slow_suites():
    """The README's command first, then every slow test but the ``long`` ones: together the whole suite less what
    CONTRIBUTING.md names as run before a release (``pytest -m long``)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = readme.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    test_command = next(line for line in first_block if "pytest" in line)
    assert test_command == "pip install '.[test]' && pytest -m \"not slow\""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test_command in ci
    assert ci.index('pytest -m "slow and not long"') > ci.index(test_command)
    assert "`pytest -m long`" in (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def test_ci_prints_each_phases_time_and_sets_no_threading_variable():
    """CI shows where its time goes (installs, lint, README tests, slow suite), and runs the README's
    command without any setting a user would not know to export: judge sets its own threading defaults."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for phase in ("install torch", "install judge[test]", "lint and types", "README tests", "slow suite"):
        assert f'phase_done "{phase}"' in ci, phase
    assert "OMP_WAIT_POLICY" not in ci

