"""The README's Python section runs as written (real SmolLM2, real data from ../shared/data)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The code blocks of the README's "Python" section (the serving section's client needs a server and
#: is exercised in tests/test_serve.py).
SECTION = (ROOT / "README.md").read_text(encoding="utf-8").split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
BLOCKS = re.findall(r"```python\n(.*?)```", SECTION, flags=re.S)


def test_the_readme_has_python_examples():
    assert len(BLOCKS) >= 2


@pytest.mark.slow
def test_readme_python_examples_run_in_order(data_dir):
    """The blocks share one session, as a reader pastes them; the data path is the README's own."""
    assert "../shared/data" in BLOCKS[0]
    code = "\n".join(BLOCKS).replace("../shared/data", str(data_dir))
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ}, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert sum(line.startswith("ex-") for line in lines) == 12  # one line per example item

