"""The head's scorer: the prompt's judge reads each item once, the head turns its hidden state into the score.

Scoring costs the prompt's own forward pass (the hidden state comes from the decode of the answer), so
a head is as fast as its prompt; the answer itself stays in the row's ``label_probs``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace

from ..backends.base import Backend
from ..data.items import Item
from ..scorers.base import ItemWork, Score, Scorer
from ..scorers.llm import LLMJudge
from ..scorers.units import score_lane
from .head import Head


class HeadScorer(Scorer):
    """Scores with ``head`` over ``judge``'s hidden states (``judge`` is set to ask for them)."""

    def __init__(self, judge: LLMJudge, head: Head, head_name: str) -> None:
        head.check_compatible(judge.backend, judge.prompt)
        judge.hidden = True
        self.judge = judge
        self.head = head
        self.head_name = head_name
        self.name = f"head:{head_name}|{judge.name}"

    def score(self, items: Iterable[Item]) -> Iterator[Score]:
        return score_lane(self, items)

    def lane(self) -> HeadScorer:
        """The judge's lane (``hidden`` requests), each answer's score passed through the head."""
        return self

    @property
    def backend(self) -> Backend:
        return self.judge.backend

    @property
    def window(self) -> int:
        return self.judge.window

    @property
    def batch_size(self) -> int:
        return self.judge.batch_size

    def needs_items(self) -> bool:
        return self.judge.needs_items()

    def plan(self, items: Sequence[Item] | None) -> Callable[[Item], ItemWork]:
        planner = self.judge.plan(items)

        def work(item: Item) -> ItemWork:
            inner = planner(item)
            return ItemWork(inner.requests, lambda answers: self._apply(inner.finish(answers)))

        return work

    def _apply(self, s: Score) -> Score:
        if s.error is not None:
            return replace(s, vector=None)
        if s.vector is None or len(s.vector) != self.head.dim:
            got = "no hidden state" if s.vector is None else f"a hidden state of {len(s.vector)} values"
            return replace(s, value=None, vector=None, error=f"the head reads {self.head.dim} values; the backend gave {got}")
        if self.head.with_answer and s.value is None:
            return replace(s, vector=None, error="the head reads the prompt's answer, which could not be scored")
        value = float(self.head.predict(self.head.features(s.vector, s.value))[0])
        return replace(s, value=value, vector=None)

    def describe(self) -> dict[str, object]:
        inner = self.judge.describe()
        return {**inner, "method": "head", "head": self.head_name, "with_answer": self.head.with_answer,
                **self.head.describe()}

    def check(self, items: Sequence[Item]) -> None:
        """The prompt's own checks, and the head's refusal of conversations it learned from (a service
        checks each request's items here)."""
        self.head.check_not_trained_on(items, self.head_name)
        self.judge.check(items)

    def reads(self) -> frozenset[str]:
        """What its prompt reads: a head over the criteria prompt is reference-free."""
        return self.judge.reads()

    def prompt_settings(self) -> dict[str, object] | None:
        return self.judge.prompt_settings()

    def fitted(self) -> dict[str, object] | None:
        """What the head learned, for results: its file, the sets it learned from (before this run, never
        from the scored set) and its strength and cross-validated figure."""
        cv = self.head.cv
        return {"fit": "head", "head": self.head_name, "alpha": self.head.alpha,
                "trained_on": [f"{t.name}:{t.split or 'all'} ({t.items} items)" for t in self.head.trained_on],
                "cv_spearman": cv.get("spearman"), "cv_how": cv.get("how")}
