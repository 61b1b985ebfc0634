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

from .core.threads import set_thread_defaults

# Before anything loads llama.cpp or torch (their OpenMP runtimes read the settings once, at load).
set_thread_defaults()

# isort: split

from .backends import Prompt, backend_names, create_backend
from .core.config import GenerateConfig
from .core.distribution import SOURCE_VERSION, check_not_shadowed
from .core.errors import InputError, JudgeError, TemplateError, UnknownNameError
from .data.items import Item, Turn
from .data.qualities import Quality, quality_for
from .datasets import load_benchmark, load_items
from .datasets.benchmarks import DATASETS, dataset_info, registered_quality
from .engine import MethodSpec, build_scorer, prepare
from .engine.session import Session
from .prompts.templates import PromptTemplate, builtin_prompts, get_prompt, load_template
from .scorers.base import Score, Scorer
from .scorers.llm import LLMJudge
from .selectors import Selector, get_selector
from .stats.correlation import correlate, correlations

__version__ = SOURCE_VERSION  # of the distribution dialogue-judge (judge.core.distribution)

# Refuse to run beside the unrelated PyPI package 'judge', which would otherwise half-replace this one.
check_not_shadowed()


def make_judge(
    prompt: str = "yesno",
    *,
    backend: str = "llamacpp",
    model: str | None = None,
    selector: str = "none",
    k: int = 0,
    pool: Sequence[Item] | None = None,
    quality: Quality | str | None = None,
    config: GenerateConfig | None = None,
    top_k: int = 3,
    rule: str = "topk",
    seed: int = 0,
    group_guard: bool = True,
    order: str = "ascending",
    manual_set: str | None = None,
    reason: int = 0,
    reason_temperature: float = 0.0,
    **backend_options: Any,
) -> LLMJudge:
    """An LLM judge from names: a built-in prompt (``fed`` with a FED quality, or a template path), a
    selector and a backend. With ``k`` > 0 and no ``pool``, examples come from the rated items of each
    ``score`` call (each item's own conversation kept out). ``quality`` is a :class:`Quality` or its
    name, read from the ``pool``'s items (their set's qualities, the scales they declare) or, without a
    pool, from the registered benchmark sets (``"appropriateness"``). ``reason`` > 0 has the judge write a
    rationale of at most that many tokens before it answers (each Score keeps it). This is a :class:`MethodSpec`
    built through the same builder as every command. Other kinds of method (likelihood signals,
    ensembles, classic scorers, the presets by name) are specs too: ``build_scorer(spec, items)``, with
    ``judge.engine.named_method`` for a method by name."""
    if isinstance(quality, str):
        quality = _quality_named(quality, pool)
    spec = MethodSpec.from_mapping({
        "prompt": prompt, "selector": selector, "k": k, "seeds": seed, "group_guard": group_guard, "order": order,
        "manual_set": manual_set, "backend": backend, "model": model, "options": backend_options,
        "generate": config or GenerateConfig(), "top_k": top_k, "rule": rule, "reason": reason,
        "reason_temperature": reason_temperature})
    # A judge held by the caller: its session's backends stay open as long as it is used.
    judge = Session().open().build(prepare(spec, None, quality, pool=pool, level=quality.level if quality else "turn"))
    assert isinstance(judge, LLMJudge)
    judge.spec = spec
    return judge


def _quality_named(name: str, pool: Sequence[Item] | None) -> Quality:
    """``make_judge(quality="...")``: the Quality a name means for the pool, else for the registered sets."""
    if pool:
        items = list(pool)
        try:
            known = dataset_info(items[0].dataset).qualities if items[0].dataset else ()
        except UnknownNameError:
            known = ()
        return quality_for(name, items, items[0].level, known=known, strict=False)
    try:
        return registered_quality(name)
    except UnknownNameError as exc:
        raise InputError(f"{exc} (no benchmark set rates it; for your own data's quality pass a pool whose items "
                         "declare its scale, or a Quality object)", field="quality") from None


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
