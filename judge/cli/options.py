"""Options shared by the subcommands that score with an LLM judge, and building a judge from them."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from ..backends import Backend, backend_names, create_backend
from ..config import GenerateConfig
from ..errors import InputError
from ..items import Item
from ..llm_judge import LLMJudge
from ..prompts import PromptTemplate, builtin_prompts, fed_prompt_name, get_prompt, load_template
from ..qualities import Quality, quality_for
from ..selectors import ORDERS, SELECTOR_NAMES, Selector, get_selector
from ..scorer import Scorer


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
    a = p.add_argument_group("hosted API (--backend openai)")
    a.add_argument("--base-url", default=None, help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1 "
                   "(default: $OPENAI_BASE_URL, else api.openai.com)")
    a.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="NAME",
                   help="environment variable holding the API key (default OPENAI_API_KEY); keys are never "
                   "taken as flags or from files")
    a.add_argument("--endpoint", choices=("auto", "completions", "chat"), default="auto",
                   help="auto: chat completions for chat prompts, completions otherwise")
    a.add_argument("--concurrency", type=int, default=4, help="requests in flight at once (default 4)")
    a.add_argument("--max-retries", type=int, default=6, help="retries of a failing request (default 6)")
    a.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    a.add_argument("--sampling-fallback", type=int, default=0, metavar="N",
                   help="when the server returns no logprobs, estimate them from N sampled answers "
                   "(scores marked estimated); default off")
    c = p.add_argument_group("cache")
    c.add_argument("--cache", action=argparse.BooleanOptionalAction, default=True,
                   help="reuse label distributions from the persistent cache (default on; --no-cache)")
    c.add_argument("--cache-path", default=None, metavar="PATH",
                   help="SQLite cache file (default: $JUDGE_CACHE or ~/.cache/judge/cache.sqlite)")
    g.add_argument("--backend-option", action="append", default=[], metavar="KEY=VALUE",
                   help="backend-specific option, repeatable; VALUE is read as JSON when it parses "
                   "(e.g. dtype=bfloat16, device=cuda, gguf_cache=true, tensor_parallel_size=2)")
    c = p.add_argument_group("classic scorers (instead of an LLM prompt; see docs/classic.md)")
    c.add_argument("--scorer", default=None, help="run this classic scorer instead of an LLM judge "
                   "(length, bleu4, rouge-l, meteor, fed-metric, ...; `judge score --scorer ?` lists them)")
    c.add_argument("--scorer-model", default=None, help="model id/path for a model-based classic scorer")
    c.add_argument("--scorer-option", action="append", default=[], metavar="KEY=VALUE",
                   help="option of the classic scorer (repeatable), e.g. loss=followup")
    s = p.add_argument_group("examples")
    s.add_argument("--selector", default="none",
                   help=f"in-context example selector: {', '.join(SELECTOR_NAMES)} (default: none = zero-shot)")
    s.add_argument("--k", type=int, default=0, help="number of in-context examples")
    s.add_argument("--seed", type=int, default=None, help="seed for random selection (default 0)")
    s.add_argument("--pool", default=None, help="labelled file to draw examples from (default: the scored data, "
                   "leave-group-out)")
    s.add_argument("--no-group-guard", dest="group_guard", action="store_false", default=True,
                   help="allow examples from the test item's own context/dialog (never the item itself); "
                        "mirrors a paper setup, recorded in the output")
    s.add_argument("--example-order", default="ascending", choices=ORDERS,
                   help="ascending: most relevant example last, nearest the test item (default); descending; "
                        "as-selected")
    s.add_argument("--manual-set", default=None, help="manual selector: a shipped set name (fed) or your own "
                   "TOML/JSONL file (default: the shipped set for the dataset)")


def resolve_quality(name: str | None, items: Sequence[Item], known: Sequence[Quality] = ()) -> Quality | None:
    """The Quality object for --quality: the registered set's, or a scale the data declares (quality_for).

    A user's quality without a declared scale comes back scale-less; whatever needs its scale (range
    check, example labels, yes/no thresholds) then refuses it with a clear InputError.
    """
    if name is None:
        return None
    level = items[0].level if items else None
    return quality_for(name, items, level, known=known, strict=False)


def resolve_prompt(args: argparse.Namespace, level: str, quality: Quality | None) -> PromptTemplate:
    if args.template:
        return load_template(args.template, quality=quality)
    name = args.prompt or "yesno"
    if name == "fed":
        if quality is None:
            raise InputError("--prompt fed needs --quality", field="quality")
        name = fed_prompt_name(level, quality.name)
    return get_prompt(name)


def backend_options(args: argparse.Namespace) -> dict[str, object]:
    """Backend keyword options: the API flags (--backend openai) plus ``--backend-option KEY=VALUE`` pairs
    (JSON values: 2, true, "x"; else text)."""
    import json

    out: dict[str, object] = {}
    if args.backend == "openai":
        out.update(base_url=args.base_url, api_key_env=args.api_key_env, endpoint=args.endpoint,
                   sampling_fallback=args.sampling_fallback)
    for raw in getattr(args, "backend_option", None) or []:
        key, sep, value = raw.partition("=")
        if not sep or not key.strip().isidentifier():
            raise InputError(f"expected KEY=VALUE, got {raw!r}", field="backend-option")
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            out[key.strip()] = value
    return out


def generate_config(args: argparse.Namespace) -> GenerateConfig:
    return GenerateConfig(
        chat=args.chat,
        max_context=args.n_ctx,
        threads=args.threads,
        batch_size=args.batch_size,
        concurrency=getattr(args, "concurrency", 4),
        max_retries=getattr(args, "max_retries", 6),
        timeout=getattr(args, "timeout", 60.0),
        cache=getattr(args, "cache", True),
        cache_path=getattr(args, "cache_path", None),
        seed=getattr(args, "seed", None) or 0,  # --seed defaults to None (random selection: seeds 0,1,2)
    )


def check_judge_options(args: argparse.Namespace) -> None:
    """Refuse out-of-range numeric options (InputError naming the flag) before anything is loaded."""
    for flag, minimum in (("k", 0), ("top_k", 1), ("batch_size", 1), ("threads", 1), ("n_ctx", 1)):
        value = getattr(args, flag, None)
        if value is not None and value < minimum:
            raise InputError(f"must be >= {minimum}, got {value}", field="--" + flag.replace("_", "-"))


def wrap_cache(backend: Backend, config: GenerateConfig) -> Backend:
    """The backend behind the persistent cache when caching is on."""
    if not config.cache:
        return backend
    from ..cache import Cache, CachedBackend

    return CachedBackend(backend, Cache(config.cache_path))


def report_backend(backend: Backend, file: TextIO | None = None) -> None:
    """One stderr line each for cache hits/misses and API token usage (when the backend has them)."""
    file = file or sys.stderr
    stats = getattr(backend, "stats", None)
    if callable(stats):
        st = stats()
        print(f"judge: cache: {st['hits']} hits, {st['misses']} misses ({st['path']})", file=file)
    usage = getattr(backend, "usage", None)
    if usage is not None and hasattr(usage, "as_dict"):
        u = usage.as_dict()
        print(f"judge: API usage: {u['requests']} requests answered, {u['prompt_tokens']} prompt tokens, "
              f"{u['completion_tokens']} completion tokens, {u['retries']} retries", file=file)


def make_selector(args: argparse.Namespace, quality: Quality | None, seed: int | None = None) -> Selector:
    """The selector the example options name (``seed`` overrides --seed, for multi-seed runs)."""
    if args.k < 0:
        raise InputError(f"--k must be >= 0, got {args.k}", field="k")
    if args.k > 0 and args.selector in (None, "none", "zero-shot"):
        raise InputError(f"--k {args.k} needs an example selector (--selector {', '.join(SELECTOR_NAMES[1:])})",
                         field="selector")
    seed = seed if seed is not None else (args.seed if args.seed is not None else 0)
    return get_selector(args.selector, seed=seed, group_guard=args.group_guard, manual_set=args.manual_set,
                        order=args.example_order, quality=quality)


def selection_settings(judge: LLMJudge) -> dict[str, object]:
    """What an output line records about example selection: selector settings, k and the guard."""
    return {**judge.selector.describe(), "k": judge.k}


def load_pool(args: argparse.Namespace, items: Sequence[Item], quality: Quality | None) -> list[Item]:
    """Candidate examples: --pool's items, or ``items``; only those with a human label for the quality."""
    if args.k <= 0:
        return list(items)
    if args.pool:
        from ..datasets import load_items

        items = load_items(args.pool)
    if quality is None:
        raise InputError("in-context examples show human labels: name the quality to read them from (--quality)",
                         field="quality")
    pool = [it for it in items if it.human(quality.name) is not None]
    if not pool and args.selector != "manual":
        raise InputError(f"no item in the example pool has a human rating for '{quality.name}'",
                         file=args.pool, field="scores")
    return pool


def build_judge(
    args: argparse.Namespace,
    items: Sequence[Item],
    quality: Quality | None,
    pool: Sequence[Item] | None = None,
) -> LLMJudge:
    """Validate names first (cheap), then load the model (expensive)."""
    check_judge_options(args)
    level = items[0].level if items else "turn"
    prompt = resolve_prompt(args, level, quality)
    quality = quality or prompt.quality
    selector = make_selector(args, quality)
    # Render every item once before the model loads: a template error (undefined variable, sandbox)
    # is bad input and must surface now, not after minutes of scoring.
    for item in items:
        prompt.render(item, [], quality)
    pool = load_pool(args, pool if pool is not None else items, quality)
    if args.k > 0 and hasattr(selector, "resolve"):
        # A manual set's ids are checked against the data now, before the model loads.
        for level in dict.fromkeys(it.level for it in items):
            selector.resolve(next(it for it in items if it.level == level), pool)
    config = generate_config(args)
    backend = wrap_cache(create_backend(args.backend, args.model, config, **backend_options(args)), config)
    return LLMJudge(
        prompt,
        backend,
        quality=quality,
        selector=selector,
        k=args.k,
        pool=pool,
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
