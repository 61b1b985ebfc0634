"""Options shared by the subcommands that score with an LLM judge, and building a judge from them."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, fields, replace
from typing import Any

from ..backends import backend_names
from ..backends.hosted import HOSTED, HostedOptions
from ..backends.registry import has_batch_api
from ..core.config import GENERATE, GenerateConfig
from ..core.errors import InputError
from ..core.settings import Settings
from ..data.items import Item
from ..data.qualities import Quality, Scale, parse_scale, quality_for
from ..engine import MethodSpec
from ..engine.named import named_method, with_runtime
from ..engine.ray_options import RayOptions, add_ray_options, ray_from_args
from ..engine.session import RunOptions
from ..engine.spec import DEFAULT_TYPE, METHOD_TYPES, MethodType, method_type, own_fields, spec_fields


def add_judge_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("judge")
    g.add_argument("--method", default=None, metavar="NAME",
                   help="a method by name: a shipped preset (yesno, criteria, pmi, criteria-pmi, criteria-pmi-pmimax, criteria-ref-user; "
                   "judge/methods/presets.toml) or one of --methods-file. The flags of where and how to run it apply (--backend, "
                   "--model, --threads, --n-ctx, API and cache flags, --chat, --name); flags that define a method "
                   "(--prompt, --selector, --top-k, ...) are refused beside it")
    g.add_argument("--methods-file", default=None, metavar="FILE",
                   help="TOML file of [[methods]] tables, as in a judge run config, that --method names")
    g.add_argument("--template", default=None, help="path to your own Jinja2 template (overrides --prompt)")
    g.add_argument("--quality", default=None, help="quality to rate and to read human labels from")
    g.add_argument("--scale", action="append", default=[], metavar="QUALITY=MIN:MAX",
                   help="declare a quality's rating scale (repeatable), e.g. overall=0:2; used for range checks, "
                        "example labels and yes/no thresholds (overrides the file's own declaration)")
    g.add_argument("--backend", default="llamacpp", help=f"backend name ({', '.join(backend_names())})")
    g.add_argument("--model", default=None, help="model id or path (default: the embedded SmolLM2-135M-Instruct)")
    Settings(method_type(DEFAULT_TYPE).settings).add_flags(g)
    g.add_argument("--name", default=None, help="method name written in each output row (default: "
                   "<prompt>-<selector>-k<k>, or the scorer's name)")
    GENERATE.add_flags(p)
    HOSTED.add_flags(p)
    g.add_argument("--allow-future", action="store_true", default=False,
                   help="allow a method (or --member) that reads the user's turn after the rated response "
                   "(next-user-sentiment on turn-level items): refused otherwise, as a live judge never has it; "
                   "reports label it uses-future (judge serve refuses it always)")
    g.add_argument("--backend-option", action="append", default=[], metavar="KEY=VALUE",
                   help="backend-specific option, repeatable; VALUE is read as JSON when it parses "
                   "(e.g. dtype=bfloat16, device=cuda, gguf_cache=true, tensor_parallel_size=2)")
    g.add_argument("--likelihood", default=None, metavar="SIGNAL",
                   help="score with the model's log-probabilities of the reply instead of a prompt: pmi (context "
                   "against no context, default signal), conditional, unconditional, conditional-min, pmi-min, "
                   "pmi-max, followup (FED follow-ups; docs/likelihood.md)")
    Settings(method_type("head").settings).add_flags(g)
    c = p.add_argument_group("classic scorers (instead of an LLM prompt; see docs/classic.md)")
    Settings(method_type("classic").settings).add_flags(c)
    c.add_argument("--scorer-model", default=None, help="model id/path for a model-based classic scorer")
    c.add_argument("--scorer-option", action="append", default=[], metavar="KEY=VALUE",
                   help="option of the classic scorer (repeatable), e.g. loss=followup")
    e = p.add_argument_group("ensembles (a method combining other methods' scores; see docs/harness.md)")
    e.add_argument("--member", action="append", default=[], metavar="KEY=VALUE[,KEY=VALUE...]",
                   help="an ensemble member (repeat, at least twice): the other flags with these changes, e.g. "
                   "--member prompt=yesno --member prompt=rating,rule=expected --member scorer=length; optional=true leaves a "
                   "member out where the data lacks its input (e.g. scorer=embedding-reference,optional=true). "
                   f"Keys: {', '.join(sorted(member_keys()))}")
    Settings(method_type("ensemble").settings).add_flags(e)


#: The flags of :class:`RunOptions`, which every command that runs a judge shares.
RUN = Settings(RunOptions)


def add_run_options(p: argparse.ArgumentParser) -> None:
    """The flags of :class:`RunOptions`: ``--no-progress``, and ``--ray`` with its actors (:class:`RayOptions`)."""
    RUN.add_flags(p)
    add_ray_options(p)


def run_options(args: argparse.Namespace, ray: RayOptions | None = None) -> RunOptions:
    """How the flags say a command's run goes, over ``ray`` (a config's ``[run]`` table)."""
    return RunOptions(ray=ray_from_args(args, ray), **RUN.given(args))


def add_view_option(p: argparse.ArgumentParser) -> None:
    """``--view FILE``: also write the ``judge view`` page of the scored cell."""
    p.add_argument("--view", default=None, metavar="FILE", help="also write a page to look at what the judge did "
                   "(each item, its prompt as the model read it, the scatter against the human ratings; docs/view.md)")


def add_check_option(p: argparse.ArgumentParser, checked: str, work: str) -> None:
    """``--check``: validate ``checked`` and the options, print what ``work`` would cost, and stop."""
    p.add_argument("--check", action="store_true", help=f"check the {checked} and options, then print what {work} "
                   "would cost (prompt tokens after prefix reuse, est. time at this machine's measured rate) and stop")


def check_counts(args: argparse.Namespace, *names: str) -> None:
    """Refuse a count flag (``--limit``, ``--bootstrap``, ...) below 1, naming the flag; unset ones pass."""
    for name in names:
        value = getattr(args, name)
        if value is not None and value < 1:
            raise InputError(f"must be >= 1, got {value}", field="--" + name.replace("_", "-"))


def parse_scales(args: argparse.Namespace) -> dict[str, Scale]:
    """--scale QUALITY=MIN:MAX flags as a mapping (the last one wins for a quality)."""
    return dict(parse_scale(text) for text in args.scale)


def or_overall(name: str | None, items: Iterable[Item]) -> str | None:
    """``name``, else ``overall`` when the items are rated for it (the human rating shown beside each score)."""
    return name if name is not None or not any("overall" in map(str.lower, it.annotations) for it in items) else "overall"


def resolve_quality(name: str | None, items: Sequence[Item], known: Sequence[Quality] = (),
                    scales: Mapping[str, Scale] | None = None) -> Quality | None:
    """The Quality object for --quality: a --scale declaration, a scale the data declares, or the
    registered set's (quality_for).

    A user's quality without a declared scale comes back scale-less; whatever needs its scale (range
    check, example labels, yes/no thresholds) then refuses it with a clear InputError.
    """
    if name is None:
        return None
    level = items[0].level if items else None
    declared = {k.lower(): v for k, v in (scales or {}).items()}
    if name.lower() in declared:
        q = quality_for(name, {name: declared[name.lower()]}, level, known=known, strict=False)
        spelled = next((k for it in items for k in it.annotations if k.lower() == name.lower()), q.name)
        return replace(q, name=spelled)
    return quality_for(name, items, level, known=known, strict=False)


#: Hosted options a method records whatever the flags say (the others only when a flag moves them).
_ALWAYS = ("base_url", "api_key_env", "endpoint", "sampling_fallback")


def backend_options(args: argparse.Namespace) -> dict[str, object]:
    """Backend keyword options: the hosted API flags (:class:`judge.backends.hosted.HostedOptions`; --backend
    openai) plus ``--backend-option KEY=VALUE`` pairs (JSON values: 2, true, "x"; else text)."""
    given = HOSTED.given(args)
    defaults = HostedOptions()
    out: dict[str, object] = {}
    if args.backend == "openai":
        out.update({name: given.get(name, getattr(defaults, name)) for name in _ALWAYS})
        out.update({k: v for k, v in given.items() if k not in _ALWAYS and v != getattr(defaults, k)})
    out.update(_batch_options(args.backend, given))
    for raw in args.backend_option:
        key, value = key_value(raw, "backend-option", _json_value)
        out[key] = value
    return out


def _batch_options(backend: str, given: Mapping[str, object]) -> dict[str, object]:
    """The Batch API flags given, as backend options; refused for a backend without a batch API."""
    out = {k: v for k, v in given.items() if k.startswith("batch") and (k != "batch" or v)}
    if "batch_fallback" in out and not (out.get("batch") or "batch_results" in out):
        raise InputError("says what becomes of requests a batch did not answer: it needs --batch or --batch-results",
                         field="--batch-fallback")
    if out and not has_batch_api(backend):
        raise InputError(f"backend '{backend}' has no batch API (--backend openai has)", field=HOSTED.flag(next(iter(out))))
    return out


def _json_value(text: str) -> object:
    import json

    try:
        return json.loads(text)
    except ValueError:
        return text  # a bare word: a string


#: The flag behind a spec field, where it is not ``--`` + the field with dashes (errors name the flag).
FLAGS = {**{f"generate.{name}": GENERATE.flag(name) for name in GENERATE.flagged()}, "order": "--example-order", "options": "--backend-option", "prompt": "--prompt", "seeds": "--seed",
         "members": "--member", "optional": "--member optional=true"}


def flag_for(field: str | None, flags: Mapping[str, str] = FLAGS) -> str:
    """The command-line flag that sets spec field ``field`` (``generate.threads`` -> ``--threads``)."""
    field = field or "spec"
    if field in flags:
        return flags[field]
    return "--" + field.removeprefix("generate.").replace("_", "-")


def spec_from_flags(values: Mapping[str, object], flags: Mapping[str, str] = FLAGS) -> MethodSpec:
    """``MethodSpec.from_mapping`` with its errors naming the flag instead of the spec field."""
    try:
        return MethodSpec.from_mapping(values)
    except InputError as exc:
        raise InputError(exc.reason, field=flag_for(exc.field, flags)) from None


#: Spec fields a ``--member`` does not set: the ensemble's own, and the entry's bookkeeping.
_NOT_MEMBER = frozenset({"type", "index", "paper", "allow_future"})
#: Spec fields that hold scalars (a ``--member`` value is one word).
_SCALARS = (str, int, float, bool, str | None, int | None, float | None)


def _types() -> list[MethodType]:
    return [method_type(name) for name in METHOD_TYPES.names()]


def member_keys(kind: MethodType | None = None) -> list[str]:
    """What a ``--member`` may set (of a member of type ``kind``, or of any type): the scalar spec fields its
    type accepts, the flag that selects a type (``scorer``, ``likelihood``) in place of the field it sets,
    ``chat`` for a type that runs a model, and ``optional``. Ensembles are not members."""
    hints = spec_fields()
    kinds = [kind] if kind is not None else [k for k in _types() if not k.refers_to_methods]
    keys: dict[str, None] = {}
    for k in kinds:
        if k.flag is not None:
            keys[k.flag[0]] = None
        flagged = {t.flag[1] for t in _types() if t.flag is not None}
        keys.update(dict.fromkeys(sorted(f for f in k.accepted() - _NOT_MEMBER - flagged if hints[f] in _SCALARS)))
        if k.runs_model:
            keys["chat"] = None
    return [*keys, "optional"]


def spec_from_args(args: argparse.Namespace, seeds: tuple[int, ...] | None = None,
                   default_type: str = DEFAULT_TYPE) -> MethodSpec:
    """The method the command-line flags describe: an ensemble with --member, a classic scorer with
    --scorer, else a method of ``default_type`` (an LLM judge; ``judge compare``: a pairwise one)."""
    if getattr(args, "method", None) or getattr(args, "methods_file", None):
        return _named_from_args(args)
    if args.member:
        return _ensemble_from_args(args, seeds)
    for kind in _types():
        for name in Settings(kind.settings).given(args) if kind.refers_to_methods else ():
            raise InputError(f"--{name} needs ensemble members (--member ...)", field=name)
    return _single_from_args(args, seeds, default_type)


def add_type_options(p: argparse.ArgumentParser, kind: MethodType) -> None:
    """The flags of a method type's own settings (``MethodType.settings``), generated from its record;
    :func:`spec_from_args` reads them back into the spec."""
    Settings(kind.settings, kind.noun).add_flags(p)


#: Flags that define what a method is. ``--method`` names the whole method, so these are refused beside
#: it rather than quietly ignored; the flags that say where and how to run it (backend, model, threads,
#: context, batching, API and cache settings, --chat) apply to every model the method runs.
METHOD_FLAGS = ("prompt", "template", "scorer", "member", "likelihood", "context", "top_k", "rule", "selector", "k",
                "seed", "pool", "group_guard", "order", "manual_set", "scorer_model", "scorer_option", "seeds")


def _method_flags() -> dict[str, str]:
    """Every flag that defines a method by its name on the parsed namespace: :data:`METHOD_FLAGS` (in that order)
    and those of each type's own settings (their flags from the records)."""
    records: dict[str, str] = {}
    for kind in _types():
        record: Settings[Any] = Settings(kind.settings)
        records.update({name: record.flag(name) for name in record.flagged()})
    return {**{dest: records.get(dest, "--" + dest.replace("_", "-")) for dest in METHOD_FLAGS}, **records}


def _flag_defaults() -> argparse.Namespace:
    parser = argparse.ArgumentParser(add_help=False)
    add_judge_options(parser)
    return parser.parse_args([])


def _named_from_args(args: argparse.Namespace) -> MethodSpec:
    """``--method NAME``: the named method, run where and how the runtime flags say."""
    if not args.method:
        raise InputError("--methods-file needs --method NAME (the method of the file to run)", field="--method")
    defaults = _flag_defaults()
    named = [flag for dest, flag in _method_flags().items()
             if getattr(args, dest, None) not in (None, getattr(defaults, dest, None))]
    if named:
        raise InputError(f"--method names the whole method; drop {', '.join(named)} (or write the method into a "
                         "--methods-file)", field="--method")
    generate = {key: value for key, value in GENERATE.given(args).items()
                if key != "seed" and value != getattr(GenerateConfig(), key)}
    backend = args.backend if args.backend != defaults.backend else None
    spec = with_runtime(named_method(args.method, args.methods_file), backend=backend, model=args.model,
                        options=backend_options(args), generate=generate)
    if args.allow_future:
        spec = replace(spec, allow_future=True)
    return replace(spec, name=args.name) if args.name else spec


def _ensemble_from_args(args: argparse.Namespace, seeds: tuple[int, ...] | None) -> MethodSpec:
    # The base every --member changes is of the default type: the flags that select a type are cleared.
    cleared = {k.flag[0]: None for k in _types() if k.flag is not None}
    base = _single_from_args(argparse.Namespace(**{**vars(args), **cleared, "name": None}),
                             seeds)
    parsed = [_member(base, text) for text in args.member]
    members = [m for m, _ in parsed]
    optional = tuple(m.name for m, is_optional in parsed if is_optional)
    return spec_from_flags({"name": args.name or "", "type": "ensemble", "members": tuple(members),
                            **Settings(method_type("ensemble").settings).given(args), "optional": optional,
                            "allow_future": args.allow_future})


def _member(base: MethodSpec, text: str) -> tuple[MethodSpec, bool]:
    """One ``--member KEY=VALUE,...``: the base spec with those changes, and whether it is optional
    (``optional=true``: left out on data that lacks its input). A type's flag key (``scorer=``,
    ``likelihood=``) makes a member of that type; it keeps the base's settings its type accepts (a type
    with options of its own keeps none of the base's backend options). Values of text fields are kept as
    written; the others are read as TOML values (``k=2``, ``chat=false``)."""
    changes: dict[str, object] = {}
    hints = spec_fields()
    text_fields = {name for name, hint in hints.items() if hint is str or hint == (str | None)}
    flags = {k.flag[0]: k for k in _types() if k.flag is not None}
    known = member_keys()
    for pair in text.split(","):
        key, raw = key_value(pair, "--member", str)
        if key not in known:
            raise InputError(f"expects KEY=VALUE pairs with keys {', '.join(sorted(known))}, got {pair!r}",
                             field="--member")
        changes[key] = raw if key in text_fields | set(flags) else _option_value(str(raw))
    optional = changes.pop("optional", False)
    if not isinstance(optional, bool):
        raise InputError(f"{text!r}: optional must be true or false, got {optional!r}", field="--member")
    chosen = [flags[k] for k in changes if k in flags]
    kind = chosen[0] if chosen else base.kind
    allowed = member_keys(kind)
    extra = set(changes) - set(allowed)
    if extra:
        noun = f"a {_type_name(kind) if chosen else base.type} member"
        listed = [k for k in allowed if k != "optional"]
        raise InputError(f"{noun} takes only {', '.join(listed)} and optional, got {', '.join(sorted(extra))}",
                         field="--member")
    own_options = kind.options_flag == "options"
    values: dict[str, object] = {f.name: getattr(base, f.name) for f in fields(base)
                                 if f.name in kind.accepted() and not (own_options and f.name == "options")}
    # A member keeps the base's settings its own record has too (a head member: the prompt, rule and context).
    shared = own_fields(kind.settings) & own_fields(type(base.settings))
    values.update({name: getattr(base.settings, name) for name in shared})
    if kind.flag is not None:
        values[kind.flag[1]] = changes.pop(kind.flag[0])
    if "chat" in changes:
        values["generate"] = {**asdict(base.generate), "chat": changes.pop("chat")}
    values.update(changes, name=changes.get("name", ""), type=base.type if not chosen else _type_name(kind))
    try:
        return MethodSpec.from_mapping(values), optional
    except InputError as exc:
        key = (exc.field or "").removeprefix("generate.")
        raise InputError(f"{text!r}: {key} {exc.reason}", field="--member") from None


def _type_name(kind: MethodType) -> str:
    """The registered name of ``kind``."""
    return next(name for name in METHOD_TYPES.names() if method_type(name) is kind)


def _single_from_args(args: argparse.Namespace, seeds: tuple[int, ...] | None = None,
                      default_type: str = DEFAULT_TYPE) -> MethodSpec:
    """One method of the type a flag selects (``--scorer``, ``--likelihood``), else of ``default_type``.
    Every method-defining flag goes to the spec when its type accepts it or when the user changed it (so
    that the spec refuses it with its reason rather than ignoring it); where-and-how-to-run flags go to
    types that run a model; the flags a type generates for its own fields (``add_type_options``) go to it."""
    raw = vars(args)
    chosen = [name for name in METHOD_TYPES.names()
              if (flag := method_type(name).flag) is not None and raw.get(flag[0])]
    name = chosen[0] if chosen else default_type
    kind = method_type(name)
    templates = [flag for flag, value in (("--prompt", args.prompt), ("--template", args.template)) if value]
    if templates and "prompt" not in kind.accepted():
        raise InputError(f"a {name} method reads no prompt template; drop {', '.join(templates)}",
                         field=f"--{kind.flag[0]}" if kind.flag else "--prompt")
    base = args.seed if args.seed is not None else 0
    values: dict[str, object] = {}
    for other in _types():  # the flags of each type's own settings: another type's refused by the spec, naming it
        if not other.refers_to_methods:
            values.update(Settings(other.settings).given(args))
    if args.template:
        values["prompt"] = args.template
    # A flag given at the llm judge's default changes nothing for a type without that setting.
    values = {key: value for key, value in values.items()
              if key in kind.accepted() or key not in _SPEC_DEFAULTS or value != _SPEC_DEFAULTS[key]}
    values.update(name=args.name or "", type=name, allow_future=args.allow_future)
    if "seeds" in kind.accepted():
        values["seeds"] = seeds or (base,)
    if kind.runs_model:
        values.update(backend=args.backend, model=args.model, options=backend_options(args),
                      generate=GENERATE.given(args))
    flags = dict(FLAGS)
    if kind.options_flag == "options":
        values["options"] = scorer_options(args)
        flags["options"] = "--scorer-option"
    if kind.flag is not None:
        values[kind.flag[1]] = raw[kind.flag[0]]
        flags[kind.flag[1]] = "--" + kind.flag[0]
    return spec_from_flags(values, flags)


#: The spec's defaults, which a flag left alone holds.
_SPEC_DEFAULTS = {f.name: f.default for f in fields(method_type(DEFAULT_TYPE).settings)}


def key_value(text: str, field: str, parse: Callable[[str], object]) -> tuple[str, object]:
    """One ``KEY=VALUE`` of a repeatable flag: the key (``-`` read as ``_``, an identifier) and the
    value read by ``parse``; InputError naming the flag otherwise."""
    key, sep, value = text.partition("=")
    key = key.strip().replace("-", "_")
    if not sep or not key.isidentifier():
        raise InputError(f"expects KEY=VALUE, got {text!r}", field=field)
    return key, parse(value.strip())


def _option_value(text: str) -> object:
    import tomllib

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text  # a bare word: a string


def scorer_options(args: argparse.Namespace) -> dict[str, object]:
    """Options of the classic scorer named by --scorer: --scorer-option pairs, --scorer-model, --threads."""
    options: dict[str, object] = {}
    for opt in args.scorer_option:
        key, value = key_value(opt, "scorer-option", _option_value)
        options[key] = value
    if args.scorer_model is not None:
        options["model"] = args.scorer_model
    if args.threads is not None and args.scorer not in _NO_THREADS:
        options.setdefault("threads", args.threads)
    return options


#: Scorers without a torch model (they take no ``threads`` option).
_NO_THREADS = {"length", "bleu4", "rouge-l", "meteor", "next-user-sentiment", "embedding-cosine",
               "embedding-reference", "glue-proxy"}
