"""The one place a method spec becomes a ready scorer.

Two steps, so that every mistake a user can make surfaces before a model loads:

* :func:`prepare` resolves names through the registries and checks the spec against the data: the
  prompt (built-in name, ``fed`` or a ``.j2`` path), the selector with its quality, the example pool
  (by default the rated items being scored), every item rendered once, manual-set ids resolved,
  scales checked. Nothing expensive happens here.
* :func:`build` attaches a backend (kept alive by a :class:`BackendPool` while consecutive methods
  share it, behind the SQLite cache unless it is turned off) and returns the scorer.

The CLI, the harness, ``judge serve``, ``make_judge`` and the benchmark scripts all come through here.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from ..alternatives import READ, alternatives_for, lists_for
from ..backends import Backend, create_backend
from ..backends.registry import BACKENDS
from ..context_views import in_view
from ..errors import InputError, MissingInputError, UnknownNameError
from ..items import Item
from ..prompts import PER_QUALITY_PROMPTS, PromptTemplate, builtin_prompts, fed_prompt_name, get_prompt, load_template
from ..qualities import Quality
from ..scorers.base import Scorer
from ..scorers.llm import LLMJudge
from ..scorers.rules import RULES
from ..selectors import SELECTORS, Selector, get_selector
from .spec import MethodSpec


def check_names(spec: MethodSpec) -> None:
    """Resolve the spec's names (prompt, selector, backend, scoring rule, classic scorer) without touching data."""
    if spec.type == "ensemble":
        for member in spec.members:
            check_names(member)
        return
    if spec.type == "classic":
        from ..scorers.classic import classic_names

        if spec.scorer not in classic_names():
            raise UnknownNameError("scorer", str(spec.scorer), classic_names())
        return
    BACKENDS.canonical(spec.backend)
    if spec.type == "likelihood":
        return
    SELECTORS.canonical(spec.selector)
    if spec.rule not in RULES:  # checked here, with the other names, so a typo stops the run before a model loads
        raise UnknownNameError("scoring rule", spec.rule, RULES)
    if is_template_path(spec.prompt):
        if not Path(spec.prompt).exists():
            raise InputError("template file not found", file=spec.prompt, field="prompt")
    elif spec.prompt not in PER_QUALITY_PROMPTS and spec.prompt not in builtin_prompts():
        raise UnknownNameError("prompt", spec.prompt, [*builtin_prompts(), *PER_QUALITY_PROMPTS])


def is_template_path(prompt: str) -> bool:
    """A prompt given as a file (``.j2``, or any path) rather than a built-in name."""
    return prompt.endswith(".j2") or "/" in prompt or "\\" in prompt or Path(prompt).is_file()


def resolve_prompt(spec: MethodSpec, quality: Quality | None, level: str) -> PromptTemplate:
    """The template a spec names: a template path, ``fed`` / ``fedq`` (the FED prompt of the quality, the
    paper's or the shared-prefix family's), or a built-in."""
    if is_template_path(spec.prompt):
        return load_template(spec.prompt, quality=quality)
    if spec.prompt in PER_QUALITY_PROMPTS:
        if quality is None:
            raise InputError(f"--prompt {spec.prompt} needs --quality (it rates one FED quality)", field="quality")
        return get_prompt(fed_prompt_name(level, quality.name, spec.prompt))
    return get_prompt(spec.prompt)


@dataclass
class Prepared:
    """A spec checked against its data, ready to meet a backend (nothing loaded yet)."""

    spec: MethodSpec
    quality: Quality | None
    seed: int
    prompt: PromptTemplate | None = None
    selector: Selector | None = None
    pool: list[Item] | None = None
    #: Where a template that reads ``alternatives`` finds the other replies to a context (None: the items
    #: of each score call; ``()``: none).
    population: Sequence[Item] | None = None
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


def prepare(
    spec: MethodSpec,
    items: Sequence[Item] | None,
    quality: Quality | None = None,
    *,
    pool: Sequence[Item] | None = None,
    population: Sequence[Item] | None = None,
    seed: int | None = None,
    level: str = "turn",
) -> Prepared:
    """Validate ``spec`` against ``items`` (the items to score) before any model loads.

    ``pool`` is where examples come from; by default ``items`` themselves (their rated ones), each
    item's own conversation kept out by the selector's guard. With ``items`` None (a judge built before
    its data is known, as ``make_judge`` does) the checks that need the data wait for it and the pool
    defaults to the rated items of each ``score`` call. ``population`` is where a template that reads
    ``alternatives`` finds the other replies to each context (None: the items of each ``score`` call;
    the harness gives a set's whole half, so that a sample shows what the set holds). ``seed``
    overrides the spec's first seed.
    A method that reads the next user turn on turn-level items is refused here unless it opts in
    (``allow_future``), before anything loads.
    """
    check_names(spec)
    from .kinds import check_future, items_level, method_kinds

    check_future(spec, method_kinds(spec, quality), items_level(items) if items else level)
    return _prepare(spec, items, quality, pool=pool, population=population, seed=seed, level=level)


def _prepare(spec: MethodSpec, items: Sequence[Item] | None, quality: Quality | None, *,
             pool: Sequence[Item] | None, population: Sequence[Item] | None, seed: int | None,
             level: str) -> Prepared:
    """``prepare`` without the top-level checks (an ensemble's members are covered by its own)."""
    seed = spec.seeds[0] if seed is None else seed
    if spec.type == "ensemble":
        if spec.fit == "cv" and quality is None:
            raise InputError("fit = 'cv' learns weights from human ratings: name the quality to read (--quality)",
                             field="quality")
        members, left_out = _ensemble_members(spec, items, quality, pool, population, level)
        prepared = Prepared(spec, quality, seed, members=members, reference=None if items is None else list(items),
                            left_out=left_out)
        if spec.weights and not any(prepared.weights):
            raise InputError(f"only members with weight 0 are left on these items ({', '.join(m.spec.name for m in members)}; "
                             f"left out: {', '.join(n for n, _ in left_out)})", field="weights")
        return prepared
    if spec.type == "classic":
        from ..scorers.classic import create_classic

        scorer = create_classic(str(spec.scorer), quality=quality, **dict(spec.options))
        if items is not None:
            scorer.check(items)
        return Prepared(spec, quality, seed, classic=scorer)
    if spec.type == "likelihood":
        from ..scorers.likelihood import utterances

        for item in items or ():
            if not utterances(item):
                raise MissingInputError("a likelihood method needs a system turn to score", record=item.id,
                                        field="dialog")
        return Prepared(spec, quality, seed)
    level = items[0].level if items else level
    prompt = resolve_prompt(spec, quality, level)
    quality = quality or prompt.quality
    selector = get_selector(spec.selector if spec.k else "none", seed=seed, group_guard=spec.group_guard,
                            manual_set=spec.manual_set, order=spec.order)
    check_renders(prompt, items or (), quality, spec.context, population)
    if spec.k and quality is None:
        raise InputError("in-context examples show human labels: name the quality to read them from (--quality)",
                         field="quality")
    examples = None
    candidates = pool if pool is not None else items
    if spec.k and (candidates is not None or spec.pool):
        examples = example_pool(spec, candidates or (), quality)
        if items is not None:
            selector.check(items, examples, quality)
    return Prepared(spec, quality, seed, prompt, selector, examples, population)


#: Template checks passed in this process, by (template, quality, view, the items' identities and, for a
#: template that reads alternatives, the population's), oldest first; each entry holds those objects,
#: so that no identity in a key can pass to another object.
_RENDERED: OrderedDict[tuple[object, ...], tuple[Sequence[Item], Sequence[Item]]] = OrderedDict()
_RENDERED_MAX = 512
_RENDERED_LOCK = threading.Lock()


def check_renders(prompt: PromptTemplate, items: Sequence[Item], quality: Quality | None,
                  view: str = "given", population: Sequence[Item] | None = None) -> None:
    """Render ``prompt`` for every item once, as ``view`` shows it (:mod:`judge.context_views`), so that a
    template error (undefined variable, sandbox) is bad input that surfaces before a model loads, not
    mid-run. A check already passed for the same template, quality, view and item objects is not
    repeated: a ``judge run`` prepares each method on each set once as a cell and again as the member of
    every ensemble that holds it, and rendering, not scoring, is what ``--check`` spends its time on.
    A template that reads ``alternatives`` is rendered with those of ``population`` (None: ``items``)."""
    others = (items if population is None else population) if READ in prompt.reads else ()
    key = (prompt, quality, view, tuple(map(id, items)), tuple(map(id, others)))
    with _RENDERED_LOCK:  # judges may be prepared from several threads of one process
        if key in _RENDERED:
            _RENDERED.move_to_end(key)
            return
    listed = lists_for(prompt.reads, others)
    for item in items:
        prompt.render(in_view(item, view), [], quality, alternatives_for(item, listed))
    with _RENDERED_LOCK:
        _RENDERED[key] = (items, others)
        if len(_RENDERED) > _RENDERED_MAX:
            _RENDERED.popitem(last=False)


def _ensemble_members(spec: MethodSpec, items: Sequence[Item] | None, quality: Quality | None,
                      pool: Sequence[Item] | None, population: Sequence[Item] | None, level: str) -> tuple[tuple[Prepared, ...], tuple[tuple[str, str], ...]]:
    """An ensemble's members prepared for ``items``. An optional member whose input the items lack (a
    classic scorer refusing them before computing) is left out with its reason, so one ensemble can
    join a reference-based scorer where references exist and do without it elsewhere; a required
    member's missing input stops here, naming the member."""
    if items is None and spec.optional:
        raise InputError("optional members are kept or left out by the items they score: prepare the ensemble "
                         "with its items", field="optional")
    kept: list[Prepared] = []
    left_out: list[tuple[str, str]] = []
    for member in spec.members:
        try:
            kept.append(_prepare(member, items, quality, pool=pool, population=population, seed=None, level=level))
        except MissingInputError as exc:
            if member.name not in spec.optional:
                raise MissingInputError(f"member '{member.name}': {exc.reason} (list it under optional to leave it "
                                        "out where its input is missing)", record=exc.record, field=exc.field) from None
            left_out.append((member.name, exc.reason))
    if not kept:
        raise MissingInputError("no member can score these items: " + "; ".join(f"{n}: {r}" for n, r in left_out),
                                field="members")
    return tuple(kept), tuple(left_out)


def example_pool(spec: MethodSpec, candidates: Sequence[Item], quality: Quality | None) -> list[Item]:
    """Items that can be shown as examples: the spec's pool file or ``candidates``, rated for the quality."""
    if quality is None:
        raise InputError("in-context examples show human labels: name the quality to read them from (--quality)",
                         field="quality")
    if spec.pool:
        from ..datasets import load_items

        candidates = load_items(spec.pool)
    rated = [it for it in candidates if it.human(quality.name) is not None]
    if not rated and spec.selector != "manual":
        raise InputError(f"no item in the example pool has a human rating for '{quality.name}'",
                         file=spec.pool, field="scores")
    from ..datasets import check_scale

    check_scale(rated, quality, file=spec.pool)
    return rated


def backend_key(spec: MethodSpec) -> str:
    """What decides which loaded model a method runs on: LLM methods with equal keys share one backend
    (and so can be scheduled together, :mod:`judge.engine.schedule`)."""
    return json.dumps([spec.backend, spec.model, dict(spec.options), asdict(spec.generate)], sort_keys=True,
                      default=str)


class BackendPool:
    """Backends by settings: consecutive methods with the same backend, model, options and generation
    settings share one loaded model. Each is behind the persistent cache unless ``generate.cache`` is off."""

    def __init__(self) -> None:
        self._key: str | None = None
        self._backend: Backend | None = None
        self._closed: dict[str, int] = {}

    def get(self, spec: MethodSpec) -> Backend:
        key = backend_key(spec)
        if key != self._key or self._backend is None:
            self.close()
            backend = create_backend(spec.backend, spec.model, spec.generate, **dict(spec.options))
            if spec.generate.cache:
                from ..cache import Cache, CachedBackend

                backend = CachedBackend(backend, Cache(spec.generate.cache_path))
            self._backend, self._key = backend, key
        return self._backend

    @property
    def current(self) -> Backend | None:
        """The backend loaded now (None before the first LLM method, or for classic scorers)."""
        return self._backend

    def counters(self) -> dict[str, int]:
        """Usage over every backend this pool has held (cache hits and misses, API usage, ...)."""
        live = self._backend.counters() if self._backend is not None else {}
        return {k: self._closed.get(k, 0) + live.get(k, 0) for k in sorted({*self._closed, *live})}

    def close(self) -> None:
        if self._backend is not None:
            self._closed = self.counters()
            self._backend.close()
        self._backend, self._key = None, None


def build(prepared: Prepared, backends: BackendPool) -> Scorer:
    """The scorer of a prepared spec (loads the model on first use)."""
    if prepared.spec.type == "ensemble":
        from ..scorers.ensemble import EnsembleScorer, TrainingSet

        spec = prepared.spec
        members = [(m.spec.name, _factory(m, backends)) for m in prepared.members]
        training = [TrainingSet(t.label, t.reference or [], t.quality, [_factory(m, backends) for m in t.members])
                    for t in prepared.training if t.quality is not None]
        from .kinds import spec_reads

        return EnsembleScorer(spec.name, members, weights=prepared.weights, combine=spec.combine,
                              reference=prepared.reference, fit=spec.fit, quality=prepared.quality,
                              training=training, left_out=prepared.left_out,
                              reads=spec_reads(spec, prepared.quality))
    if prepared.classic is not None:
        return prepared.classic
    spec = prepared.spec
    if spec.type == "likelihood":
        from ..scorers.likelihood import LikelihoodScorer

        return LikelihoodScorer(backends.get(spec), str(spec.signal))
    assert prepared.prompt is not None and prepared.selector is not None
    backend = backends.get(spec)
    return LLMJudge(prepared.prompt, backend, quality=prepared.quality, selector=prepared.selector, k=spec.k,
                    pool=prepared.pool, top_k=spec.top_k, rule=spec.rule, chat=spec.generate.chat,
                    top_n=spec.generate.top_n, batch_size=spec.generate.batch_size, context=spec.context,
                    population=prepared.population)


class MemberFactory:
    """Builds an ensemble member's scorer when the ensemble reaches it (one model loaded at a time).
    ``share_key`` (LLM members: :func:`backend_key`) tells the ensemble which members run on one
    backend, so that it can build those together and score them in one prefix-scheduled pass."""

    def __init__(self, prepared: Prepared, backends: BackendPool) -> None:
        self.prepared = prepared
        self.backends = backends
        self.share_key = backend_key(prepared.spec) if prepared.spec.type == "llm" else None

    def __call__(self) -> Scorer:
        return build(self.prepared, self.backends)


def _factory(prepared: Prepared, backends: BackendPool) -> Callable[[], Scorer]:
    return MemberFactory(prepared, backends)


def build_scorer(
    spec: MethodSpec,
    items: Sequence[Item],
    quality: Quality | None = None,
    *,
    pool: Sequence[Item] | None = None,
    seed: int | None = None,
    backends: BackendPool | None = None,
) -> Scorer:
    """``prepare`` then ``build``: the scorer for ``items`` (see :func:`prepare` for the pool default)."""
    return build(prepare(spec, items, quality, pool=pool, seed=seed), backends or BackendPool())
