"""The ``llm`` method type: a prompt template read by a language model, with in-context examples.

The judge shows the model a rendered template (a built-in name, ``fed``/``fedq`` for the FED prompt of
the quality scored, or a ``.j2`` path), optionally with ``k`` labelled examples picked by a selector,
and reads the next-token distribution over the template's answer labels (:class:`LLMJudge`). What it
reads beyond the conversation is what its template declares (``reads`` metadata). Methods of one
backend score together, their prompts ordered by shared prefix (:mod:`judge.engine.schedule`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..backends.base import Prompt
from ..backends.registry import BACKENDS
from ..core.errors import InputError, UnknownNameError
from ..core.fields import close_hint
from ..core.settings import setting
from ..data.alternatives import READ, alternatives_for, lists_for
from ..data.items import Item
from ..data.qualities import Quality
from ..datasets import check_scale, load_items
from ..engine.build import backend_key
from ..engine.spec import Backends, MethodSpec, MethodType, Prepared, own
from ..prompts.context_views import CONTEXT_VIEWS, in_view
from ..prompts.templates import (
    PER_QUALITY_PROMPTS,
    PromptTemplate,
    builtin_prompts,
    fed_prompt_name,
    get_prompt,
    is_template_path,
    load_template,
    per_quality_prompts,
)
from ..scorers.base import Scorer
from ..scorers.llm import LLMJudge, render_prompt
from ..scorers.rules import RULES
from ..selectors import ORDERS, SELECTOR_NAMES, SELECTORS, get_selector

#: Keys a TOML table of an LLM method reads its own way: lists of ``k`` and ``seeds`` expand into several
#: methods, ``selector_options`` holds ``order`` and ``manual_set``.
SELECTOR_OPTION_KEYS = ("order", "manual_set")


@dataclass(frozen=True)
class LLMSettings:
    """An llm judge's own settings: its prompt, the examples it shows, how its answer becomes a score, and
    whether it writes a rationale before it answers."""

    prompt: str = setting(f"a built-in prompt ({', '.join(builtin_prompts())}); fed: the FED rating prompt of "
                          "--quality (a .j2 template path: --template)", "yesno")
    selector: str = setting(f"in-context example selector: {', '.join(SELECTOR_NAMES)} (none: zero-shot)", "none")
    k: int = setting("number of in-context examples (TOML: a list runs one method per value)", 0)
    group_guard: bool = setting("keep examples from the scored item's own context/dialog out (--no-group-guard: allow "
                                "them, never the item itself; mirrors a paper setup, recorded in the output)", True,
                                flag="--no-group-guard")
    order: str = setting("ascending: most relevant example last, nearest the scored item; descending; as-selected "
                         "(TOML: selector_options.order)", "ascending", flag="--example-order", choices=ORDERS)
    manual_set: str | None = setting("the manual selector's set: a shipped name (fed) or a TOML/JSONL file (default: the "
                                     "shipped set of the dataset; TOML: selector_options.manual_set)")
    pool: str | None = setting("labelled file to draw examples from (default: the scored data, leave-group-out)")
    top_k: int = setting("top-K rating weighting of rating prompts", 3)
    rule: str = setting("scoring rule of rating prompts: topk (the paper's top-K weighting) or expected "
                        "(probability-weighted mean over every rating label)", "topk")
    context: str = setting("what of each item the prompt shows: given, or none: the reply alone (no conversation, no "
                           "background; dialogs: the system's turns), the baseline of a contrast (docs/context.md)",
                           "given", choices=CONTEXT_VIEWS)
    reason: int = setting(
        "the judge first writes a rationale of at most N tokens, then answers: the answer is read after the prompt's "
        "answer cue (exactly where the backend shows log-probabilities, else estimated from --sampling-fallback N "
        "completions); rows keep the rationale. 0: the answer is the next token, the paper's one-token read", 0,
        metavar="N")
    reason_temperature: float = setting(
        "the rationale's sampling temperature, seeded by --seed (TOML: generate.seed); 0: greedy", 0.0, metavar="T")

    def __post_init__(self) -> None:
        if self.k < 0:
            raise InputError(f"must be >= 0, got {self.k}", field="k")
        if self.top_k < 1:
            raise InputError(f"must be >= 1, got {self.top_k}", field="top_k")
        if self.k > 0 and self.selector in ("none", "zero-shot"):
            raise InputError(f"k = {self.k} needs an example selector (e.g. 'random' or 'bm25-context')",
                             field="selector")
        if self.context not in CONTEXT_VIEWS:
            raise InputError(f"must be one of {', '.join(CONTEXT_VIEWS)}, got {self.context!r}", field="context")
        if self.reason < 0:
            raise InputError(f"must be >= 0 (tokens of rationale; 0: none), got {self.reason}", field="reason")
        if self.reason_temperature < 0:
            raise InputError(f"must be >= 0, got {self.reason_temperature}", field="reason_temperature")
        if self.reason_temperature and not self.reason:
            raise InputError("samples a rationale: it needs one (reason = N)", field="reason_temperature")


class LLMType(MethodType):
    """A prompt + selector + backend + scoring rule (:class:`judge.scorers.llm.LLMJudge`)."""

    fields = frozenset({"seeds"})
    settings: ClassVar[type] = LLMSettings
    docs = "docs/backends.md"
    runs_model = True
    noun = "llm methods"
    records_seed = True
    cost = None

    def view(self, spec: MethodSpec) -> LLMSettings:
        """``spec``'s settings as an llm judge's (a type that reads a prompt the same way gives its own as these)."""
        return own(spec, LLMSettings)

    def examples(self, spec: MethodSpec) -> tuple[int, str | None]:
        s = self.view(spec)
        return s.k, s.pool

    def context_view(self, spec: MethodSpec) -> str:
        return self.view(spec).context

    def default_name(self, spec: MethodSpec) -> str:
        s = self.view(spec)
        return (f"{s.prompt}-{s.selector}-k{s.k}" + ("" if s.context == "given" else f"-context-{s.context}")
                + (f"-reason{s.reason}" if s.reason else ""))

    def seeded(self, spec: MethodSpec) -> bool:
        s = self.view(spec)
        return s.selector == "random" and s.k > 0

    def describe(self, spec: MethodSpec) -> dict[str, Any]:
        s = self.view(spec)
        return {
            "type": spec.type, "prompt": s.prompt, "selector": s.selector, "k": s.k,
            "seeds": list(spec.run_seeds()), "group_guard": s.group_guard, "order": s.order,
            "manual_set": s.manual_set, "pool": s.pool, "backend": spec.backend, "model": spec.model,
            "options": dict(spec.options), "generate": asdict(spec.generate), "top_k": s.top_k, "rule": s.rule,
            # Only when not the default, so that the provenance of every earlier method reads as before.
            **({"context": s.context} if s.context != "given" else {}),
            **({"reason": s.reason, "reason_temperature": s.reason_temperature} if s.reason else {}),
            "paper": spec.paper,
        }

    def settings_text(self, described: Mapping[str, Any]) -> str:
        guard = "on" if described["group_guard"] else "OFF"
        reason = f", reason {described['reason']} tokens" if described.get("reason") else ""
        return (f"prompt {described['prompt']}, model {described['model'] or 'smollm2 (embedded)'} "
                f"({described['backend']}), selector {described['selector']}, k {described['k']}, "
                f"order {described['order']}, group guard {guard}{reason}")

    def check_names(self, spec: MethodSpec) -> None:
        s = self.view(spec)
        BACKENDS.canonical(spec.backend)
        SELECTORS.canonical(s.selector)
        if s.rule not in RULES:  # checked here, with the other names, so a typo stops the run before a model loads
            raise UnknownNameError("scoring rule", s.rule, RULES)
        if is_template_path(s.prompt):
            if not Path(s.prompt).exists():
                raise InputError("template file not found", file=s.prompt, field="prompt")
        elif s.prompt not in PER_QUALITY_PROMPTS and s.prompt not in builtin_prompts():
            raise UnknownNameError("prompt", s.prompt, [*builtin_prompts(), *PER_QUALITY_PROMPTS])

    def reads(self, spec: MethodSpec, quality: Quality | None) -> frozenset[str]:
        s = self.view(spec)
        if is_template_path(s.prompt):
            return load_template(s.prompt, quality=quality).reads
        if s.prompt in PER_QUALITY_PROMPTS:  # one prompt per FED quality: what any of them reads
            return frozenset().union(*(get_prompt(n).reads for n in per_quality_prompts(s.prompt)))
        return get_prompt(s.prompt).reads

    def check_served(self, spec: MethodSpec, reference: Sequence[Item] | None) -> None:
        s = self.view(spec)
        super().check_served(spec, reference)
        if s.k > 0 and not s.pool:
            raise InputError("in-context examples need a labelled file to draw them from when serving (--pool FILE)",
                             field="pool")

    def share_key(self, spec: MethodSpec) -> str | None:
        return backend_key(spec)

    def streams(self, spec: MethodSpec) -> bool:
        """Unless its examples come from the scored file's rated items (``k`` without a ``pool`` file) or its
        template lists the other replies to each context (``alternatives``), read from the whole file."""
        s = self.view(spec)
        return not (s.k and not s.pool) and READ not in self.reads(spec, None)

    def table_keys(self) -> frozenset[str]:
        return (super().table_keys() - set(SELECTOR_OPTION_KEYS)) | {"selector_options"}

    def from_table(self, table: Mapping[str, Any], defaults: Mapping[str, Any],
                   methods: Mapping[str, MethodSpec]) -> list[dict[str, Any]]:
        """Lists of ``k`` expand into one method per value (named ``<name>-k<k>``, the selector dropped at
        ``k = 0``); ``seeds`` lists stay one method; ``selector_options`` sets ``order`` and ``manual_set``."""
        (values,) = super().from_table(table, defaults, methods)
        options = {**_options(defaults), **_options(table)}
        for key in options:
            if key not in SELECTOR_OPTION_KEYS:
                raise InputError(f"unknown key{close_hint(key, dict.fromkeys(SELECTOR_OPTION_KEYS))}",
                                 field=f"selector_options.{key}")
        values.pop("selector_options", None)
        ks = _int_list(values.pop("k", 0), "k")
        seeds = _int_list(values.pop("seeds", [0]), "seeds")
        selector = values.get("selector", "none")
        base = values.get("name") or f"{values.get('prompt', 'yesno')}-{selector}"
        return [{**values, "name": values["name"] if (len(ks) == 1 and values.get("name")) else f"{base}-k{k}",
                 "selector": selector if k else "none", "k": k, "seeds": tuple(seeds), **options} for k in ks]

    def prepare(self, spec: MethodSpec, items: Sequence[Item] | None, quality: Quality | None, *,
                pool: Sequence[Item] | None, population: Sequence[Item] | None, seed: int, level: str) -> Prepared:
        s = self.view(spec)
        level = items[0].level if items else level
        prompt = resolve_prompt(s, quality, level)
        quality = quality or prompt.quality
        selector = get_selector(s.selector if s.k else "none", seed=seed, group_guard=s.group_guard,
                                manual_set=s.manual_set, order=s.order)
        check_renders(prompt, items or (), quality, s.context, population, s.reason)
        if s.k and quality is None:
            raise InputError("in-context examples show human labels: name the quality to read them from (--quality)",
                             field="quality")
        examples = None
        candidates = pool if pool is not None else items
        if s.k and (candidates is not None or s.pool):
            examples = example_pool(s, candidates or (), quality)
            if items is not None:
                selector.check(items, examples, quality)
        return Prepared(spec, quality, seed, prompt, selector, examples, population)

    def build(self, prepared: Prepared, backends: Backends) -> Scorer:
        spec = prepared.spec
        s = self.view(spec)
        assert prepared.prompt is not None and prepared.selector is not None
        backend = backends.get(spec)
        return LLMJudge(prepared.prompt, backend, quality=prepared.quality, selector=prepared.selector, k=s.k,
                        pool=prepared.pool, top_k=s.top_k, rule=s.rule, chat=spec.generate.chat,
                        top_n=spec.generate.top_n, batch_size=spec.generate.batch_size, context=s.context,
                        population=prepared.population, reason=s.reason,
                        reason_temperature=s.reason_temperature, reason_seed=spec.generate.seed)

    def prompts(self, prepared: Prepared, shown: Sequence[tuple[Item, Sequence[str]]], chat: bool
                ) -> list[Prompt] | None:
        """Each prompt as :class:`LLMJudge` built it: the item in the spec's context view, the recorded
        examples (from the prepared pool, with the labels they show) and, for a template that reads them,
        the other replies of the prepared population (of the items themselves without one)."""
        template, quality = prepared.prompt, prepared.quality
        assert template is not None
        pool = {ex.id: ex for ex in prepared.pool or ()}
        population = prepared.population if prepared.population is not None else [it for it, _ in shown]
        listed = lists_for(template.reads, population)
        out = []
        for item, ids in shown:
            missing = [i for i in ids if i not in pool]
            if missing:
                raise InputError(f"example {missing[0]!r} is not in the method's example pool", record=item.id,
                                 field="examples")
            examples = [(pool[i], template.example_label(pool[i], quality)) for i in ids]  # type: ignore[arg-type]
            out.append(render_prompt(template, item, examples, quality, alternatives_for(item, listed),
                                     context=self.view(prepared.spec).context, chat=chat,
                                     fixed_examples=prepared.selector is not None and prepared.selector.fixed_examples,
                                     reason=self.view(prepared.spec).reason)[0])
        return out


def _options(table: Mapping[str, Any]) -> dict[str, Any]:
    value = table.get("selector_options", {})
    if not isinstance(value, Mapping):
        raise InputError(f"must be a table, got {type(value).__name__}", field="selector_options")
    return dict(value)


def _int_list(value: Any, key: str, minimum: int = 0) -> list[int]:
    if isinstance(value, bool) or not isinstance(value, int | list):
        raise InputError(f"must be an integer or a list, got {type(value).__name__}", field=key)
    vals = value if isinstance(value, list) else [value]
    if not vals:
        raise InputError("must not be empty", field=key)
    for v in vals:
        if not isinstance(v, int) or isinstance(v, bool) or v < minimum:
            raise InputError(f"must hold integers >= {minimum}, got {v!r}", field=key)
    return vals


def resolve_prompt(s: LLMSettings, quality: Quality | None, level: str) -> PromptTemplate:
    """The template a spec names: a template path, ``fed`` / ``fedq`` (the FED prompt of the quality, the
    paper's or the shared-prefix family's), or a built-in."""
    if is_template_path(s.prompt):
        prompt = load_template(s.prompt, quality=quality)
    elif s.prompt in PER_QUALITY_PROMPTS:
        if quality is None:
            raise InputError(f"--prompt {s.prompt} needs --quality (it rates one FED quality)", field="quality")
        return get_prompt(fed_prompt_name(level, quality.name, s.prompt))
    else:
        prompt = get_prompt(s.prompt)
    if prompt.pairwise:
        raise InputError(f"prompt '{s.prompt}' compares two replies (answer = \"pairwise\"): run it as a pairwise "
                         "method (judge compare, a [[compare]] cell of judge run)", field="prompt")
    return prompt


#: Template checks passed in this process, by (template, quality, view, the items' identities and, for a
#: template that reads alternatives, the population's), oldest first; each entry holds those objects,
#: so that no identity in a key can pass to another object.
_RENDERED: OrderedDict[tuple[object, ...], tuple[Sequence[Item], Sequence[Item]]] = OrderedDict()
_RENDERED_MAX = 512
#: The most items the remembered checks may hold between them (a large file checked in pieces as it streams
#: must not stay in memory through them).
_RENDERED_ITEMS = 50_000
_RENDERED_LOCK = threading.Lock()


def check_renders(prompt: PromptTemplate, items: Sequence[Item], quality: Quality | None,
                  view: str = "given", population: Sequence[Item] | None = None, reason: int = 0) -> None:
    """Render ``prompt`` for every item once, as ``view`` shows it (:mod:`judge.prompts.context_views`), so that a
    template error (undefined variable, sandbox) is bad input that surfaces before a model loads, not
    mid-run. A check already passed for the same template, quality, view and item objects is not
    repeated: a ``judge run`` prepares each method on each set once as a cell and again as the member of
    every ensemble that holds it, and rendering, not scoring, is what ``--check`` spends its time on.
    A template that reads ``alternatives`` is rendered with those of ``population`` (None: ``items``); with
    ``reason``, as a judge that reasons first renders it (its cue line replaced by the request for a
    rationale)."""
    others = (items if population is None else population) if READ in prompt.reads else ()
    key = (prompt, quality, view, tuple(map(id, items)), tuple(map(id, others)), reason)
    with _RENDERED_LOCK:  # judges may be prepared from several threads of one process
        if key in _RENDERED:
            _RENDERED.move_to_end(key)
            return
    listed = lists_for(prompt.reads, others)
    for item in items:
        if reason:
            prompt.render_reasoned(in_view(item, view), [], quality, alternatives_for(item, listed), tokens=reason)
        else:
            prompt.render(in_view(item, view), [], quality, alternatives_for(item, listed))
    with _RENDERED_LOCK:
        _RENDERED[key] = (items, others)
        while len(_RENDERED) > _RENDERED_MAX or sum(len(a) + len(b) for a, b in _RENDERED.values()) > _RENDERED_ITEMS:
            _RENDERED.popitem(last=False)


def example_pool(s: LLMSettings, candidates: Sequence[Item], quality: Quality | None) -> list[Item]:
    """Items that can be shown as examples: the spec's pool file or ``candidates``, rated for the quality."""
    if quality is None:
        raise InputError("in-context examples show human labels: name the quality to read them from (--quality)",
                         field="quality")
    if s.pool:
        candidates = load_items(s.pool)
    rated = [it for it in candidates if it.human(quality.name) is not None]
    if not rated and s.selector != "manual":
        raise InputError(f"no item in the example pool has a human rating for '{quality.name}'",
                         file=s.pool, field="scores")
    check_scale(rated, quality, file=s.pool)
    return rated
