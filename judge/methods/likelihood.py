"""The ``likelihood`` method type: a statistic of the judge model's log-probabilities of the reply.

No prompt template and no examples: the reply is scored as a continuation of its transcript (and, for
the pointwise mutual information, of no transcript), or the FED follow-ups after it
(:mod:`judge.scorers.likelihood`). It asks its backend for ``sequence_logprobs``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..backends.registry import BACKENDS
from ..core.errors import InputError
from ..core.settings import setting
from ..data.items import Item
from ..data.qualities import Quality
from ..engine.spec import Backends, MethodSpec, MethodType, Prepared, own
from ..scorers.base import Scorer
from ..scorers.likelihood import READS, SIGNALS, LikelihoodScorer


@dataclass(frozen=True)
class LikelihoodSettings:
    """A likelihood method's own setting: the statistic of the reply's token log-probabilities."""

    signal: str = setting(f"the statistic of the reply's token log-probabilities: {', '.join(SIGNALS)} "
                          "(docs/likelihood.md)", "pmi", flag="--likelihood", metavar="SIGNAL")


def signal_of(spec: MethodSpec) -> str:
    """The signal a likelihood method reads."""
    return own(spec, LikelihoodSettings).signal


class LikelihoodType(MethodType):
    """One signal of :data:`judge.scorers.likelihood.SIGNALS` (default ``pmi``)."""

    fields = frozenset({"seeds"})
    settings = LikelihoodSettings
    docs = "docs/likelihood.md"
    runs_model = True
    needs = frozenset({"sequence_logprobs"})
    noun = "likelihood methods"
    flag = ("likelihood", "signal")
    cost = None

    def check(self, spec: MethodSpec) -> None:
        if signal_of(spec) not in SIGNALS:
            raise InputError(f"must be one of {', '.join(SIGNALS)}, got {signal_of(spec)!r}", field="signal")

    def default_name(self, spec: MethodSpec) -> str:
        return f"likelihood-{signal_of(spec)}"

    def describe(self, spec: MethodSpec) -> dict[str, Any]:
        return {"type": spec.type, "signal": signal_of(spec), "backend": spec.backend, "model": spec.model,
                "options": dict(spec.options), "generate": asdict(spec.generate), "seeds": list(spec.run_seeds()),
                "paper": spec.paper}

    def settings_text(self, described: Mapping[str, Any]) -> str:
        return (f"likelihood {described['signal']}, model {described['model'] or 'smollm2 (embedded)'} "
                f"({described['backend']})")

    def check_names(self, spec: MethodSpec) -> None:
        BACKENDS.canonical(spec.backend)

    def reads(self, spec: MethodSpec, quality: Quality | None) -> frozenset[str]:
        return READS

    def streams(self, spec: MethodSpec) -> bool:
        return True

    def prepare(self, spec: MethodSpec, items: Sequence[Item] | None, quality: Quality | None, *,
                pool: Sequence[Item] | None, population: Sequence[Item] | None, seed: int, level: str) -> Prepared:
        LikelihoodScorer.check(items or ())
        return Prepared(spec, quality, seed)

    def build(self, prepared: Prepared, backends: Backends) -> Scorer:
        return LikelihoodScorer(backends.get(prepared.spec), signal_of(prepared.spec))
