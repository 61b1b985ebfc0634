"""judge: language models as judges of dialogue quality.

Quick use::

    from judge import load_items, make_judge
    items = load_items("examples/dialogues.jsonl")
    j = make_judge(prompt="yesno")            # embedded SmolLM2 via llama.cpp
    for s in j.score(items):
        print(s.item_id, s.value)
    j.score_text(["Hi! How was the match?"], "We won 2-1, it was great.").value
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .backends import Prompt, backend_names, create_backend
from .config import GenerateConfig
from .datasets import load_benchmark, load_items
from .datasets.benchmarks import DATASETS, dataset_info
from .engine import BackendPool, MethodSpec, build, build_scorer, prepare
from .errors import InputError, JudgeError, TemplateError, UnknownNameError
from .items import Item, Turn
from .prompts import PromptTemplate, builtin_prompts, get_prompt, load_template
from .qualities import Quality
from .scorers.base import Score, Scorer
from .scorers.llm import LLMJudge
from .selectors import Selector, get_selector
from .stats import correlate, correlations

__version__ = "0.1.0"


def make_judge(
    prompt: str = "yesno",
    *,
    backend: str = "llamacpp",
    model: str | None = None,
    selector: str = "none",
    k: int = 0,
    pool: Sequence[Item] | None = None,
    quality: Quality | None = None,
    config: GenerateConfig | None = None,
    top_k: int = 3,
    rule: str = "topk",
    seed: int = 0,
    group_guard: bool = True,
    order: str = "ascending",
    manual_set: str | None = None,
    **backend_options: Any,
) -> LLMJudge:
    """An LLM judge from names: a built-in prompt (``fed`` with a FED quality, or a template path), a
    selector and a backend. With ``k`` > 0 and no ``pool``, examples come from the rated items of each
    ``score`` call (each item's own conversation kept out). This is a :class:`MethodSpec` built
    through the same builder as every command."""
    spec = MethodSpec.from_mapping({
        "prompt": prompt, "selector": selector, "k": k, "seeds": seed, "group_guard": group_guard, "order": order,
        "manual_set": manual_set, "backend": backend, "model": model, "options": backend_options,
        "generate": config or GenerateConfig(), "top_k": top_k, "rule": rule})
    judge = build(prepare(spec, None, quality, pool=pool, level=quality.level if quality else "turn"), BackendPool())
    assert isinstance(judge, LLMJudge)
    judge.spec = spec
    return judge


__all__ = [
    "DATASETS",
    "GenerateConfig",
    "InputError",
    "Item",
    "JudgeError",
    "LLMJudge",
    "MethodSpec",
    "Prompt",
    "PromptTemplate",
    "Quality",
    "Score",
    "Scorer",
    "Selector",
    "TemplateError",
    "Turn",
    "UnknownNameError",
    "backend_names",
    "build_scorer",
    "builtin_prompts",
    "correlate",
    "correlations",
    "create_backend",
    "dataset_info",
    "get_prompt",
    "get_selector",
    "load_benchmark",
    "load_items",
    "load_template",
    "make_judge",
]
