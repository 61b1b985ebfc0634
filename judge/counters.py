"""Backend usage counters as the lines a person reads on stderr.

Kept outside ``judge/cli`` because the command line is not the only place that reports them:
``judge serve`` prints them when it stops, and nothing outside ``cli/`` imports from ``cli/``.
"""

from __future__ import annotations

import sys
from typing import TextIO


def report_counters(counters: dict[str, int], file: TextIO | None = None) -> None:
    """One stderr line each for cache hits/misses and API token usage (when there were any)."""
    file = file or sys.stderr
    if "cache_hits" in counters:
        print(f"judge: cache: {counters['cache_hits']} hits, {counters['cache_misses']} misses", file=file)
    if "requests" in counters:
        print(f"judge: API usage: {counters['requests']} requests answered, {counters['prompt_tokens']} prompt "
              f"tokens, {counters['completion_tokens']} completion tokens, {counters['retries']} retries", file=file)
