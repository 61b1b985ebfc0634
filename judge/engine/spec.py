"""The contract of a method type, the method spec, and the registry that holds the types.

A *method type* (``llm``, ``likelihood``, ``classic``, ``ensemble``, ``head``, ``pairwise``, or one a user
registers) is one module that declares, on a :class:`MethodType`:

* its spec fields and their defaults (:attr:`MethodType.fields`, :attr:`MethodType.defaults`), which
  every entry point reads: TOML ``[[methods]]`` tables, command-line flags, presets, ``make_judge`` and
  ``judge serve`` accept exactly those keys;
* what it reads beyond the conversation (a reference, the next user turn, the other replies:
  :meth:`MethodType.reads`), which decides its kind in reports;
* how its inputs are checked before any model loads (:meth:`MethodType.check`, :meth:`MethodType.prepare`);
* how it is built (:meth:`MethodType.build`), what it asks of a backend (:attr:`MethodType.needs`,
  capability names of :class:`judge.backends.base.Capabilities`) and how it is scheduled
  (:meth:`MethodType.share_key`: methods with one key score together in one prefix-ordered pass).

The :class:`MethodSpec` holds names and numbers only (no loaded objects), so it can be validated
cheaply, compared, and written into results files. It lives here, beside the contract, because each
spec is checked by its own type when it is made.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any, ClassVar, Protocol

from ..backends.base import Backend, Prompt
from ..core.config import GenerateConfig
from ..core.errors import InputError
from ..core.fields import check_no_secrets, close_hint, convert, field_types
from ..core.registry import Registry
from ..data.items import Item
from ..data.qualities import Quality
from ..prompts.templates import PromptTemplate
from ..scorers.base import Scorer
from ..selectors import Selector

#: The type of a method that names none (a TOML table naming a ``scorer`` is classic: :attr:`MethodType.implied_by`).
DEFAULT_TYPE = "llm"
#: Spec fields every type accepts.
COMMON_FIELDS = frozenset({"name", "type", "paper", "allow_future", "index"})
#: Spec fields of every type that runs a language model through a backend (:attr:`MethodType.runs_model`).
MODEL_FIELDS = frozenset({"backend", "model", "options", "generate"})


class Backends(Protocol):
    """Where a built method gets its backend: one loaded model shared while methods agree on it
    (:class:`judge.engine.build.BackendPool`)."""

    def get(self, spec: MethodSpec) -> Backend: ...


class MethodType:
    """What one kind of method is and how it runs; subclass it and register it in :data:`METHOD_TYPES`.

    Every hook has a default that suits a method reading the conversation only and running no model,
    so a new type overrides what it needs: at least :meth:`build`.
    """

    #: The spec fields a method of this type may set, beyond :data:`COMMON_FIELDS` (and
    #: :data:`MODEL_FIELDS` when it runs a model). Any other field must keep its default.
    fields: ClassVar[frozenset[str]] = frozenset()
    #: Defaults of this type where they differ from :class:`MethodSpec`'s (applied when a field is left
    #: at the spec's default).
    defaults: ClassVar[Mapping[str, Any]] = {}
    #: Runs a language model through a backend: ``backend``, ``model``, ``options`` and ``generate``
    #: apply, ``judge run --backend/--model`` and ``--method`` change them, ``[defaults]`` tables apply.
    runs_model: ClassVar[bool] = False
    #: Capabilities (:class:`judge.backends.base.Capabilities` field names) it needs of its backend.
    needs: ClassVar[frozenset[str]] = frozenset()
    #: How errors name this type's owner of a field ("llm methods", "ensembles").
    noun: ClassVar[str] = "these methods"
    #: How errors name the ``options`` field (backend options, or the scorer's own).
    options_flag: ClassVar[str] = "backend-option"
    #: The command-line flag (also a ``--member`` key) that selects this type, and the spec field its value
    #: sets: ``("scorer", "scorer")`` for ``--scorer NAME``, ``("likelihood", "signal")`` for
    #: ``--likelihood SIGNAL``. None: chosen otherwise (the default type, ``--member``, ``--method``).
    flag: ClassVar[tuple[str, str] | None] = None
    #: A TOML table holding this key is of this type when it names none (``scorer``: classic).
    implied_by: ClassVar[str | None] = None
    #: Its TOML tables name other methods of the file (an ensemble's members): read after the others.
    refers_to_methods: ClassVar[bool] = False
    #: A set lacking an input this method needs is listed as skipped by ``judge run``, not an error.
    skips_missing_input: ClassVar[bool] = False
    #: Rows record the selection seed the method ran with.
    records_seed: ClassVar[bool] = False
    #: How ``judge run --check`` knows what it costs: None by its backend, ``none`` (no model) or
    #: ``ensemble`` (counted where its members run).
    cost: ClassVar[str | None] = "none"
    #: Its scorer compares two replies to one context (:mod:`judge.data.pairs`) instead of scoring one item: it
    #: runs through ``judge compare``, ``[[compare]]`` cells and ``POST /v1/compare``
    #: (:mod:`judge.engine.compare`), and every entry point that scores items refuses it before anything loads.
    compares: ClassVar[bool] = False
    #: Spec fields of this type that get a command-line flag of their own (``--<field>``, dashes for
    #: underscores), with the flag's help: the commands that build this type generate them
    #: (:func:`judge.cli.options.add_type_options`) and read them back into the spec.
    flags_help: ClassVar[Mapping[str, str]] = {}

    def accepted(self) -> frozenset[str]:
        """Every spec field a method of this type may set."""
        return COMMON_FIELDS | self.fields | (MODEL_FIELDS if self.runs_model else frozenset())

    def foreign(self, key: str, other: str) -> tuple[str, str]:
        """The message (and field) refusing this type's field ``key`` on a method of type ``other``."""
        return f"{key} belongs to {self.noun}, not to a {other} method", key

    # -- the spec alone ------------------------------------------------------------------------------
    def check(self, spec: MethodSpec) -> None:
        """Refuse settings of ``spec`` that cannot go together (InputError naming the field)."""

    def default_name(self, spec: MethodSpec) -> str:
        return spec.type

    def seeded(self, spec: MethodSpec) -> bool:
        """Whether the selection seed changes the result (then every seed of ``spec.seeds`` runs)."""
        return False

    def describe(self, spec: MethodSpec) -> dict[str, Any]:
        """JSON-ready settings for provenance (results files, ``/v1/info``); holds no secret."""
        out: dict[str, Any] = {"type": spec.type}
        for name in sorted(self.fields | (MODEL_FIELDS if self.runs_model else frozenset())):
            value = getattr(spec, name)
            out[name] = dict(value) if isinstance(value, Mapping) else value
        return {**out, "paper": spec.paper}

    def settings_text(self, described: Mapping[str, Any]) -> str:
        """One line of what a method of this type ran with, from its recorded settings (:meth:`describe`),
        as ``judge bench`` prints it."""
        return ", ".join(f"{k} {v}" for k, v in described.items() if k not in ("type", "paper"))

    def members(self, spec: MethodSpec) -> tuple[MethodSpec, ...]:
        """The methods this one combines (ensembles); settings of where to run apply to them too."""
        return ()

    def check_names(self, spec: MethodSpec) -> None:
        """Resolve the names ``spec`` holds through their registries, touching no data."""

    def reads(self, spec: MethodSpec, quality: Quality | None) -> frozenset[str]:
        """What it reads beyond the conversation (``reference``, ``next_user``, ``alternatives``),
        from declarations only: cheap, nothing loads (see :mod:`judge.engine.kinds`)."""
        return frozenset()

    def supervised(self, spec: MethodSpec) -> bool:
        """Whether it learns from the human ratings of the set it scores."""
        return False

    def check_served(self, spec: MethodSpec, reference: Sequence[Item] | None) -> None:
        """Refuse what ``judge serve`` cannot honour for this method (``reference``: ``--reference-set``)."""
        if reference is not None:
            raise InputError("only an ensemble ranks items against a reference set (--member ...)",
                             field="--reference-set")

    def streams(self, spec: MethodSpec) -> bool:
        """Whether a method of ``spec`` scores each item from the item alone, so that ``judge score`` can
        stream a large file through it (items read as they are scored, rows written as they come) instead
        of holding every item: no examples or other replies drawn from the file, no set to rank against,
        no use of an item's conversation (``Item.conversation``, named across the whole file by
        :func:`judge.datasets.identity.identify`, is not set on streamed items). Default: no."""
        return False

    def share_key(self, spec: MethodSpec) -> str | None:
        """Methods with one key run on one backend and are scored together in one prefix-ordered pass
        (:mod:`judge.engine.schedule`); None: scored alone."""
        return None

    def from_table(self, table: Mapping[str, Any], defaults: Mapping[str, Any],
                   methods: Mapping[str, MethodSpec]) -> list[dict[str, Any]]:
        """The spec values one TOML ``[[methods]]`` table stands for (``defaults``: the file's
        ``[defaults]``, applied to methods that run a model; ``methods``: the file's other methods by
        name, for a type that :attr:`refers_to_methods`). Errors are InputErrors naming the key."""
        accepted = self.table_keys()
        for key in table:
            if key not in accepted:
                raise InputError(f"unknown key{close_hint(key, dict.fromkeys(accepted))}", field=key)
        values = dict(table)
        if self.runs_model:
            values = {**{k: v for k, v in defaults.items() if k in accepted}, **table}
            generate = {**_table(defaults.get("generate", {}), "generate"), **_table(table.get("generate", {}), "generate")}
            if "chat" in values:
                generate.setdefault("chat", values.pop("chat"))
            values["generate"] = generate
            if "model" in values and not values["model"]:
                values["model"] = None  # model = "" means the default model
        return [values]

    def table_keys(self) -> frozenset[str]:
        """The keys a TOML table of this type may hold (``chat`` is short for ``generate.chat``)."""
        return self.accepted() - {"index"} | (frozenset({"chat"}) if self.runs_model else frozenset())

    # -- against data, then built --------------------------------------------------------------------
    def prepare(self, spec: MethodSpec, items: Sequence[Item] | None, quality: Quality | None, *,
                pool: Sequence[Item] | None, population: Sequence[Item] | None, seed: int, level: str) -> Prepared:
        """``spec`` checked against ``items`` (None: not known yet) before any model loads: every input
        it needs is there (:class:`judge.core.errors.MissingInputError` naming the record otherwise)."""
        return Prepared(spec, quality, seed)

    def build(self, prepared: Prepared, backends: Backends) -> Scorer:
        """The scorer of a prepared method (loads a model, through ``backends``, on first use)."""
        raise NotImplementedError(f"method type {prepared.spec.type!r} does not say how it is built")

    def prompts(self, prepared: Prepared, shown: Sequence[tuple[Item, Sequence[str]]], chat: bool
                ) -> list[Prompt] | None:
        """The prompts the method sent, rebuilt without a model: one per (item, ids of the examples its row
        records, in the order shown), by the code that built them when it scored (``judge view`` shows
        them). ``chat``: how the run sent them (its recorded ``Scorer.prompt_settings``). None: this type
        sends no prompt that can be rebuilt this way (the default)."""
        return None


def _table(value: Any, key: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError(f"must be a table, got {type(value).__name__}", field=key)
    return dict(value)


#: The method types by name. Built-in types are imported when first named; another package registers
#: its own with ``METHOD_TYPES.register("name")(TypeClass)`` or an entry point in ``judge.methods``.
METHOD_TYPES: Registry[Callable[[], MethodType]] = Registry("method type", "judge.methods")
METHOD_TYPES.register_lazy("llm", "judge.methods.llm:LLMType")
METHOD_TYPES.register_lazy("likelihood", "judge.methods.likelihood:LikelihoodType")
METHOD_TYPES.register_lazy("classic", "judge.methods.classic:ClassicType")
METHOD_TYPES.register_lazy("ensemble", "judge.methods.ensemble:EnsembleType")
METHOD_TYPES.register_lazy("head", "judge.methods.head:HeadType")
METHOD_TYPES.register_lazy("pairwise", "judge.methods.pairwise:PairwiseType")
_INSTANCES: dict[Callable[[], MethodType], MethodType] = {}


def method_type(name: str) -> MethodType:
    """The registered type ``name`` (UnknownNameError, naming the known ones, otherwise)."""
    factory = METHOD_TYPES.get(name)
    if factory not in _INSTANCES:
        kind = factory()
        if not isinstance(kind, MethodType):
            raise TypeError(f"method type {name!r} is registered with {factory!r}, which makes no MethodType")
        _INSTANCES[factory] = kind
    return _INSTANCES[factory]


@dataclass(frozen=True)
class MethodSpec:
    """One method: an LLM judge (prompt + selector + backend + rule), a likelihood signal, a classic
    scorer, an ensemble whose score combines its ``members``' scores, or a method of any other type
    registered in :data:`METHOD_TYPES`. Each field applies to the types that accept it
    (:attr:`MethodType.fields`); the others keep their defaults.

    ``prompt`` is a built-in name, ``"fed"`` (the FED rating prompt of the quality being scored) or a
    path to a ``.j2`` template. ``pool`` names a labelled file to draw examples from; None means the
    rated items of the data being scored (each item's own conversation kept out by the guard).
    ``seeds`` are selection seeds: random selection runs each, other selectors the first only.
    """

    name: str = ""
    #: The method type (:data:`METHOD_TYPES`): what the other fields mean and which of them apply.
    type: str = DEFAULT_TYPE
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
    #: LLM methods: what of the item the prompt shows (:data:`judge.prompts.context_views.CONTEXT_VIEWS`): the
    #: conversation as ``given``, or ``none`` (the reply alone), the baseline of a contrast.
    context: str = "given"
    #: Head methods: the head file ``judge fit`` wrote (``{dataset}``: the scored set's name).
    head: str | None = None
    #: LLM methods: the judge first writes a rationale of at most this many tokens, then answers; the answer
    #: is read after the prompt's answer cue (0: the answer is the next token, the paper's one-token read).
    reason: int = 0
    #: The rationale's sampling temperature (0: greedy); its seed is ``generate.seed``.
    reason_temperature: float = 0.0
    #: Pairwise methods: read each pair in ``both`` orders (default) or in ``one``, drawn per pair by a
    #: seeded hash (``seeds[0]``).
    orders: str = "both"
    #: Position of the config entry it came from (for error messages); 0 elsewhere.
    index: int = 0

    def __post_init__(self) -> None:
        kind = method_type(self.type)
        check_no_secrets(self.options, kind.options_flag)
        if self.k < 0:
            raise InputError(f"must be >= 0, got {self.k}", field="k")
        if self.top_k < 1:
            raise InputError(f"must be >= 1, got {self.top_k}", field="top_k")
        if self.reason < 0:
            raise InputError(f"must be >= 0 (tokens of rationale; 0: none), got {self.reason}", field="reason")
        if self.reason_temperature < 0:
            raise InputError(f"must be >= 0, got {self.reason_temperature}", field="reason_temperature")
        if self.reason_temperature and not self.reason:
            raise InputError("samples a rationale: it needs one (reason = N)", field="reason_temperature")
        if not self.seeds:
            raise InputError("at least one seed is needed", field="seeds")
        for key, value in kind.defaults.items():
            if getattr(self, key) == _DEFAULTS[key]:
                object.__setattr__(self, key, value)
        kind.check(self)
        accepted = kind.accepted()
        for key, default in _DEFAULTS.items():
            if key not in accepted and getattr(self, key) != default:
                owner = next(_owners(key), None)
                reason, field_name = (owner.foreign(key, self.type) if owner is not None
                                      else (f"{key} does not apply to a {self.type} method", key))
                raise InputError(reason, field=field_name)
        if not self.name:
            object.__setattr__(self, "name", kind.default_name(self))

    @property
    def kind(self) -> MethodType:
        """The method type this spec is of (:data:`METHOD_TYPES`)."""
        return method_type(self.type)

    def default_name(self) -> str:
        """The name a method gets when none is given (its type's: ``<prompt>-<selector>-k<k>``, the
        scorer's, ``ensemble(<member>+<member>...)``, ...)."""
        return self.kind.default_name(self)

    @property
    def seeded(self) -> bool:
        """Whether seeds change the result (random selection); other methods run their first seed only."""
        return self.kind.seeded(self)

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
        hints = field_types(cls)
        out: dict[str, Any] = {}
        for key, value in values.items():
            if key not in hints:
                raise InputError(f"unknown key{close_hint(key, hints)}", field=key)
            out[key] = convert(key, value, hints[key])
        try:
            return cls(**out)
        except TypeError as exc:  # a field the dataclass refused (cannot happen for keys checked above)
            raise InputError(str(exc), field="spec") from None

    def with_changes(self, **changes: Any) -> MethodSpec:
        """A copy with fields replaced (validated again)."""
        return replace(self, **changes)

    def describe(self) -> dict[str, Any]:
        """JSON-ready settings for provenance (results files, ``/v1/info``); holds no secret."""
        return self.kind.describe(self)


#: Every spec field with its default (what a field a type does not accept must hold).
_DEFAULTS: dict[str, Any] = {}


def _owners(key: str) -> Iterator[MethodType]:
    """The registered types that accept spec field ``key`` (for the message refusing it elsewhere), the
    default type first: a field of prompts is named as the ``llm`` methods' even where another type that
    reads a prompt (``head``) takes it too."""
    for name in sorted(METHOD_TYPES.names(), key=lambda n: n != DEFAULT_TYPE):
        kind = method_type(name)
        if key in kind.fields:
            yield kind


_DEFAULTS.update({f.name: (f.default_factory() if f.default is MISSING and callable(f.default_factory) else f.default)
                  for f in fields(MethodSpec)})


@dataclass
class Prepared:
    """A spec checked against its data, ready to meet a backend (nothing loaded yet). The fields after
    ``seed`` are what a type's :meth:`MethodType.prepare` hands its :meth:`MethodType.build`."""

    spec: MethodSpec
    quality: Quality | None
    seed: int
    prompt: PromptTemplate | None = None
    selector: Selector | None = None
    pool: list[Item] | None = None
    #: Where a template that reads ``alternatives`` finds the other replies to a context (None: the items
    #: of each score call; ``()``: none).
    population: Sequence[Item] | None = None
    #: A scorer made while preparing (classic scorers check the items themselves).
    classic: Scorer | None = None
    #: Ensembles: the prepared members, and the items their percentiles are taken over.
    members: tuple[Prepared, ...] = ()
    reference: list[Item] | None = None
    #: ``fit = "lodo"`` ensembles: the same method prepared on the experiment's other sets (the harness
    #: fills this in; nothing else has other sets).
    training: tuple[Prepared, ...] = ()
    #: Ensembles: the optional members left out because these items lack their input, with the reason.
    left_out: tuple[tuple[str, str], ...] = ()

    @property
    def weights(self) -> tuple[float, ...]:
        """An ensemble's given weights for the members it kept (empty: equal weights)."""
        kept = {m.spec.name for m in self.members}
        return tuple(w for m, w in zip(self.spec.members, self.spec.weights) if m.name in kept)

    @property
    def label(self) -> str:
        """``<dataset> <quality>`` of the items this was prepared for (names a training set)."""
        dataset = next((it.dataset for it in self.reference or () if it.dataset), "?")
        return f"{dataset} {self.quality.name if self.quality else ''}".strip()
