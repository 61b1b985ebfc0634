"""One typed object for the settings of a scoring run that are not the prompt itself."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .errors import InputError
from .fields import TABLES
from .settings import Settings, setting

#: Smallest value of each integer setting that has one; a value below it is refused, never adjusted.
_MINIMUM = {"concurrency": 1, "max_retries": 0, "batch_size": 1, "top_n": 1}
#: The same for settings that may also be None (the model's own context, every core).
_MINIMUM_OR_NONE = {"max_context": 1, "threads": 1}


@dataclass(frozen=True)
class GenerateConfig:
    """Generation / scoring settings shared by every backend (each uses the ones that apply)."""

    top_n: int = setting("how many most-probable tokens a backend returns per prompt (API backends cap it, often at "
                         "20)", 20, flag=None)
    chat: bool | None = setting("wrap prompts in the model's chat template (default: when the model has one)")
    max_context: int | None = setting("context window in tokens (default: the model's own; llama.cpp: its training "
                                      "context)", flag="--n-ctx")
    threads: int | None = setting("CPU threads for local backends (default: every core)")
    batch_size: int = setting("prompts handed to a backend at once", 16)
    concurrency: int = setting("requests in flight at once (hosted APIs)", 4)
    max_retries: int = setting("retries of a failing request before its item is recorded as failed", 6)
    timeout: float = setting("seconds per request", 60.0)
    cache: bool = setting("reuse answers from the persistent cache, and write new ones to it (default on; --no-cache)",
                          True)
    cache_path: str | None = setting("SQLite cache file (default: $JUDGE_CACHE or ~/.cache/judge/cache.sqlite)",
                                     metavar="PATH")
    seed: int = setting("seed for random example selection and anything random in a backend (the sampling fallback, "
                        "a rationale's sampling)", 0)

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


#: The flags and ``generate`` keys of :class:`GenerateConfig`.
GENERATE = Settings(GenerateConfig, "how the model runs (TOML: generate)")
TABLES[GenerateConfig] = "generation settings"


def default_cache_path() -> Path:
    """``$JUDGE_CACHE`` if set, else ``~/.cache/judge/cache.sqlite``: where ``cache_path`` None points, and
    beside it the files every backend may keep (measured rates, converted weights)."""
    env = os.environ.get("JUDGE_CACHE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "judge" / "cache.sqlite"
