"""The method spec: everything that defines one method, whatever entry point it came from.

CLI flags (``judge score/bench/serve``), a TOML ``[[methods]]`` table (``judge run``) and
``make_judge(...)`` keyword arguments all map onto :class:`MethodSpec`; :mod:`judge.engine.build`
turns a spec into a ready scorer. A spec holds names and numbers only (no loaded objects), so it can
be validated cheaply, compared, and written into results files.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from ..config import GenerateConfig
from ..context_views import CONTEXT_VIEWS
from ..errors import InputError
from ..scorers.ensemble import COMBINE_RULES, FIT_RULES
from ..scorers.likelihood import SIGNALS

MethodType = Literal["llm", "classic", "ensemble", "likelihood"]
#: Types that run a language model through a backend (backend, model, options and generate apply).
MODEL_TYPES = ("llm", "likelihood")

#: Option names that would carry a secret; keys come only from environment variables.
SECRET_OPTIONS = frozenset({"api_key", "apikey", "key", "token", "secret", "password", "authorization"})


@dataclass(frozen=True)
class MethodSpec:
    """One method: an LLM judge (prompt + selector + backend + rule), a classic scorer, or an ensemble
    whose score combines its ``members``' scores (see :mod:`judge.scorers.ensemble`).

    ``prompt`` is a built-in name, ``"fed"`` (the FED rating prompt of the quality being scored) or a
    path to a ``.j2`` template. ``pool`` names a labelled file to draw examples from; None means the
    rated items of the data being scored (each item's own conversation kept out by the guard).
    ``seeds`` are selection seeds: random selection runs each, other selectors the first only.
    """

    name: str = ""
    type: MethodType = "llm"
    prompt: str = "yesno"
    selector: str = "none"
    k: int = 0
    seeds: tuple[int, ...] = (0,)
    group_guard: bool = True
    order: str = "ascending"
    manual_set: str | None = None
    pool: str | None = None
    backend: str = "llamacpp"
    model: str | None = None
    #: Backend options (LLM methods) or scorer options (classic methods).
    options: Mapping[str, Any] = field(default_factory=dict)
    generate: GenerateConfig = field(default_factory=GenerateConfig)
    top_k: int = 3
    rule: str = "topk"
    scorer: str | None = None
    #: Ensemble members (each a full spec), their weights (empty: equal) and how they combine.
    members: tuple[MethodSpec, ...] = ()
    weights: tuple[float, ...] = ()
    combine: str = "rank-mean"
    #: ``cv``: weights learned from the scored set's human ratings by grouped cross-validation.
    fit: str = "fixed"
    #: Members (by name) that the ensemble leaves out on a set lacking an input they need (a reference,
    #: a next user turn), decided from the data before anything is computed and recorded in the results.
    optional: tuple[str, ...] = ()
    #: The paper's row shown beside this method in leaderboards (labels only; never changes scores).
    paper: str | None = None
    #: Opt in to a method (or member) that reads the user's turn after the rated response on turn-level
    #: items (``next_user``): refused otherwise, as a live judge never has it (see engine.kinds).
    allow_future: bool = False
    #: Likelihood methods: the statistic of the reply's token log-probabilities
    #: (:data:`judge.scorers.likelihood.SIGNALS`, default ``pmi``).
    signal: str | None = None
    #: LLM methods: what of the item the prompt shows (:data:`judge.context_views.CONTEXT_VIEWS`): the
    #: conversation as ``given``, or ``none`` (the reply alone), the baseline of a contrast.
    context: str = "given"
    #: Position of the config entry it came from (for error messages); 0 elsewhere.
    index: int = 0

    def __post_init__(self) -> None:
        check_no_secrets(self.options, "options" if self.type == "classic" else "backend-option")
        if self.k < 0:
            raise InputError(f"must be >= 0, got {self.k}", field="k")
        if self.top_k < 1:
            raise InputError(f"must be >= 1, got {self.top_k}", field="top_k")
        if not self.seeds:
            raise InputError("at least one seed is needed", field="seeds")
        if self.type == "llm" and self.k > 0 and self.selector in ("none", "zero-shot"):
            raise InputError(f"k = {self.k} needs an example selector (e.g. 'random' or 'bm25-context')",
                             field="selector")
        if self.type == "classic" and not self.scorer:
            raise InputError("a classic method needs a scorer name (e.g. 'length')", field="scorer")
        if self.type == "likelihood":
            if self.signal is None:
                object.__setattr__(self, "signal", "pmi")
            if self.signal not in SIGNALS:
                raise InputError(f"must be one of {', '.join(SIGNALS)}, got {self.signal!r}", field="signal")
            if self.k or self.selector != "none" or self.pool is not None:
                raise InputError("a likelihood method shows no examples: k, selector and pool belong to llm "
                                 "methods", field="k" if self.k else "selector" if self.selector != "none" else "pool")
        elif self.signal is not None:
            raise InputError(f"signal belongs to likelihood methods, not to a {self.type} method", field="signal")
        if self.context not in CONTEXT_VIEWS:
            raise InputError(f"must be one of {', '.join(CONTEXT_VIEWS)}, got {self.context!r}", field="context")
        if self.context != "given" and self.type != "llm":
            raise InputError(f"context belongs to llm methods, not to a {self.type} method", field="context")
        if self.type == "ensemble":
            self._check_ensemble()
        elif self.members or self.weights or self.fit != "fixed" or self.optional:
            raise InputError(f"members, weights, fit and optional belong to ensembles, not to a {self.type} method",
                             field="members")
        if not self.name:
            object.__setattr__(self, "name", self.default_name())

    def _check_ensemble(self) -> None:
        if len(self.members) < 2:
            raise InputError(f"an ensemble needs at least two members, got {len(self.members)}", field="members")
        if any(m.type == "ensemble" for m in self.members):
            raise InputError("an ensemble member cannot itself be an ensemble; list its members", field="members")
        names = [m.name for m in self.members]
        if len(set(names)) < len(names):
            raise InputError(f"members are listed twice: {', '.join(names)}", field="members")
        if self.combine not in COMBINE_RULES:
            raise InputError(f"must be one of {', '.join(COMBINE_RULES)}, got {self.combine!r}", field="combine")
        if self.weights and len(self.weights) != len(self.members):
            raise InputError(f"{len(self.weights)} weights for {len(self.members)} members", field="weights")
        if self.weights and not any(self.weights):
            raise InputError("at least one weight must be non-zero", field="weights")
        if self.fit not in FIT_RULES:
            raise InputError(f"must be one of {', '.join(FIT_RULES)}, got {self.fit!r}", field="fit")
        if self.fit != "fixed" and self.weights:
            raise InputError(f"fit = '{self.fit}' learns the weights: give weights or fit, not both", field="weights")
        unknown = [n for n in self.optional if n not in names]
        if unknown:
            raise InputError(f"{', '.join(unknown)} is not a member (members: {', '.join(names)})", field="optional")
        if self.optional and any(w < 0 for w in self.weights):
            raise InputError("a contrast (a negative weight) needs every member on every set: leaving one out would "
                             "score another quantity; drop optional", field="optional")
        if self.optional and self.fit == "lodo":
            raise InputError("fit = 'lodo' learns one weight per member across sets, so every member must score "
                             "every set: drop optional or use fit = 'cv' / given weights", field="optional")

    def default_name(self) -> str:
        """The name a method gets when none is given: ``<prompt>-<selector>-k<k>``, the scorer's, or
        ``ensemble(<member>+<member>...)``."""
        if self.type == "classic":
            return str(self.scorer)
        if self.type == "likelihood":
            return f"likelihood-{self.signal}"
        if self.type == "ensemble":
            return f"ensemble({'+'.join(m.name for m in self.members)})"
        return f"{self.prompt}-{self.selector}-k{self.k}" + ("" if self.context == "given" else f"-context-{self.context}")

    @property
    def seeded(self) -> bool:
        """Whether seeds change the result (random selection); other methods run their first seed only."""
        return self.type == "llm" and self.selector == "random" and self.k > 0

    def run_seeds(self) -> tuple[int, ...]:
        return self.seeds if self.seeded else self.seeds[:1]

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> MethodSpec:
        """The spec that ``values`` (field name -> value) describe: the one translator every entry point
        uses (CLI flags, TOML ``[[methods]]`` tables, ``make_judge`` keywords).

        Field names, types and defaults are read from the dataclass itself, so a field added to
        :class:`MethodSpec` is accepted, type-checked and defaulted here with no other change. A value
        of the wrong type, an unknown key (with the closest known one) or a setting the spec refuses
        raises an :class:`InputError` whose ``field`` is the spec's field name (``generate.threads`` for
        generation settings); each entry point renames that field into its own words (``--threads``,
        ``methods[0].generate.threads``) and keeps the message. ``generate`` takes a
        :class:`GenerateConfig` or a mapping of its fields; ``seeds`` and other list fields take one
        value or a list.
        """
        hints = spec_field_types(cls)
        out: dict[str, Any] = {}
        for key, value in values.items():
            if key not in hints:
                raise InputError(f"unknown key{_hint(key, hints)}", field=key)
            out[key] = _convert(key, value, hints[key])
        try:
            return cls(**out)
        except TypeError as exc:  # a field the dataclass refused (cannot happen for keys checked above)
            raise InputError(str(exc), field="spec") from None

    def with_changes(self, **changes: Any) -> MethodSpec:
        """A copy with fields replaced (validated again)."""
        return replace(self, **changes)

    def describe(self) -> dict[str, Any]:
        """JSON-ready settings for provenance (results files, ``/v1/info``); holds no secret."""
        if self.type == "classic":
            return {"type": "classic", "scorer": self.scorer, "options": dict(self.options), "paper": self.paper}
        if self.type == "ensemble":
            weights: Any = "learned" if self.fit == "cv" else list(self.weights) or [1.0] * len(self.members)
            return {"type": "ensemble", "combine": self.combine, "weights": weights,
                    **({"fit": self.fit} if self.fit != "fixed" else {}),
                    **({"optional": list(self.optional)} if self.optional else {}),
                    "members": {m.name: {k: v for k, v in m.describe().items() if k != "paper"}
                                for m in self.members}, "paper": self.paper}
        gen = asdict(self.generate)
        if self.type == "likelihood":
            return {"type": "likelihood", "signal": self.signal, "backend": self.backend, "model": self.model,
                    "options": dict(self.options), "generate": gen, "seeds": list(self.run_seeds()),
                    "paper": self.paper}
        return {
            "type": "llm", "prompt": self.prompt, "selector": self.selector, "k": self.k,
            "seeds": list(self.run_seeds()), "group_guard": self.group_guard, "order": self.order,
            "manual_set": self.manual_set, "pool": self.pool, "backend": self.backend, "model": self.model,
            "options": dict(self.options), "generate": gen, "top_k": self.top_k, "rule": self.rule,
            # Only when not the default, so that the provenance of every earlier method reads as before.
            **({"context": self.context} if self.context != "given" else {}),
            "paper": self.paper,
        }


_TYPE_NAMES: dict[Any, str] = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
                               dict: "a table", list: "a list"}


def spec_field_types(cls: type[MethodSpec] = MethodSpec) -> dict[str, Any]:
    """Every field of the spec with its resolved type (what :meth:`MethodSpec.from_mapping` checks)."""
    hints = get_type_hints(cls)
    return {f.name: hints[f.name] for f in fields(cls)}


def _hint(key: str, known: Mapping[str, Any]) -> str:
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else f"; known keys: {', '.join(sorted(known))}"


def _type_name(hint: Any) -> str:
    origin = get_origin(hint)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(hint))
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in get_args(hint) if a is not type(None))
    if origin is tuple:
        return f"{_type_name(get_args(hint)[0])} or a list of them"
    if hint is GenerateConfig:
        return "a table of generation settings"
    return _TYPE_NAMES.get(origin or hint, getattr(hint, "__name__", str(hint)))


def _convert(key: str, value: Any, hint: Any) -> Any:
    """``value`` checked against the field type ``hint`` (tuples from lists, ints as floats where a
    float is asked, a generation table into a :class:`GenerateConfig`); InputError naming ``key`` else."""
    origin = get_origin(hint)
    bad = InputError(f"must be {_type_name(hint)}, got {type(value).__name__}", field=key)
    if hint is Any:
        return value
    if origin is Literal:
        if value not in get_args(hint):
            raise InputError(f"must be {_type_name(hint)}, got {value!r}", field=key)
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in get_args(hint):
            return None
        for arg in get_args(hint):
            if arg is not type(None):
                try:
                    return _convert(key, value, arg)
                except InputError:
                    pass
        raise bad
    if origin is tuple:
        inner = get_args(hint)[0]
        seq = value if isinstance(value, list | tuple) else [value]
        try:
            return tuple(_convert(key, v, inner) for v in seq)
        except InputError:
            raise InputError(f"must be {_type_name(hint)}, got {value!r}", field=key) from None
    if origin is not None and issubclass(origin, Mapping):
        if not isinstance(value, Mapping):
            raise bad
        return dict(value)
    if hint is GenerateConfig:
        return _generate(key, value)
    if hint is bool:
        if not isinstance(value, bool):
            raise bad
        return value
    if hint in (int, float):
        if isinstance(value, bool) or not isinstance(value, int | float) or (hint is int and not isinstance(value, int)):
            raise bad
        return hint(value)
    if isinstance(hint, type) and not isinstance(value, hint):
        raise bad
    return value


def _generate(key: str, value: Any) -> GenerateConfig:
    """A :class:`GenerateConfig` from itself or a table of its fields (errors name ``generate.<field>``)."""
    if isinstance(value, GenerateConfig):
        return value
    if not isinstance(value, Mapping):
        raise InputError(f"must be {_type_name(GenerateConfig)}, got {type(value).__name__}", field=key)
    hints = get_type_hints(GenerateConfig)
    known = {f.name: hints[f.name] for f in fields(GenerateConfig)}
    checked: dict[str, Any] = {}
    for name, v in value.items():
        if name not in known:
            raise InputError(f"unknown key{_hint(name, known)}", field=f"{key}.{name}")
        checked[name] = _convert(f"{key}.{name}", v, known[name])
    try:
        return GenerateConfig(**checked)
    except InputError as exc:
        raise InputError(exc.reason, field=f"{key}.{exc.field}") from None


def check_no_secrets(options: Mapping[str, Any], flag: str) -> None:
    """Refuse an option that carries a key: secrets come from the environment, never flags or files."""
    for key in options:
        if key.lower().replace("-", "_") in SECRET_OPTIONS:
            raise InputError(
                f"'{key}' would put a secret on the command line or in a file; keys are read only from "
                "environment variables: name the variable with --api-key-env NAME (TOML: "
                "options.api_key_env = \"NAME\")", field=flag)
