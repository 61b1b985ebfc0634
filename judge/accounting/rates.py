"""How fast this machine evaluates prompts, per model and backend settings (``judge run --check``).

A run's cost is known before it starts only if the machine's speed is: ``--check`` turns the prompt
tokens and llama.cpp decodes a run will evaluate into a wall time with the rate kept here. A rate has two
parts, because a decode has a fixed cost whatever its batch holds (it streams every weight of the model
once) on top of a cost per token: on Qwen2.5-Coder-1.5B with 2 threads, about 0.28 s per decode and 7 ms
per token, so one 265-token batch runs at 118 tokens/s and a judge prompt evaluated as 100-token batches
after its kept prefix at about 90 (docs/harness.md, "What a run will cost"). A rate of tokens alone, taken
on one long batch, made the first estimate of a real run 1.4x short.

The file sits beside the SQLite cache (``$JUDGE_CACHE``'s folder, else ``~/.cache/judge``), so a user who
moves the cache moves the rates with it. A rate is measured on first use by a short calibration (a short
and a long batch through the real backend: two points fit the two parts) and refined after every real
run that evaluated enough tokens to be a measurement (:func:`refined`), so the estimate follows what runs
on this machine actually achieve.

A judge that reasons first also generates tokens, one decode each: their cost is a third part of the rate,
seconds per generated token (``per_generated``), measured by the calibration (a short greedy generation)
and refined by the runs that generated enough of them. A rate recorded before that part existed times a
generated token as a one-token decode (``per_decode + per_token``) until the next calibration.

A rate file that cannot be read (hand-edited, truncated, an older layout) is not an error: ``--check``
says so and measures again, then writes a good file over it. The rates are a convenience, never an input
of a result.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from ..core.config import default_cache_path
from ..core.io import atomic_write_text

#: Version of the file's layout; a file of another version is re-measured like a corrupt one. Version 1
#: kept tokens per second alone.
VERSION = 2
#: Fewer tokens than this in a run say little about the rate (one prompt, a warm-up): not recorded.
MIN_RUN_TOKENS = 200
#: The same for the tokens a run generated (rationales), one decode each.
MIN_RUN_GENERATED = 32


@dataclass(frozen=True)
class Rate:
    """Seconds of model time per llama.cpp decode (``per_decode``) and per prompt token (``per_token``),
    and the measurement they come from: ``tokens`` in ``decodes`` decodes took ``seconds``."""

    model: str
    threads: int
    per_decode: float
    per_token: float
    measured: str  # ISO date (UTC) of the measurement
    how: str  # "calibration" or "run"
    tokens: int = 0
    decodes: int = 0
    seconds: float = 0.0
    #: Seconds per generated token (one decode each, reading the whole KV state); 0: not measured, a
    #: generated token is then timed as a one-token decode.
    per_generated: float = 0.0

    def time(self, tokens: int, decodes: int, generated: int = 0) -> float:
        """Seconds of model time for ``tokens`` prompt tokens evaluated in ``decodes`` decodes, and ``generated``
        tokens generated."""
        return decodes * self.per_decode + tokens * self.per_token + generated * self.generation()

    def generation(self) -> float:
        """Seconds per generated token: measured, else a one-token decode's."""
        return self.per_generated or self.per_decode + self.per_token

    def describe(self, generating: bool = False) -> str:
        """The rate as a person reads it (``generating``: with the cost of a generated token)."""
        generated = f" + {self.generation() * 1000:.0f} ms per generated token" if generating else ""
        return (f"{self.per_decode * 1000:.0f} ms per decode + {self.per_token * 1000:.1f} ms per token{generated} "
                f"(rate measured {self.measured} by a {self.how}, {self.model}, {self.threads} threads)")


class Timed(Protocol):
    """A backend whose speed here is measured and kept (one that declares ``cost = "replay"``): what ``--check``
    asks of it, apart from the answering contract."""

    def rate_identity(self) -> dict[str, object]:
        """What moves the backend's speed on one machine (model file, threads, batch settings): its rate's key."""
        ...

    def calibrate(self, repeats: int) -> Rate:
        """Measure the rate here: seconds per decode and per token, from a short and a long text each evaluated
        ``repeats`` times from an empty cache, the fastest counting."""
        ...


def fit(model: str, threads: int, short: tuple[int, float], long: tuple[int, float],
        generated: tuple[int, float] | None = None) -> Rate:
    """The rate of two single-decode measurements, (tokens, seconds) of a short and a long batch: the
    line through them. Noise that would make a part negative leaves it at zero and the other part
    explaining the long batch alone. ``generated``: (tokens, seconds) of a generation, one decode per token."""
    (n_s, t_s), (n_l, t_l) = short, long
    per_token = (t_l - t_s) / (n_l - n_s) if n_l > n_s and t_l > t_s else t_l / max(n_l, 1)
    per_decode = t_s - n_s * per_token
    if per_decode < 0:
        per_decode, per_token = 0.0, t_l / max(n_l, 1)
    per_generated = generated[1] / generated[0] if generated and generated[0] else 0.0
    return Rate(model, threads, round(per_decode, 9), round(per_token, 9), today(), "calibration", n_s + n_l, 2,
                round(t_s + t_l, 3), round(per_generated, 9))


def refined(before: Rate | None, model: str, threads: int, tokens: int, decodes: int, seconds: float,
            generated: int = 0, generate_seconds: float = 0.0) -> Rate:
    """The rate after a real run that evaluated ``tokens`` in ``decodes`` decodes in ``seconds`` of model
    time (and generated ``generated`` tokens in ``generate_seconds``). One run cannot separate the two parts
    of the prompt rate (its batches are much alike), so the calibration's split is kept and both parts are
    scaled to what the run took: real prompts run slower than a calibration from an empty context
    (attention over a kept prefix, other work on the cores). Without a calibration the run's time is all
    per token, the rate of runs like it. A run that generated at least ``MIN_RUN_GENERATED`` tokens sets the
    generation part to what they took; otherwise it keeps the one before."""
    seconds = round(seconds, 3)
    per_generated = before.per_generated if before is not None else 0.0
    if generated >= MIN_RUN_GENERATED and generate_seconds > 0:
        per_generated = round(generate_seconds / generated, 9)
    if before is None or before.time(tokens, decodes) <= 0:
        return Rate(model, threads, 0.0, round(seconds / tokens, 9), today(), "run", tokens, decodes, seconds,
                    per_generated)
    scale = seconds / before.time(tokens, decodes)
    return Rate(model, threads, round(before.per_decode * scale, 9), round(before.per_token * scale, 9), today(), "run",
                tokens, decodes, seconds, per_generated)


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
            found = data.get("version") if isinstance(data, dict) else None
            raise ValueError(f"layout version {found}, this judge reads version {VERSION}")
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


def record_run(key: str, model: str, threads: int, tokens: int, decodes: int, seconds: float,
               generated: int = 0, generate_seconds: float = 0.0) -> None:
    """After a real run: the rate recorded for ``key`` is refined by what the run took (:func:`refined`), if
    it evaluated enough tokens to be a measurement. Never fails the run (the rates are a convenience)."""
    if tokens < MIN_RUN_TOKENS or seconds <= 0:
        return
    try:
        try:
            before = read_rates().get(key)
        except UnreadableRates:
            before = None
        write_rate(key, refined(before, model, threads, tokens, decodes, seconds, generated, generate_seconds))
    except OSError:
        pass
