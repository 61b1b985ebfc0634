"""How fast this machine evaluates prompt tokens, per model and backend settings (``judge run --check``).

A run's cost is known before it starts only if the machine's speed is: ``--check`` turns the prompt
tokens a run will evaluate into a wall time with the rate (prompt tokens per second of model time) kept
here. The file sits beside the SQLite cache (``$JUDGE_CACHE``'s folder, else ``~/.cache/judge``), so a
user who moves the cache moves the rates with it. A rate is measured on first use by a short calibration
(a few hundred tokens through the real backend) and replaced after every real run that evaluated enough
tokens to be a measurement, so the estimate follows what runs on this machine actually achieve.

A rate file that cannot be read (hand-edited, truncated) is not an error: ``--check`` says so and
measures again, then writes a good file over it. The rates are a convenience, never an input of a result.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .config import default_cache_path
from .io import atomic_write_text

#: Version of the file's layout; a file of another version is re-measured like a corrupt one.
VERSION = 1
#: Fewer tokens than this in a run say little about the rate (one prompt, a warm-up): not recorded.
MIN_RUN_TOKENS = 200


@dataclass(frozen=True)
class Rate:
    """One measurement: ``tokens`` prompt tokens evaluated in ``seconds`` of model time."""

    model: str
    threads: int
    tokens: int
    seconds: float
    measured: str  # ISO date (UTC) of the measurement
    how: str  # "calibration" or "run"

    @property
    def per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else float("inf")

    def describe(self) -> str:
        return (f"{self.per_second:,.0f} tokens/s (rate measured {self.measured} by a {self.how}, {self.model}, "
                f"{self.threads} threads)")


class UnreadableRates(ValueError):
    """The rate file exists but is not a rate file this version wrote."""


def rate_path() -> Path:
    """Where the rates live: beside the cache (``$JUDGE_CACHE``'s folder, else the default cache's)."""
    return default_cache_path().parent / "rates.json"


def read_rates(path: Path | None = None) -> dict[str, Rate]:
    """Every recorded rate by key; empty when there is no file. Raises :class:`UnreadableRates` naming
    the file and what is wrong with it."""
    path = path or rate_path()
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("version") != VERSION:
            raise ValueError(f"not a version {VERSION} rate file")
        return {key: Rate(**entry) for key, entry in data["rates"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UnreadableRates(f"{path}: unreadable rate file ({exc})") from None


def write_rate(key: str, rate: Rate, path: Path | None = None) -> None:
    """Record ``rate`` under ``key`` (replacing the previous one); an unreadable file is replaced."""
    path = path or rate_path()
    try:
        rates = read_rates(path)
    except UnreadableRates:
        rates = {}
    rates[key] = rate
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"version": VERSION, "rates": {k: asdict(v) for k, v in sorted(rates.items())}}
    atomic_write_text(path, json.dumps(body, indent=1, sort_keys=True) + "\n")


def rate_key(identity: dict[str, Any]) -> str:
    """The key of a model and the backend settings that move its speed (file hash, threads, batch size,
    llama.cpp options), as one stable string."""
    return json.dumps(identity, sort_keys=True, default=str)


def today() -> str:
    return time.strftime("%Y-%m-%d", time.gmtime())


def record_run(key: str, model: str, threads: int, tokens: int, seconds: float) -> None:
    """After a real run: the tokens it evaluated over its model time become the rate, if there were
    enough of them to be a measurement. Never fails the run (the rates are a convenience)."""
    if tokens < MIN_RUN_TOKENS or seconds <= 0:
        return
    try:
        write_rate(key, Rate(model, threads, tokens, round(seconds, 3), today(), "run"))
    except OSError:
        pass
