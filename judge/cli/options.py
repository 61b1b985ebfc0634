"""Options shared by the subcommands that score with an LLM judge, and building a judge from them."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ..backends import backend_names, create_backend
from ..config import GenerateConfig
from ..errors import InputError
from ..items import Item
from ..llm_judge import LLMJudge
from ..prompts import PromptTemplate, builtin_prompts, fed_prompt_name, get_prompt, load_template
from ..qualities import GENERIC_OVERALL, Quality, find_quality
from ..scorer import Scorer
from ..selectors import get_selector


def add_judge_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("judge")
    g.add_argument("--prompt", default=None, help="built-in prompt name (default: yesno); 'fed' picks the FED rating "
                   f"prompt of --quality. Built-in: {', '.join(builtin_prompts())}")
    g.add_argument("--template", default=None, help="path to your own Jinja2 template (overrides --prompt)")
    g.add_argument("--quality", default=None, help="quality to rate and to read human labels from")
    g.add_argument("--backend", default="llamacpp", help=f"backend name ({', '.join(backend_names())})")
    g.add_argument("--model", default=None, help="model id or path (default: the embedded SmolLM2-135M-Instruct)")
    g.add_argument("--top-k", type=int, default=3, help="top-K rating weighting (default 3)")
    g.add_argument("--chat", action=argparse.BooleanOptionalAction, default=None,
                   help="wrap prompts in the model's chat template (default: when the model has one)")
    g.add_argument("--threads", type=int, default=None, help="CPU threads for local backends")
    g.add_argument("--n-ctx", type=int, default=None, help="context window (default: the model's)")
    g.add_argument("--batch-size", type=int, default=16)
    c = p.add_argument_group("classic scorers (instead of an LLM prompt; see docs/classic.md)")
    c.add_argument("--scorer", default=None, help="run this classic scorer instead of an LLM judge "
                   "(length, bleu4, rouge-l, meteor, fed-metric, ...; `judge score --scorer ?` lists them)")
    c.add_argument("--scorer-model", default=None, help="model id/path for a model-based classic scorer")
    c.add_argument("--scorer-option", action="append", default=[], metavar="KEY=VALUE",
                   help="option of the classic scorer (repeatable), e.g. loss=followup")
    s = p.add_argument_group("examples")
    s.add_argument("--selector", default="none", help="in-context example selector (default: none = zero-shot)")
    s.add_argument("--k", type=int, default=0, help="number of in-context examples")
    s.add_argument("--seed", type=int, default=0, help="seed for random selection")


def resolve_quality(name: str | None, items: Sequence[Item], known: Sequence[Quality] = ()) -> Quality | None:
    """The Quality object for --quality: from the dataset's registry entry, FED/USR/... names, or generic."""
    if name is None:
        return None
    for q in known:
        if q.name.lower() == name.lower():
            return q
    level = items[0].level if items else None
    q = find_quality(name, level)
    if q is not None:
        return q
    if name.lower() == "overall":
        return GENERIC_OVERALL
    if any(name.lower() in (k.lower() for k in it.annotations) for it in items):
        raise InputError(f"quality '{name}' has no known scale; use a template whose metadata gives min and max",
                         field="quality")
    from ..errors import UnknownNameError
    valid = sorted({k for it in items for k in it.annotations}) or [GENERIC_OVERALL.name]
    raise UnknownNameError("quality", name, valid)


def resolve_prompt(args: argparse.Namespace, level: str, quality: Quality | None) -> PromptTemplate:
    if args.template:
        return load_template(args.template, quality=quality)
    name = args.prompt or "yesno"
    if name == "fed":
        if quality is None:
            raise InputError("--prompt fed needs --quality", field="quality")
        name = fed_prompt_name(level, quality.name)
    return get_prompt(name)


def generate_config(args: argparse.Namespace) -> GenerateConfig:
    return GenerateConfig(
        chat=args.chat,
        max_context=args.n_ctx,
        threads=args.threads,
        batch_size=args.batch_size,
    )


def build_judge(
    args: argparse.Namespace,
    items: Sequence[Item],
    quality: Quality | None,
    pool: Sequence[Item] | None = None,
) -> LLMJudge:
    """Validate names first (cheap), then load the model (expensive)."""
    level = items[0].level if items else "turn"
    prompt = resolve_prompt(args, level, quality)
    selector = get_selector(args.selector, seed=args.seed)
    config = generate_config(args)
    backend = create_backend(args.backend, args.model, config)
    return LLMJudge(
        prompt,
        backend,
        quality=quality or prompt.quality,
        selector=selector,
        k=args.k,
        pool=pool if pool is not None else items,
        top_k=args.top_k,
        chat=args.chat,
        batch_size=args.batch_size,
    )


def _option_value(text: str) -> object:
    import tomllib

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text  # a bare word: a string


def build_classic(args: argparse.Namespace, quality: Quality | None) -> Scorer:
    """The classic scorer named by --scorer (no LLM is loaded)."""
    from ..classic import create_classic

    options: dict[str, object] = {}
    for opt in args.scorer_option:
        key, sep, value = opt.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--scorer-option expects KEY=VALUE, got {opt!r}", field="scorer-option")
        options[key.strip().replace("-", "_")] = _option_value(value.strip())
    if args.threads is not None and args.scorer not in _NO_THREADS:
        options.setdefault("threads", args.threads)
    return create_classic(args.scorer, quality=quality, model=args.scorer_model, **options)


#: Scorers without a torch model (they take no ``threads`` option).
_NO_THREADS = {"length", "bleu4", "rouge-l", "meteor", "next-user-sentiment", "embedding-cosine",
               "embedding-reference", "glue-proxy"}
