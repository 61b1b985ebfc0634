"""``judge fit``'s library half: read the hidden states of rated items through the engine, fit a head.

The hidden states come from the same engine every method runs on (:func:`judge.engine.prepare` and
:func:`judge.engine.build`): the prompt the ``head`` method will render, the backend and cache it will
use. The cache keeps each vector beside its answer, so the answers of the plain prompt are computed in
the same pass, and a second ``judge fit`` over the same items reads no model at all.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..datasets.split import conversation_of
from ..engine import BackendPool, MethodSpec, build, prepare
from ..errors import InputError
from ..items import Item
from ..qualities import Quality
from ..rates import today
from ..scorers.base import Score
from ..scorers.llm import LLMJudge
from .fit import ALPHAS, Fitted, Rows, cross_validate, fit, ridge
from .head import Head, TrainingSet, prompt_hash


@dataclass(frozen=True)
class RatedSet:
    """Items to learn from: one set's rated items on one quality (a half of it, or all of it).

    ``family`` names the sets that share conversations with this one (one name for all of them), so
    that cross-validation leaves them out together; ``path`` is the resolved file of a set given by path."""

    name: str
    quality: Quality
    items: tuple[Item, ...]
    family: str
    split: str | None = None
    path: str | None = None


@dataclass(frozen=True)
class Collected:
    """What the model read: per set, the items with a vector, their vectors and answers, and failures."""

    rows: Rows
    answers: np.ndarray
    failed: dict[str, int]
    tokens: int
    seconds: float
    #: One of the prompt's judges: the model, backend and prompt the head is bound to.
    judge: LLMJudge


def hidden_judge(spec: MethodSpec, rated: RatedSet, backends: BackendPool) -> LLMJudge:
    """The prompt's judge as the engine builds it, asking for hidden states with its answers."""
    scorer = build(prepare(spec, list(rated.items), rated.quality), backends)
    if not isinstance(scorer, LLMJudge):
        raise InputError(f"a head reads the hidden state of a prompt; method type {spec.type!r} has none",
                         field="type")
    scorer.hidden = True
    return scorer


def collect(spec: MethodSpec, sets: Sequence[RatedSet], backends: BackendPool,
            progress: Callable[[int], None] = lambda _n: None) -> Collected:
    """Score every item with the hidden state read (cached); items whose answer failed are counted per set
    and kept out of the rows."""
    check_sets(sets)
    xs: list[list[float]] = []
    human, answers, dataset, family, conversation = [], [], [], [], []
    failed: dict[str, int] = {}
    judge: LLMJudge | None = None
    t0 = time.perf_counter()
    tokens0 = backends.counters().get("tokens_evaluated", 0)
    for rated in sets:
        judge = hidden_judge(spec, rated, backends)
        failed[rated.name] = 0
        for item, score in zip(rated.items, judge.score(rated.items), strict=True):
            progress(1)
            if not _usable(score):
                failed[rated.name] += 1
                continue
            xs.append(score.vector)  # type: ignore[arg-type]
            human.append(item.human(rated.quality.name))
            answers.append(score.value)
            dataset.append(rated.name)
            family.append(rated.family)
            conversation.append(f"{rated.family}:{conversation_of(item)}")
    if not xs or judge is None:
        raise InputError("no item gave a hidden state to learn from", field="data")
    rows = Rows(np.asarray(xs, dtype=np.float64), np.asarray(human, dtype=np.float64), tuple(dataset),
                tuple(family), tuple(conversation))
    return Collected(rows, np.asarray(answers, dtype=np.float64), failed,
                     backends.counters().get("tokens_evaluated", 0) - tokens0, time.perf_counter() - t0, judge)


def _usable(score: Score) -> bool:
    return score.ok and score.vector is not None and len(score.vector) > 0


def with_answer_column(rows: Rows, answers: np.ndarray) -> Rows:
    """The rows with the prompt's own answer appended as the last feature."""
    return Rows(np.column_stack([rows.x, answers]), rows.human, rows.dataset, rows.family, rows.conversation)


def fit_head(sets: Sequence[RatedSet], collected: Collected, *, with_answer: bool = False,
             alphas: Sequence[float] = ALPHAS) -> Head:
    """Cross-validate and fit a head on the collected rows of ``sets``."""
    rows = with_answer_column(collected.rows, collected.answers) if with_answer else collected.rows
    cv = cross_validate(rows, alphas)
    return _head(sets, rows, collected, fit(rows, alphas), with_answer,
                 {**cv, "failed": collected.failed, "alphas": list(alphas)})


def _head(sets: Sequence[RatedSet], rows: Rows, collected: Collected, fitted: Fitted, with_answer: bool,
          cv: dict[str, object]) -> Head:
    """The head file's content: the fitted map, bound to the judge's model, backend and prompt."""
    judge = collected.judge
    backend = judge.backend
    trained_on = tuple(
        TrainingSet(s.name, s.quality.name, s.split, int(sum(1 for d in rows.dataset if d == s.name)),
                    len({c for d, c in zip(rows.dataset, rows.conversation, strict=True) if d == s.name}), s.path)
        for s in sets)
    return Head(
        model=backend.model_id, backend=backend.name, settings=backend.settings(), prompt=judge.prompt.name,
        prompt_sha256=prompt_hash(judge.prompt), quality=None, dim=collected.rows.x.shape[1],
        with_answer=with_answer, mean=tuple(map(float, fitted.mean)), scale=tuple(map(float, fitted.scale)),
        weights=tuple(map(float, fitted.weights)), bias=fitted.bias, alpha=fitted.alpha, trained_on=trained_on,
        cv=cv, created=today())


def fit_without_each(sets: Sequence[RatedSet], collected: Collected, *, with_answer: bool = False,
                     alphas: Sequence[float] = ALPHAS) -> dict[str, Head]:
    """One head per set, fitted on the other sets only (never on a set that shares conversations with it:
    one group of sets is left out together), for scoring each set with a head that never saw it. Each
    head's ``cv`` holds the held-out figure of its set, where :func:`fit_head`'s cross-validation over
    all the sets reads it (the same procedure: strength chosen inside the training part)."""
    from .fit import choose_alpha

    rows = with_answer_column(collected.rows, collected.answers) if with_answer else collected.rows
    family = np.asarray(rows.family)
    out: dict[str, Head] = {}
    for s in sets:
        keep = np.flatnonzero(family != s.family)
        if not len(keep):
            raise InputError(f"every set shares conversations with {s.name}: no set is left to learn from", field="data")
        train = rows.take(keep)
        inner = train if len(set(train.family)) > 1 or len(set(train.conversation)) > 1 else None
        alpha = choose_alpha(inner, alphas) if inner is not None else max(alphas)
        others = [t for t in sets if t.family != s.family]
        out[s.name] = _head(others, train, collected, ridge(train, alpha), with_answer,
                            {"how": f"fitted without {s.name} (and the sets that share its conversations)",
                             "left_out": s.name, "alphas": list(alphas)})
    return out


def check_sets(sets: Sequence[RatedSet]) -> None:
    """One file under two names would be cross-validated against itself: refused. (Two names of one
    registered set resolve to one name before this.)"""
    seen: dict[str, str] = {}
    for s in sets:
        key = str(Path(s.path).resolve()) if s.path else f"registered:{s.name}"
        if key in seen:
            raise InputError(f"'{s.name}' and '{seen[key]}' are one file: give it once", field="data")
        seen[key] = s.name
