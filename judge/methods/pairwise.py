"""The ``pairwise`` method type: which of two replies to one context is better, in both orders.

A pairwise template (``answer = "pairwise"``: built-ins ``pairwise``, and ``pairwise-tie`` with an allowed
tie, or a ``.j2`` path) is shown the two replies of a :class:`judge.data.pairs.Pair` and read as the probability
of each label (:class:`judge.scorers.pairwise.PairwiseJudge`). Its own setting is ``orders``: ``both``
(default: each pair read as (a, b) and as (b, a), the preference the mean of the two) or ``one`` (one order
per pair, drawn by a seeded hash, ``seeds[0]``). It compares, so it scores no item alone
(``MethodType.compares``): ``judge compare``, ``[[compare]]`` cells of ``judge run`` and ``POST /v1/compare``
run it through :mod:`judge.engine.compare`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..backends.registry import BACKENDS
from ..core.errors import InputError, UnknownNameError
from ..core.settings import setting
from ..data.items import Item
from ..data.qualities import Quality
from ..engine.spec import Backends, MethodSpec, MethodType, Prepared, own
from ..prompts.templates import PromptTemplate, builtin_prompts, get_prompt, is_template_path, load_template
from ..scorers.base import Scorer
from ..scorers.pairwise import ORDERS, PairwiseJudge
from .llm import LLMSettings

#: The prompt an llm method holds unless told otherwise: asked of a pairwise method, it is refused early.
_SPEC_PROMPT = LLMSettings().prompt


@dataclass(frozen=True)
class PairwiseSettings:
    """A pairwise method's own settings: its template and in which orders each pair is read."""

    prompt: str = setting("a pairwise template: a built-in (pairwise, pairwise-tie) or a .j2 path with answer = "
                          "\"pairwise\" (judge serve: --compare-prompt)", "pairwise", flag="--prompt",
                          generated=False)

    orders: str = setting(
        "both: read each pair with either reply first and average the two, so that neither position is favoured; one: "
        "one order per pair, drawn by a seeded hash of the pair (--seed), half the cost, position bias left in the "
        "verdicts", "both", choices=ORDERS)


def prompt_of(spec: MethodSpec) -> str:
    """The pairwise template a pairwise method names."""
    return own(spec, PairwiseSettings).prompt


def orders_of(spec: MethodSpec) -> str:
    """The orders a pairwise method reads each pair in."""
    return own(spec, PairwiseSettings).orders


class PairwiseType(MethodType):
    """A pairwise template read by a model in one or both orders (:class:`PairwiseJudge`)."""

    fields = frozenset({"seeds"})
    settings = PairwiseSettings
    docs = "docs/pairwise.md"
    runs_model = True
    noun = "pairwise methods"
    compares = True
    cost = None

    def check(self, spec: MethodSpec) -> None:
        if orders_of(spec) not in ORDERS:
            raise InputError(f"must be one of {', '.join(ORDERS)}, got {orders_of(spec)!r}", field="orders")

    def from_table(self, table: Mapping[str, Any], defaults: Mapping[str, Any],
                   methods: Mapping[str, MethodSpec]) -> list[dict[str, Any]]:
        """As every type's, refusing ``prompt = "yesno"`` (the llm methods' default) before anything is read."""
        check_not_spec_default(table.get("prompt"))
        return super().from_table(table, defaults, methods)

    def default_name(self, spec: MethodSpec) -> str:
        stem = Path(prompt_of(spec)).stem if is_template_path(prompt_of(spec)) else prompt_of(spec)
        return stem + ("-one-order" if orders_of(spec) == "one" else "")

    def describe(self, spec: MethodSpec) -> dict[str, Any]:
        return {"type": spec.type, "prompt": prompt_of(spec), "orders": orders_of(spec),
                **({"seeds": list(spec.seeds[:1])} if orders_of(spec) == "one" else {}),
                "backend": spec.backend, "model": spec.model, "options": dict(spec.options),
                "generate": asdict(spec.generate), "paper": spec.paper}

    def settings_text(self, described: Mapping[str, Any]) -> str:
        orders = "both orders" if described["orders"] == "both" else f"one order per pair (seed {described['seeds'][0]})"
        return (f"prompt {described['prompt']}, {orders}, model {described['model'] or 'smollm2 (embedded)'} "
                f"({described['backend']})")

    def check_names(self, spec: MethodSpec) -> None:
        BACKENDS.canonical(spec.backend)
        if is_template_path(prompt_of(spec)):
            if not Path(prompt_of(spec)).exists():
                raise InputError("template file not found", file=prompt_of(spec), field="prompt")
        elif prompt_of(spec) not in builtin_prompts():
            raise UnknownNameError("prompt", prompt_of(spec), pairwise_prompts())

    def reads(self, spec: MethodSpec, quality: Quality | None) -> frozenset[str]:
        return template(spec, quality).reads

    def share_key(self, spec: MethodSpec) -> str | None:
        return None  # its lane's items are pairs: it runs in a pass of its own

    def prepare(self, spec: MethodSpec, items: Sequence[Item] | None, quality: Quality | None, *,
                pool: Sequence[Item] | None, population: Sequence[Item] | None, seed: int, level: str) -> Prepared:
        """The template checked (a pairwise one, rendering for the context and reply of every item that will be
        compared) before any model loads; ``items`` are the replies of the pairs."""
        prompt = template(spec, quality)
        for item in items or ():
            prompt.render(item, [], quality or prompt.quality, (), (item.response or "", item.response or ""))
        return Prepared(spec, quality or prompt.quality, seed, prompt)

    def build(self, prepared: Prepared, backends: Backends) -> Scorer:
        spec = prepared.spec
        assert prepared.prompt is not None
        judge = PairwiseJudge(prepared.prompt, backends.get(spec), quality=prepared.quality, orders=orders_of(spec),
                              seed=prepared.seed, chat=spec.generate.chat, top_n=spec.generate.top_n,
                              batch_size=spec.generate.batch_size)
        judge.spec = spec
        return judge


def check_not_spec_default(prompt: object, field: str = "prompt") -> None:
    """Refuse the llm methods' default prompt (``yesno``) named for a pairwise method, where the flag or key is
    read (a template that asks about one reply is refused again when it is loaded)."""
    if prompt == _SPEC_PROMPT:
        raise InputError(f"prompt '{prompt}' asks about one reply; a pairwise method needs a template with answer = "
                         f"\"pairwise\" ({', '.join(pairwise_prompts())} or your own)", field=field)


def template(spec: MethodSpec, quality: Quality | None) -> PromptTemplate:
    """The pairwise template a spec names (a built-in or a ``.j2`` path); InputError for another kind."""
    prompt = load_template(prompt_of(spec), quality=quality) if is_template_path(prompt_of(spec)) else get_prompt(prompt_of(spec))
    if not prompt.pairwise:
        raise InputError(f"prompt '{prompt_of(spec)}' asks about one reply ({prompt.answer.kind}); a pairwise method needs "
                         f"a template with answer = \"pairwise\" ({', '.join(pairwise_prompts())} or your own)",
                         field="prompt")
    return prompt


def pairwise_prompts() -> list[str]:
    """The built-in pairwise templates."""
    return [name for name in builtin_prompts() if get_prompt(name).pairwise]
