"""The contract of a method type, the method spec, and the registry that holds the types.

A *method type* (``llm``, ``likelihood``, ``classic``, ``ensemble``, ``head``, ``pairwise``, or one a user
registers) is one module that declares, on a :class:`MethodType`:

* the shared spec fields it takes (:attr:`MethodType.fields`), and its own settings: a typed record (:attr:`MethodType.settings`, made with :func:`judge.core.settings.setting`) whose
  fields generate their command-line flags, config keys and docs table; every entry point reads them:
  TOML ``[[methods]]`` tables, command-line flags, presets, ``make_judge`` and ``judge serve`` accept
  exactly those keys, flat (``reason = 64``) beside the common ones;
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
from typing import Any, ClassVar, Protocol, TypeVar

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
#: A method type's settings record.
S = TypeVar("S")
#: What a method learns its weights from (:meth:`MethodType.trained_on`), in a report's words.
SCORED_SET = "the scored set (out of fold)"
OTHER_SETS = "the experiment's other sets"
EARLIER_FIT = "a fit before the run"


@dataclass(frozen=True)
class NoSettings:
    """The settings record of a type with no settings of its own."""


class Backends(Protocol):
    """Where a built method gets its backend: one loaded model shared while methods agree on it
    (:class:`judge.engine.build.BackendPool`)."""

    def get(self, spec: MethodSpec) -> Backend: ...


class MethodType:
    """What one kind of method is and how it runs; subclass it and register it in :data:`METHOD_TYPES`.

    Every hook has a default that suits a method reading the conversation only and running no model,
    so a new type overrides what it needs: at least :meth:`build`.
    """

    #: The shared spec fields a method of this type may set, beyond :data:`COMMON_FIELDS` (and
    #: :data:`MODEL_FIELDS` when it runs a model): ``seeds``, ``options``. Any other field must keep its default.
    fields: ClassVar[frozenset[str]] = frozenset()
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
    #: Its own settings: a frozen dataclass of :func:`judge.core.settings.setting` fields, held in
    #: ``MethodSpec.settings``; their flags, config keys and docs table are generated from it.
    settings: ClassVar[type] = NoSettings
    #: The docs page that lists its own settings, in a table generated from :attr:`settings`
    #: (:mod:`judge.methods.settings_docs`); None: they are not documented there.
    docs: ClassVar[str | None] = None
    def examples(self, spec: MethodSpec) -> tuple[int, str | None]:
        """How many labelled examples it shows per item, and the file they come from (None: the scored items)."""
        return 0, None

    def context_view(self, spec: MethodSpec) -> str:
        """What of each item its prompt shows (:data:`judge.prompts.context_views.CONTEXT_VIEWS`)."""
        return "given"

    def trained_on(self, spec: MethodSpec) -> str | None:
        """What ``spec`` learns weights from (:data:`SCORED_SET`, :data:`OTHER_SETS`, :data:`EARLIER_FIT`), so that
        runs and reports ask the type instead of reading its settings; None: nothing."""
        return None

    def accepted(self) -> frozenset[str]:
        """Every spec field a method of this type may set (its settings record's fields included)."""
        return (COMMON_FIELDS | self.fields | (MODEL_FIELDS if self.runs_model else frozenset())
                | own_fields(self.settings))

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
        out.update({f.name: getattr(spec.settings, f.name) for f in fields(self.settings)})
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


def own_fields(settings: type) -> frozenset[str]:
    """The field names of a settings record class."""
    return frozenset(f.name for f in fields(settings))


def own(spec: MethodSpec, settings: type[S]) -> S:
    """``spec``'s settings record, typed as its type's ``settings`` class (what a type reads its own settings by)."""
    if not isinstance(spec.settings, settings):
        raise TypeError(f"a {spec.type} method holds {type(spec.settings).__name__}, not {settings.__name__}")
    return spec.settings


def method_type(name: str) -> MethodType:
    """The registered type ``name`` (UnknownNameError, naming the known ones, otherwise)."""
    factory = METHOD_TYPES.get(name)
    if factory not in _INSTANCES:
        kind = factory()
        if not isinstance(kind, MethodType):
            raise TypeError(f"method type {name!r} is registered with {factory!r}, which makes no MethodType")
        _INSTANCES[factory] = kind
    return _INSTANCES[factory]


@dataclass(frozen=True, init=False)
class MethodSpec:
    """One method: an LLM judge (prompt + selector + backend + rule), a likelihood signal, a classic
    scorer, an ensemble whose score combines its ``members``' scores, or a method of any other type
    registered in :data:`METHOD_TYPES`. Each field applies to the types that accept it
    (:attr:`MethodType.fields`); the others keep their defaults. A type's own settings (an ensemble's
    members and weights, a judge's rationale, a head file, pairwise orders) live in ``settings``, a record
    of the type's :attr:`MethodType.settings` class; the constructor takes them flat too
    (``MethodSpec(type="ensemble", members=..., fit="cv")``), as configs and flags give them.

    ``seeds`` are selection seeds: random selection runs each, other selectors the first only.
    """

    name: str = ""
    #: The method type (:data:`METHOD_TYPES`): what the other fields mean and which of them apply.
    type: str = DEFAULT_TYPE
    seeds: tuple[int, ...] = (0,)
    backend: str = "llamacpp"
    model: str | None = None
    #: Backend options (LLM methods) or scorer options (classic methods).
    options: Mapping[str, Any] = field(default_factory=dict)
    generate: GenerateConfig = field(default_factory=GenerateConfig)
    #: The paper's row shown beside this method in leaderboards (labels only; never changes scores).
    paper: str | None = None
    #: Opt in to a method (or member) that reads the user's turn after the rated response on turn-level
    #: items (``next_user``): refused otherwise, as a live judge never has it (see engine.kinds).
    allow_future: bool = False
    #: The type's own settings: an instance of its :attr:`MethodType.settings` class.
    settings: object = None
    #: Position of the config entry it came from (for error messages); 0 elsewhere.
    index: int = 0

    def __init__(self, **values: Any) -> None:
        """The spec of ``values``: the fields above, and the type's own settings either as ``settings`` (a record
        of its class) or flat by field name; a setting of another type is refused naming its owner."""
        type_name = values.get("type", DEFAULT_TYPE)
        kind = method_type(type_name)
        common = {k: values.pop(k) for k in list(values) if k in _DEFAULTS}
        record: Any = common.get("settings")
        if not isinstance(record, kind.settings):  # none yet, or another type's (a changed type): its values
            values = {**_changed(record), **values}
            record = kind.settings()
        for key in [k for k in values if k not in own_fields(kind.settings)]:  # the first one given
            _refuse(key, type_name)
        common["settings"] = replace(record, **values) if values else record
        for key in _DEFAULTS:
            object.__setattr__(self, key, common[key] if key in common else _default(key))
        self._check(kind)

    def _check(self, kind: MethodType) -> None:
        check_no_secrets(self.options, kind.options_flag)
        if not self.seeds:
            raise InputError("at least one seed is needed", field="seeds")
        kind.check(self)
        accepted = kind.accepted()
        for key, default in _DEFAULTS.items():
            if key not in accepted and key != "settings" and getattr(self, key) != default:
                _refuse(key, self.type)
        if not self.name:
            object.__setattr__(self, "name", kind.default_name(self))

    @property
    def kind(self) -> MethodType:
        """The method type this spec is of (:data:`METHOD_TYPES`)."""
        return method_type(self.type)

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

        Field names, types and defaults are read from the dataclasses themselves (the spec's and every type's
        settings record: :func:`spec_fields`), so a field added to either is accepted, type-checked and
        defaulted here with no other change. A value
        of the wrong type, an unknown key (with the closest known one) or a setting the spec refuses
        raises an :class:`InputError` whose ``field`` is the spec's field name (``generate.threads`` for
        generation settings); each entry point renames that field into its own words (``--threads``,
        ``methods[0].generate.threads``) and keeps the message. ``generate`` takes a
        :class:`GenerateConfig` or a mapping of its fields; ``seeds`` and other list fields take one
        value or a list.
        """
        hints = spec_fields()
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


def _refuse(key: str, type_name: str) -> None:
    """Refuse field ``key`` on a method of type ``type_name``, naming the type it belongs to."""
    owner = next(_owners(key), None)
    reason, field_name = (owner.foreign(key, type_name) if owner is not None
                          else (f"{key} does not apply to a {type_name} method", key))
    raise InputError(reason, field=field_name)


def _owners(key: str) -> Iterator[MethodType]:
    """The registered types that accept spec field ``key`` (for the message refusing it elsewhere), the
    default type first: a field of prompts is named as the ``llm`` methods' even where another type that
    reads a prompt (``head``) takes it too."""
    for name in sorted(METHOD_TYPES.names(), key=lambda n: n != DEFAULT_TYPE):
        kind = method_type(name)
        if key in kind.fields or key in own_fields(kind.settings):
            yield kind


def spec_fields() -> dict[str, Any]:
    """Every key a spec is made from, with its type: the spec's own fields and those of every registered type's
    settings record (a key of another type's record is refused, naming its owner, when the spec is made)."""
    hints = {k: v for k, v in field_types(MethodSpec).items() if k != "settings"}
    for name in METHOD_TYPES.names():
        hints.update(field_types(method_type(name).settings))
    return hints


def _default(key: str) -> Any:
    """A fresh default of spec field ``key`` (a new dict or record where the default is made by a factory)."""
    f = next(f for f in fields(MethodSpec) if f.name == key)
    return f.default_factory() if f.default is MISSING and callable(f.default_factory) else f.default


def _changed(record: object) -> dict[str, Any]:
    """The fields of a settings record that differ from its class's defaults (none for None)."""
    if record is None:
        return {}
    fresh = type(record)()
    return {f.name: getattr(record, f.name) for f in fields(record)  # type: ignore[arg-type]
            if getattr(record, f.name) != getattr(fresh, f.name)}


_DEFAULTS.update({f.name: _default(f.name) for f in fields(MethodSpec)})


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
    def label(self) -> str:
        """``<dataset> <quality>`` of the items this was prepared for (names a training set)."""
        dataset = next((it.dataset for it in self.reference or () if it.dataset), "?")
        return f"{dataset} {self.quality.name if self.quality else ''}".strip()
