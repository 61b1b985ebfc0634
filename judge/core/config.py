"""One typed object for the settings of a scoring run that are not the prompt itself."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

from .errors import InputError

#: Smallest value of each integer setting that has one; a value below it is refused, never adjusted.
_MINIMUM = {"concurrency": 1, "max_retries": 0, "batch_size": 1, "top_n": 1}
#: The same for settings that may also be None (the model's own context, every core).
_MINIMUM_OR_NONE = {"max_context": 1, "threads": 1}


@dataclass(frozen=True)
class GenerateConfig:
    """Generation / scoring settings shared by every backend (each uses the ones that apply)."""

    #: How many most-probable tokens to return per prompt (API backends cap this, often at 20).
    top_n: int = 20
    #: Wrap prompts in the model's chat template: True, False, or None for "when the model has one".
    chat: bool | None = None
    #: Context window in tokens; None = the model's own (llama.cpp: its training context).
    max_context: int | None = None
    #: CPU threads for local backends; None = all cores.
    threads: int | None = None
    #: Prompts handed to a backend at once.
    batch_size: int = 16
    #: Requests in flight at once (hosted APIs).
    concurrency: int = 4
    #: Retries of a failed API request before the item is recorded as failed.
    max_retries: int = 6
    #: Seconds before an API request times out.
    timeout: float = 60.0
    #: Read and write the persistent cache.
    cache: bool = True
    #: Where the SQLite cache lives; None = the default location.
    cache_path: str | None = None
    #: Seed for anything random in a backend (sampling fallback).
    seed: int = 0

    def __post_init__(self) -> None:
        """Refuse out-of-range settings wherever the config is made (CLI, experiment config, library), so
        no entry point quietly turns ``concurrency=0`` into 1 or ``max_retries=-1`` into 0."""
        for name, minimum in {**_MINIMUM, **_MINIMUM_OR_NONE}.items():
            value = getattr(self, name)
            if value is None and name in _MINIMUM_OR_NONE:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise InputError(f"must be an integer, got {value!r}", field=name)
            if value < minimum:
                raise InputError(f"must be >= {minimum}, got {value}", field=name)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def default_cache_path() -> Path:
    """``$JUDGE_CACHE`` if set, else ``~/.cache/judge/cache.sqlite``: where ``cache_path`` None points, and
    beside it the files every backend may keep (measured rates, converted weights)."""
    env = os.environ.get("JUDGE_CACHE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "judge" / "cache.sqlite"
