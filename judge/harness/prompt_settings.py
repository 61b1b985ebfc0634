"""How a cell's prompts reached the model, kept beside its rows (``seedN.prompt.json``).

The prompt text itself is never stored: ``judge view`` rebuilds it from the cell's settings and rows
(``MethodType.prompts``). What the text alone does not say is recorded here when the cell's scorer is
built: whether the prompts went as one chat message, and the text the backend put around them (the
chat template's parts, the BOS token: ``Backend.wrapping``), so that a prompt is shown as the model
read it without loading the model. Methods that send no rebuildable prompt write no file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..core.io import atomic_write_text
from ..scorers.base import Scorer


def prompt_settings_path(cell_file: Path) -> Path:
    """The file beside a cell's rows (``seed0.jsonl`` -> ``seed0.prompt.json``)."""
    return cell_file.with_suffix(".prompt.json")


def write_prompt_settings(cell_file: Path, scorer: Scorer) -> None:
    """Record how ``scorer`` sends its prompts (atomically; nothing for a scorer that sends none). The
    same settings give the same file, so a resume rewrites it unchanged."""
    settings = scorer.prompt_settings()
    if settings is not None:
        atomic_write_text(prompt_settings_path(cell_file), json.dumps(settings, indent=1, ensure_ascii=False) + "\n")


def read_prompt_settings(cell_file: Path) -> dict[str, Any] | None:
    """What the cell's run recorded; None when it recorded nothing (no prompt, or a run older than the file)."""
    path = prompt_settings_path(cell_file)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
