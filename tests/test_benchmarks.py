"""The benchmark scripts run as their README documents them (smallest sizes, the embedded model)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_long_prompts_compares_llama_cpp_settings_on_the_same_items(data_dir):
    """Two timed DailyDialog-Zhao items, 1-shot, SmolLM2: the defaults against flash attention in ABBA
    order; the table has a ratio per setting (1.00x for the baseline) and the largest score difference
    from the first baseline pass (none between the two baseline passes: llama.cpp is deterministic)."""
    proc = subprocess.run([sys.executable, "benchmarks/long_prompts.py", "--data-dir", str(data_dir), "--dataset", "DZ",
                           "--items", "2", "--k", "1"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert sum(line.strip().startswith("pass ") for line in lines) == 4
    table = {line.split()[0]: line.split() for line in lines if line.startswith(("defaults", "flash_attn=true"))}
    assert table["defaults"][3] == "1.00x" and table["flash_attn=true"][3].endswith("x")
    # The same answers up to llama.cpp's numerics: flash attention moves a probability by a few hundredths.
    assert float(table["defaults"][4]) == 0.0 and float(table["flash_attn=true"][4]) < 0.1


