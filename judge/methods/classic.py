"""The ``classic`` method type: a scorer of the literature (length, BLEU, the FED metric, ...).

A classic scorer is registered by name in :mod:`judge.scorers.classic` and declares what it reads
(``requires``); it checks the items itself. A set lacking what it needs (BLEU without references) is
listed by ``judge run`` as skipped rather than stopping the run. It runs no language model of the
judge's: ``options`` are the scorer's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.errors import InputError, UnknownNameError
from ..core.settings import setting
from ..data.items import Item
from ..data.qualities import Quality
from ..engine.spec import Backends, MethodSpec, MethodType, Prepared, own
from ..scorers.base import Scorer
from ..scorers.classic import classic_names, create_classic


@dataclass(frozen=True)
class ClassicSettings:
    """A classic method's own setting: which scorer of the literature it runs."""

    scorer: str | None = setting("run this classic scorer instead of an LLM judge (length, bleu4, rouge-l, meteor, "
                                 "fed-metric, ...; `judge score --scorer ?` lists them; docs/classic.md)", metavar="NAME")


def scorer_of(spec: MethodSpec) -> str:
    """The classic scorer a classic method names."""
    return str(own(spec, ClassicSettings).scorer)


class ClassicType(MethodType):
    """A classic scorer by name (``scorer``) with its ``options``."""

    fields = frozenset({"options"})
    settings = ClassicSettings
    docs = "docs/classic.md"
    noun = "classic methods"
    options_flag = "options"
    implied_by = "scorer"
    flag = ("scorer", "scorer")
    skips_missing_input = True

    def check(self, spec: MethodSpec) -> None:
        if not own(spec, ClassicSettings).scorer:
            raise InputError("a classic method needs a scorer name (e.g. 'length')", field="scorer")

    def default_name(self, spec: MethodSpec) -> str:
        return scorer_of(spec)

    def describe(self, spec: MethodSpec) -> dict[str, Any]:
        return {"type": spec.type, "scorer": own(spec, ClassicSettings).scorer, "options": dict(spec.options), "paper": spec.paper}

    def settings_text(self, described: Mapping[str, Any]) -> str:
        return f"scorer {described['scorer']}"

    def check_names(self, spec: MethodSpec) -> None:
        if scorer_of(spec) not in classic_names():
            raise UnknownNameError("scorer", scorer_of(spec), classic_names())

    def reads(self, spec: MethodSpec, quality: Quality | None) -> frozenset[str]:
        return create_classic(scorer_of(spec), quality=quality, **dict(spec.options)).reads()

    def from_table(self, table: Mapping[str, Any], defaults: Mapping[str, Any],
                   methods: Mapping[str, MethodSpec]) -> list[dict[str, Any]]:
        values = super().from_table(table, defaults, methods)
        if "scorer" not in table:
            raise InputError("missing (the classic scorer's name, e.g. 'length')", field="scorer")
        return values

    def prepare(self, spec: MethodSpec, items: Sequence[Item] | None, quality: Quality | None, *,
                pool: Sequence[Item] | None, population: Sequence[Item] | None, seed: int, level: str) -> Prepared:
        scorer = create_classic(scorer_of(spec), quality=quality, **dict(spec.options))
        if items is not None:
            scorer.check(items)
        return Prepared(spec, quality, seed, classic=scorer)

    def build(self, prepared: Prepared, backends: Backends) -> Scorer:
        assert prepared.classic is not None
        return prepared.classic
