"""The ``head`` method type: a prompt's judge whose score is a head's output on the model's hidden state.

The prompt is rendered and read exactly as an ``llm`` method's (zero-shot: a head was fitted on the
vectors of that prompt alone), the backend hands over the hidden state at the answer position in the
same decode (capability ``hidden_states``), and the head file written by ``judge fit`` maps it to the
score (:mod:`judge.heads`). It reads what its prompt reads, so a head over the criteria prompt is
reference-free. ``head`` is a head file's path or a shipped head's name (``judge models``). It may
hold ``{dataset}``, replaced by the scored set's name, so that each set of a ``judge run`` is scored
by its own head (``judge fit --without-each`` writes one per set).

A head never scores what it learned from: items of a conversation it was trained on (known by content and
by context, ``Item.conversation``: a registered set, its release file by path, a copy or a JSONL made from
it, new replies to its contexts, its texts with speaker labels or cut to their last turns are all
recognised) are refused before anything loads, with how many.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..core.settings import setting
from ..data.items import Item
from ..data.qualities import Quality
from ..engine.spec import EARLIER_FIT, Backends, MethodSpec, MethodType, Prepared, own
from ..heads.head import Head, locate_head, prompt_hash, read_head
from ..heads.scorer import HeadScorer
from ..scorers.base import Scorer
from ..scorers.llm import LLMJudge
from .llm import LLMSettings, LLMType

#: Stands for the scored set's name in a ``head`` path.
DATASET = "{dataset}"


@dataclass
class HeadPrepared(Prepared):
    """An llm method's preparation plus the head that will read its hidden states."""

    head: Head | None = None
    head_path: str = ""


@dataclass(frozen=True)
class HeadSettings:
    """A head method's own settings: the zero-shot prompt it reads as an llm judge would, and the head that reads
    the model's hidden state after it (docs/heads.md)."""

    prompt: str = setting("the prompt the head was fitted on", "yesno", flag="--prompt", generated=False)
    top_k: int = setting("top-K rating weighting of the prompt's answer, kept in each row", 3, flag="--top-k", generated=False)
    rule: str = setting("scoring rule of the prompt's answer, kept in each row: topk or expected", "topk", flag="--rule", generated=False)
    context: str = setting("what of each item the prompt shows: given, or none (the reply alone)", "given",
                           flag="--context", generated=False)
    head: str | None = setting(
        "score with a head (judge fit) on the model's hidden state after --prompt, instead of the prompt's answer: a "
        "head file or a shipped head's name; {dataset} stands for the scored set's name", metavar="FILE")

    def __post_init__(self) -> None:
        LLMSettings(top_k=self.top_k, context=self.context)  # refused as the llm judge's own are


def head_of(spec: MethodSpec) -> str | None:
    """The head a head method names."""
    return own(spec, HeadSettings).head


class HeadType(LLMType):
    """A zero-shot prompt read by the model, scored by a head (:class:`judge.heads.scorer.HeadScorer`)."""

    fields = frozenset()
    settings = HeadSettings
    docs = "docs/heads.md"
    needs = frozenset({"hidden_states"})
    noun = "head methods"
    flag = ("head", "head")
    records_seed = False

    def table_keys(self) -> frozenset[str]:
        return MethodType.table_keys(self)  # no examples: none of an llm table's own keys

    def from_table(self, table: Mapping[str, Any], defaults: Mapping[str, Any],
                   methods: Mapping[str, MethodSpec]) -> list[dict[str, Any]]:
        return MethodType.from_table(self, table, defaults, methods)  # one method: no list of k to expand

    def check(self, spec: MethodSpec) -> None:
        if not head_of(spec):
            raise InputError("a head method names its head file (judge fit writes one)", field="head")

    def default_name(self, spec: MethodSpec) -> str:
        return f"head-{Path(str(head_of(spec))).stem.replace(DATASET, 'each')}"

    def trained_on(self, spec: MethodSpec) -> str | None:
        return EARLIER_FIT

    def view(self, spec: MethodSpec) -> LLMSettings:
        """Its prompt as a zero-shot llm judge reads it (no examples, no rationale: a head was fitted on the
        answer position of the prompt alone)."""
        s = own(spec, HeadSettings)
        return LLMSettings(prompt=s.prompt, top_k=s.top_k, rule=s.rule, context=s.context)

    def seeded(self, spec: MethodSpec) -> bool:
        return False

    def streams(self, spec: MethodSpec) -> bool:
        """Never: a head refuses the conversations it learned from, and an item's conversation is named
        across its group in the whole file (:func:`judge.datasets.identity.identify`), which a streamed file
        does not hold."""
        return False

    def describe(self, spec: MethodSpec) -> dict[str, Any]:
        s = own(spec, HeadSettings)
        return {"type": spec.type, "prompt": s.prompt, "head": s.head, "backend": spec.backend,
                "model": spec.model, "options": dict(spec.options), "generate": asdict(spec.generate),
                "top_k": s.top_k, "rule": s.rule,
                **({"context": s.context} if s.context != "given" else {}), "paper": spec.paper}

    def settings_text(self, described: Mapping[str, Any]) -> str:
        """What ``judge bench`` prints of it: its prompt, model and head (a head has no selector or guard)."""
        return (f"prompt {described['prompt']}, model {described['model'] or 'smollm2 (embedded)'} "
                f"({described['backend']}), head {described['head']}")

    def share_key(self, spec: MethodSpec) -> str | None:
        return None  # scored alone: its judge asks for hidden states, the others for answers

    def prepare(self, spec: MethodSpec, items: Sequence[Item] | None, quality: Quality | None, *,
                pool: Sequence[Item] | None, population: Sequence[Item] | None, seed: int, level: str) -> Prepared:
        base = super().prepare(spec, items, quality, pool=pool, population=population, seed=seed, level=level)
        path = locate_head(head_path(str(head_of(spec)), items))
        head = read_head(path)
        assert base.prompt is not None
        if head.prompt != base.prompt.name or head.prompt_sha256 != prompt_hash(base.prompt):
            raise InputError(f"the head was fitted on prompt {head.prompt!r} (or another text of it); this method's "
                             f"prompt is {base.prompt.name!r}", file=path, field="prompt")
        head.check_not_trained_on(items or (), path)
        return HeadPrepared(**{f: getattr(base, f) for f in base.__dataclass_fields__}, head=head, head_path=path)

    def build(self, prepared: Prepared, backends: Backends) -> Scorer:
        assert isinstance(prepared, HeadPrepared) and prepared.head is not None
        judge = super().build(prepared, backends)
        assert isinstance(judge, LLMJudge)
        return HeadScorer(judge, prepared.head, prepared.head_path)


def head_path(pattern: str, items: Sequence[Item] | None) -> str:
    """The head file for these items: ``{dataset}`` replaced by their set's name (one set per call)."""
    if DATASET not in pattern:
        return pattern
    names = sorted({it.dataset or "" for it in items or ()})
    if len(names) != 1 or not names[0]:
        raise InputError(f"{DATASET} in a head path needs items of one named set, got {names or 'none'}",
                         field="head")
    return pattern.replace(DATASET, names[0])
