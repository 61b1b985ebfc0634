"""``judge models [list|assemble NAME]``: the packaged models, whether installed, their provenance and
the figures measured for them (judge/models/models_data.toml; the quality line generated from the published runs,
judge/models/models_quality.json)."""

from __future__ import annotations

import argparse
import json
import time
import tomllib
from importlib import resources
from typing import Any

from ..core.errors import InputError
from ..engine.named import PRESETS, load_methods
from ..heads.head import read_head, shipped_heads
from ..methods.head import HeadSettings
from ..models.packaged import DEFAULT_MODEL, PACKAGED, SplitModel, ensure_assembled, installed_state
from . import EXIT_OK

NOT_MEASURED = "not measured"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("models", help="list the packaged models (installed or not, provenance, measured figures)")
    p.add_argument("action", nargs="?", default="list", choices=("list", "assemble"),
                   help="list (default), or assemble and verify a split model now instead of on first use")
    p.add_argument("name", nargs="?", default=None, help="model name for 'assemble'")
    p.add_argument("--json", action="store_true", help="print the listing as JSON")
    return p


def measured() -> dict[str, dict[str, Any]]:
    """The measured figures per model name: judge/models/models_data.toml's, and the quality line generated from the
    committed run summaries (judge/models/models_quality.json, :mod:`judge.report.model_figures`)."""
    from ..report.model_figures import read_quality

    text = resources.files("judge.models").joinpath("models_data.toml").read_text(encoding="utf-8")
    figures: dict[str, dict[str, Any]] = tomllib.loads(text).get("models", {})
    for name, line in read_quality().items():
        figures.setdefault(name, {})["quality"] = line
    return figures


def shipped_heads_by_model() -> dict[str, list[dict[str, Any]]]:
    """The heads shipped in judge/heads/shipped/, by the model each was fitted on: name, prompt, the sets it
    learned from (and their items), its cross-validated figures, the preset that scores with it
    (``--method``), and the test-half line of heads on its model (generated from the committed runs,
    judge/models/models_quality.json). Each file is read once for the whole listing."""
    from ..report.model_figures import read_head_quality

    presets = {str(m.settings.head): name for name, m in load_methods(PRESETS).items()
               if isinstance(m.settings, HeadSettings)}
    tested = read_head_quality()
    out: dict[str, list[dict[str, Any]]] = {}
    for name, path in shipped_heads().items():
        head = read_head(path)
        out.setdefault(head.model, []).append({
            "name": name, "prompt": head.prompt, "with_answer": head.with_answer,
            "trained_on": [t.name for t in head.trained_on], "items": sum(t.items for t in head.trained_on),
            "cv": dict(head.cv), "method": presets.get(name), "test_half": tested.get(head.model)})
    return out


def _head_text(head: dict[str, Any]) -> str:
    from ..report.results_page import num

    cv = head["cv"]
    per_set = ", ".join(f"{k} {num(v['spearman'])}" for k, v in cv.get("per_set", {}).items()
                        if v.get("spearman") is not None)
    method = f"; --method {head['method']}" if head["method"] else ""
    indent = "\n" + " " * 17
    tested = f"{indent}{head['test_half']}" if head.get("test_half") else ""
    # The head's own cross-validation reads every item of the sets it learned from, both halves: not a
    # test-half figure, and without a CI; the line above it is the one to compare with the prompts'.
    return (f"{head['name']} (prompt {head['prompt']}, learned from {len(head['trained_on'])} sets{method})"
            f"{tested}{indent}its own cross-validation, {cv.get('how', 'cross-validated')} over all {head['items']:,} "
            f"items it learned from (both halves, no CI; not a test-half figure): mean Spearman "
            f"{num(cv.get('spearman'))}: {per_set}")


def listing() -> list[dict[str, Any]]:
    """One record per packaged model: name, state, size, install command, provenance, sha256, figures."""
    figures = measured()
    heads = shipped_heads_by_model()
    return [{"name": name, "default": name == DEFAULT_MODEL, "state": installed_state(m), "size": m.size,
             "install": m.install, "provenance": m.provenance, "sha256": m.sha256,
             "parts": len(m.parts) if isinstance(m, SplitModel) else 1, "measured": figures.get(name, {}),
             "heads": heads.get(name, [])} for name, m in PACKAGED.items()]


def _print_listing(records: list[dict[str, Any]]) -> None:
    for rec in records:
        flag = " (default)" if rec["default"] else ""
        size = "size unknown" if rec["size"] is None else f"{rec['size'] / 1e6:.0f} MB"
        print(f"{rec['name']}{flag}: {rec['state']}, {size}, {rec['parts']} wheel(s)")
        print(f"    install:     {rec['install']}")
        print(f"    provenance:  {rec['provenance']}")
        print(f"    sha256:      {rec['sha256']} (pinned; the file is refused on a mismatch)")
        for key, label in (("quality", "quality"), ("examples", "examples"), ("speed", "speed"),
                           ("assembly", "assembly"), ("measured_on", "measured on")):
            print(f"    {label + ':':<12} {rec['measured'].get(key, NOT_MEASURED)}")
        for head in rec["heads"]:
            print(f"    {'head:':<12} {_head_text(head)}")


def run(args: argparse.Namespace) -> int:
    if args.action == "assemble":
        split = {n: m for n, m in PACKAGED.items() if isinstance(m, SplitModel)}
        if args.name not in split:
            raise InputError(f"name one of the split models: {', '.join(split)}", field="NAME")
        t0 = time.perf_counter()
        path = ensure_assembled(split[args.name])
        print(f"{args.name}: {path} (sha256 verified, {time.perf_counter() - t0:.1f} s)")
        return EXIT_OK
    if args.name is not None:
        raise InputError("'judge models list' takes no model name", field="NAME")
    records = listing()
    if args.json:
        print(json.dumps(records, indent=1))
    else:
        _print_listing(records)
    return EXIT_OK
