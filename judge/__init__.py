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
from .errors import InputError, JudgeError, TemplateError, UnknownNameError
from .items import Item, Turn
from .llm_judge import LLMJudge
from .prompts import PromptTemplate, builtin_prompts, get_prompt, load_template
from .qualities import DATASETS, Quality, dataset_info
from .scorer import Score, Scorer
from .selectors import Selector, get_selector
from .stats import correlate, correlations

__version__ = "0.1.0"


def make_judge(
    prompt: str | PromptTemplate = "yesno",
    *,
    backend: str = "llamacpp",
    model: str | None = None,
    selector: str | Selector | None = None,
    k: int = 0,
    pool: Sequence[Item] | None = None,
    quality: Quality | None = None,
    config: GenerateConfig | None = None,
    top_k: int = 3,
    seed: int = 0,
    **backend_options: Any,
) -> LLMJudge:
    """Build an LLM judge from names: a built-in prompt (or a template path), a backend and a selector."""
    if isinstance(prompt, str):
        tmpl = load_template(prompt) if prompt.endswith(".j2") else get_prompt(prompt)
    else:
        tmpl = prompt
    sel = get_selector(selector, seed=seed) if not hasattr(selector, "select") else selector
    config = config or GenerateConfig()
    be = create_backend(backend, model, config, **backend_options)
    return LLMJudge(tmpl, be, quality=quality, selector=sel, k=k, pool=pool, top_k=top_k,
                    chat=config.chat, top_n=config.top_n, batch_size=config.batch_size)


__all__ = [
    "DATASETS",
    "GenerateConfig",
    "InputError",
    "Item",
    "JudgeError",
    "LLMJudge",
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
