"""A command's own peak memory and wall time, measured the way the memory benchmarks report them."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path


def measured_run(cmd: Sequence[str], env: Mapping[str, str], log: Path) -> tuple[float, float, int]:
    """(peak RSS in MB, wall seconds, exit code) of ``cmd`` in a subprocess of its own, its stderr in ``log``.
    The peak comes from ``wait4`` on that process alone, so the measuring script's own memory never counts."""
    start = time.perf_counter()
    with log.open("w") as err:
        proc = subprocess.Popen(list(cmd), env=dict(env), stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss / 1024, wall, code  # Linux: KiB
