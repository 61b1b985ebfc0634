"""What the LLMBar paper's judges reached on each registered LLMBar set and prompting strategy: the anchors a
judge's accuracy is set beside (``judge compare``, the leaderboards' "Against the pairs' labels" table).

The release holds them as ``<set>/evaluators/<judge>/<strategy>/statistics.json`` (GPT-4, ChatGPT in two
versions, PaLM2, LLaMA2, Falcon; strategies such as ``Vanilla``, ``CoT``, ``Swap``, ``Metrics``,
``Reference`` and their combinations). :func:`read_judges` reads them from a data directory;
``published_judges.json`` beside this module holds what it reads from ``../shared/data`` (written by
:func:`write_judges`, and a test fails until the committed file equals what it reads), so the anchors are
there without the data. Nothing is typed by hand. Per judge and strategy:

* ``accuracy``: ``correct_average``, the mean of the accuracies with the outputs in the given and in the
  swapped order;
* ``both_orders``: ``correct_both``, the share right in both orders;
* ``positional_agreement``: ``equal``, the share with the same verdict in both orders;
* ``n``: the set's pairs.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..core.io import atomic_write_text
from .benchmarks import DATASETS

#: The committed anchors (see the module docstring).
JUDGES_FILE = Path(__file__).with_name("published_judges.json")
SOURCE = "LLMBar (Zeng et al., ICLR 2024), princeton-nlp/LLMBar at 900616bf, <set>/evaluators/<judge>/<strategy>/statistics.json"

_COUNT = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*=")
_PERCENT = re.compile(r"^\s*([0-9.]+)\s*%\s*$")


def _share(value: Any, *, file: str, key: str) -> tuple[float, int | None]:
    """``"93 / 100 = 93.0%"`` -> (0.93, 100); ``"94.5%"`` -> (0.945, None)."""
    if isinstance(value, str):
        if m := _COUNT.match(value):
            right, n = int(m.group(1)), int(m.group(2))
            if n > 0:
                return right / n, n
        elif m := _PERCENT.match(value):
            return float(m.group(1)) / 100.0, None
    raise InputError(f"expected 'k / n = x%' or 'x%', got {value!r}", file=file, field=key)


def read_statistics(path: Path) -> dict[str, Any]:
    """One judge's figures on one set and strategy, from its ``statistics.json``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", file=str(path)) from None
    if not isinstance(data, dict):
        raise InputError("expected a JSON object", file=str(path))
    missing = [k for k in ("correct_average", "correct_both", "equal") if k not in data]
    if missing:
        raise InputError("missing field", file=str(path), field=missing[0])
    accuracy, _ = _share(data["correct_average"], file=str(path), key="correct_average")
    both, n = _share(data["correct_both"], file=str(path), key="correct_both")
    equal, _ = _share(data["equal"], file=str(path), key="equal")
    return {"accuracy": round(accuracy, 6), "both_orders": round(both, 6), "positional_agreement": round(equal, 6),
            "n": n}


def read_judges(data_dir: str | Path) -> dict[str, Any]:
    """Every registered LLMBar set's published judges found under ``data_dir`` (sets without an
    ``evaluators`` folder left out): set name -> list of {judge, strategy, figures}, sorted by judge and
    strategy."""
    sets: dict[str, list[dict[str, Any]]] = {}
    for name, info in DATASETS.items():
        if info.format != "llmbar":
            continue
        folder = Path(data_dir) / Path(info.path).parent / "evaluators"
        if not folder.is_dir():
            continue
        rows = [{"judge": p.parent.parent.name, "strategy": p.parent.name, **read_statistics(p)}
                for p in folder.glob("*/*/statistics.json")]
        sets[name] = sorted(rows, key=lambda r: (r["judge"], r["strategy"]))
    return {"source": SOURCE, "sets": sets}


def write_judges(data_dir: str | Path, path: str | Path = JUDGES_FILE) -> dict[str, Any]:
    """Read the published judges from ``data_dir`` and write them to ``path`` (run it when a set or this reader
    changes: ``python -c "from judge.datasets.published_judges import write_judges; write_judges('../shared/data')"``)."""
    judges = read_judges(data_dir)
    atomic_write_text(path, json.dumps(judges, indent=1) + "\n")
    return judges


@cache
def _committed() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(JUDGES_FILE.read_text(encoding="utf-8"))
    return data


def published_judges(dataset: str) -> list[dict[str, Any]]:
    """The paper's judges on a registered set (its name), per judge and strategy; empty for a set without."""
    return list(_committed()["sets"].get(dataset, ()))
