"""``judge fit``'s library half: read the hidden states of rated items through the engine, fit a head.

The hidden states come from the same engine every method runs on (:func:`judge.engine.prepare`, built by the
run's :class:`judge.engine.session.Session`): the prompt the ``head`` method will render, the backend and
cache it will use. The cache keeps each vector beside its answer, so the answers of the plain prompt are
computed in the same pass, and a second ``judge fit`` over the same items reads no model at all.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..accounting.rates import today
from ..core.errors import InputError
from ..data.items import Item, conversation_of
from ..data.qualities import Quality
from ..datasets.identity import fingerprint
from ..engine import MethodSpec, prepare
from ..engine.session import Session
from ..scorers.base import Score
from ..scorers.llm import LLMJudge
from .fit import ALPHAS, Fitted, Rows, choose_alpha, cross_validate, fit, ridge
from .head import Head, TrainingSet, prompt_hash


@dataclass(frozen=True)
class RatedSet:
    """Items to learn from: one set's rated items on one quality (a half of it, or all of it).

    ``family`` names the sets that share conversations with this one (one name for all of them), so
    that cross-validation leaves them out together; ``path`` is the resolved file of a set given by path;
    ``conversations`` the content fingerprints of every conversation of the set the items were drawn from
    (both halves: a head refuses the whole set it saw, not only the half it learned from); ``labels`` the
    resolved labels file and its sha256 when the ratings came from one (``judge fit --labels``), not the data.
    """

    name: str
    quality: Quality
    items: tuple[Item, ...]
    family: str
    split: str | None = None
    path: str | None = None
    conversations: frozenset[str] = frozenset()
    labels: tuple[str, str] | None = None


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


def hidden_judge(spec: MethodSpec, rated: RatedSet, session: Session) -> LLMJudge:
    """The prompt's judge as the session builds it, asking for hidden states with its answers."""
    scorer = session.build(prepare(spec, list(rated.items), rated.quality))
    if not isinstance(scorer, LLMJudge):
        raise InputError(f"a head reads the hidden state of a prompt; method type {spec.type!r} has none",
                         field="type")
    scorer.hidden = True
    return scorer


def collect(spec: MethodSpec, sets: Sequence[RatedSet], session: Session,
            progress: Callable[[int], None] = lambda _n: None) -> Collected:
    """Score every item with the hidden state read (cached); items whose answer failed are counted per set
    and kept out of the rows."""
    check_sets(sets)
    xs: list[list[float]] = []
    human, answers, dataset, family, conversation = [], [], [], [], []
    failed: dict[str, int] = {}
    judge: LLMJudge | None = None
    t0 = time.perf_counter()
    tokens0 = session.counters().get("tokens_evaluated", 0)
    for rated in sets:
        judge = hidden_judge(spec, rated, session)
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
                     session.counters().get("tokens_evaluated", 0) - tokens0, time.perf_counter() - t0, judge)


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
    trained_on = tuple(training_set(s, int(sum(1 for d in rows.dataset if d == s.name))) for s in sets)
    return Head(
        model=backend.model_id, backend=backend.name, settings=backend.settings(), prompt=judge.prompt.name,
        prompt_sha256=prompt_hash(judge.prompt), quality=None, dim=collected.rows.x.shape[1],
        with_answer=with_answer, mean=tuple(map(float, fitted.mean)), scale=tuple(map(float, fitted.scale)),
        weights=tuple(map(float, fitted.weights)), bias=fitted.bias, alpha=fitted.alpha, trained_on=trained_on,
        cv=cv, created=today())


def training_set(rated: RatedSet, items: int) -> TrainingSet:
    """What a head file records of a set it learned from: its name, quality and half, the items and the
    number of conversations it learned from, and the content fingerprints of every conversation of the set
    (both halves), which the head refuses to score."""
    learned = {conversation_of(it) for it in rated.items}
    labels, labels_sha256 = rated.labels or (None, None)
    return TrainingSet(rated.name, rated.quality.name, rated.split, items, len(learned), rated.path,
                       tuple(sorted(rated.conversations | learned)), labels, labels_sha256)


def stamp(head: Head, sets: Sequence[RatedSet]) -> Head:
    """The head with its training sets' records computed again from ``sets`` (the same items it learned
    from, given again: a head fitted by an older judge gets its conversations' fingerprints, a head gets
    the conversation counts of the current split rules), its weights untouched. Every set the head names
    must be among ``sets`` with as many items as the head learned from (those whose answer failed apart)."""
    by_name = {s.name: s for s in sets}
    failed = head.cv.get("failed", {}) if isinstance(head.cv.get("failed"), dict) else {}
    out = []
    for t in head.trained_on:
        rated = by_name.get(t.name)
        if rated is None:
            raise InputError(f"the head learned from {t.name}, which is not among the sets given "
                             f"({', '.join(by_name) or 'none'})", field="data")
        if rated.split != t.split or rated.quality.name != t.quality:
            raise InputError(f"the head learned {t.name}'s {t.quality} on {t.split or 'all of it'}, the set given "
                             f"is {rated.quality.name} on {rated.split or 'all of it'}", field="data")
        if len(rated.items) - int(failed.get(t.name, 0)) != t.items:
            raise InputError(f"the head learned from {t.items} items of {t.name}; the set given has "
                             f"{len(rated.items)}: not the data it was fitted on", field="data")
        out.append(replace(training_set(rated, t.items), path=t.path, labels=t.labels, labels_sha256=t.labels_sha256))
    return replace(head, trained_on=tuple(out))


def fit_without_each(sets: Sequence[RatedSet], collected: Collected, *, with_answer: bool = False,
                     alphas: Sequence[float] = ALPHAS) -> dict[str, Head]:
    """One head per set, fitted on the other sets only (never on a set that shares conversations with it:
    one group of sets is left out together), for scoring each set with a head that never saw it. Each
    head's ``cv`` holds the held-out figure of its set, where :func:`fit_head`'s cross-validation over
    all the sets reads it (the same procedure: strength chosen inside the training part)."""
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
    """Items given twice (by content: a registered set and its release file by path, a copy of a file under
    another name) would be learned twice and cross-validated against themselves: refused, naming both."""
    seen: dict[str, set[str]] = {}
    for s in sets:
        mine = set(map(fingerprint, s.items))
        for other, theirs in seen.items():
            both = len(mine & theirs)
            if both:
                raise InputError(f"'{s.name}' holds {both} of the items of '{other}' (by content: one set under two "
                                 "names, or a file and its copy): give them once", field="data")
        seen[s.name] = mine
