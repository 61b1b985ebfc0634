"""The judge a service holds: built once through the engine, then handed each request's items.

Nothing here knows about HTTP: :class:`JudgeService` parses request records with the JSONL loader's
own checks (so a bad field gets the message a bad file line gets) and scores items into the rows
``judge score`` writes. The web layer (:mod:`judge.serve.app`) and the worker thread
(:mod:`judge.serve.batcher`) call it.
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from ..core.distribution import DISTRIBUTION, SOURCE_VERSION, version
from ..core.errors import InputError
from ..data.alternatives import context_key
from ..data.items import Item
from ..data.pairs import Pair
from ..data.qualities import Quality
from ..datasets.identity import identify
from ..datasets.jsonl import items_from_records
from ..engine import MethodSpec, Prepared, prepare
from ..engine.batch import BatchPlan
from ..engine.build import backend_key
from ..engine.compare import prepare_pairs
from ..engine.kinds import check_live, method_kinds, scorer_kinds
from ..engine.session import Session
from ..records.pair_rows import PairRow
from ..records.rows import Row
from ..scorers.base import Scorer

#: The name request items carry as their file in error messages ("request, record items[2], field ...").
REQUEST = "request"
#: Dataset name given to request items (as a file's stem is for a file's items).
DATASET = "request"


@dataclass
class JudgeService:
    """One built judge: spec, its prepared method and scorer, and the run session that holds its backends and
    hands its rows (closed by :meth:`close`); and the pairwise method ``POST /v1/compare`` runs (``pairwise``:
    checked at startup, built on the first request, on the served judge's loaded model when they run on the same
    one, else in a session of its own)."""

    spec: MethodSpec
    prep: Prepared
    scorer: Scorer
    session: Session
    quality: Quality | None
    seed: int | None
    pairwise: Prepared | None = None
    _comparer: Scorer | None = field(default=None, repr=False)
    _compare_session: Session | None = field(default=None, repr=False)

    @classmethod
    def build(cls, spec: MethodSpec, quality: Quality | None, reference: Sequence[Item] | None = None,
              pairwise: MethodSpec | None = None) -> JudgeService:
        """Prepare and build the judge before the service listens (bad options fail here, not per request).

        No items are known yet, so the example pool must come from ``--pool`` when ``k > 0``: the
        engine's default (the rated items being scored) would freeze the first request's items as
        every later request's examples. An ensemble places each item among a fixed ``reference`` set
        (``--reference-set FILE``), whose member scores (and ``cv`` weights) are computed here, once.
        """
        check_servable(spec, reference)
        compared = prepare_pairs(pairwise, [], quality) if pairwise is not None else None
        # A listwise prompt shows each reply alone (population ()): a batch may hold several clients'
        # requests, and one client's replies must neither reach another's prompt nor move its score.
        prep = prepare(spec, reference, quality, population=())
        session = Session().open()
        try:
            scorer = session.build(prep)
            scorer.warm()  # an ensemble scores its reference now, before the port answers
        except BaseException:
            session.close()
            raise
        seed = prep.seed if spec.kind.records_seed else None
        return cls(spec, prep, scorer, session, prep.quality, seed, compared)

    @property
    def batching(self) -> bool:
        """Whether requests from several clients may be scored in one call (backends that batch)."""
        backend = self.session.backends.current
        return bool(backend is not None and backend.capabilities.batching)

    def parse(self, records: Sequence[tuple[str, Any]]) -> list[Item]:
        """Items from request records (label, JSON value); InputError naming record and field.

        The checks are the JSONL loader's, over the records of one request as over the lines of
        one file (duplicate ids, declared scales and automatic groups are per request). The scorer's
        own input check (template rendering, fields a classic scorer needs) runs too.
        """
        items = items_from_records(list(records), REQUEST, DATASET)
        identify(items)  # each item's conversation by content, as a file's (a head refuses what it learned from)
        self.scorer.check(items)
        return items

    def score(self, items: Sequence[Item]) -> list[Row]:
        """The rows of ``items``, in order: exactly ``judge score``'s rows (failed items carry ``error``)."""
        rows: list[Row] = []
        self.session.rows(self.prep, items, rows.append, quality=self.quality.name if self.quality else None,
                          seed=self.seed, judge=self.scorer)
        return rows

    def parse_pairs(self, body: Any, max_pairs: int) -> list[Pair]:
        """Pairs from a ``/v1/compare`` body: ``{"a": record, "b": record}`` (one pair) or ``{"pairs": [{"a": ...,
        "b": ...}, ...]}``, each record in the users' JSONL shape (``system`` names its side; default ``a`` and
        ``b``); the two replies of a pair must answer one context. InputError naming record and field."""
        if self.pairwise is None:
            raise InputError("this service compares no pairs (started with --compare-prompt none)", file=REQUEST)
        if not isinstance(body, dict):
            raise InputError(f'expected an object {{"a": ..., "b": ...}} or {{"pairs": [...]}}, got {type(body).__name__}',
                             file=REQUEST, field="pairs")
        if "pairs" in body:
            entries = body["pairs"]
            if set(body) != {"pairs"} or not isinstance(entries, list) or not entries:
                raise InputError("expected a non-empty array of {\"a\": ..., \"b\": ...} alone", file=REQUEST,
                                 field="pairs")
            if len(entries) > max_pairs:
                raise InputError(f"{len(entries)} pairs is over the limit of {max_pairs} per request (--max-batch)",
                                 file=REQUEST, field="pairs")
            labelled = [(f"pairs[{i}]", e) for i, e in enumerate(entries)]
        else:
            labelled = [("", body)]
        records: list[tuple[str, Any]] = []
        for label, entry in labelled:
            if not isinstance(entry, dict) or set(entry) != {"a", "b"}:
                raise InputError('a pair is an object with exactly the keys "a" and "b" (two records)', file=REQUEST,
                                 record=label or None, field="a")
            records += [(f"{label}.{side}".lstrip("."), entry[side]) for side in ("a", "b")]
        items = items_from_records(records, REQUEST, DATASET)
        identify(items)  # each reply's conversation by content, as a file's (what the bootstraps resample)
        pairs = []
        for (label, _), a, b in zip(labelled, items[::2], items[1::2], strict=True):
            if context_key(a) != context_key(b):
                raise InputError("the two replies answer different contexts (other turns or background): a pair "
                                 "compares two replies to one context", file=REQUEST, record=label or None,
                                 field="context")
            if a.level != "turn":
                raise InputError("a pair compares two replies (context + response), not dialogs", file=REQUEST,
                                 record=label or None, field="dialog")
            pairs.append(Pair(a, b, a.system or "a", b.system or "b"))
        return pairs

    def compare(self, pairs: Sequence[Pair]) -> list[PairRow]:
        """The pair rows of ``pairs``, in order (exactly ``judge compare``'s rows); runs on the worker thread,
        which builds the pairwise judge on the first call."""
        assert self.pairwise is not None
        session = self._compare_session or self.session
        if self._comparer is None:
            key = self.session.backends.key
            if key is not None and key != backend_key(self.pairwise.spec):
                session = self._compare_session = Session().open()  # another model than the served judge's
            self._comparer = session.build(self.pairwise)
        rows: list[PairRow] = []
        session.rows(self.pairwise, pairs, rows.append, quality=self.quality.name if self.quality else None,
                     judge=self._comparer)
        return rows

    def counters(self) -> dict[str, int]:
        counts = self.session.counters()
        if self._compare_session is not None:
            for key, value in self._compare_session.counters().items():
                counts[key] = counts.get(key, 0) + value
        return counts

    def info(self) -> dict[str, Any]:
        """What ``GET /v1/info`` shows: the method, the scorer's resolved settings and versions."""
        return {"method": self.spec.name, "quality": self.quality.name if self.quality else None, "seed": self.seed,
                "batching": self.batching, "spec": self.spec.describe(), "scorer": self.scorer.describe(),
                "kind": scorer_kinds(self.scorer).to_dict(), "fitted": self.scorer.fitted(),
                "compare": None if self.pairwise is None else self.pairwise.spec.describe(), "versions": versions()}

    def close(self) -> None:
        self.session.close()
        if self._compare_session is not None:
            self._compare_session.close()


def check_servable(spec: MethodSpec, reference: Sequence[Item] | None) -> None:
    """The spec options a service cannot honour: examples need ``--pool``, an ensemble needs
    ``--reference-set`` (and nothing else does), and no served method may read the user's turn after
    the rated response (a live request has none yet), ``allow_future`` or not. Nor can it wait hours for
    a provider's batch (``--batch``)."""
    check_live(spec, method_kinds(spec))
    spec.kind.check_served(spec, reference)
    if BatchPlan().batched(spec):
        raise InputError("a served judge answers each request as it comes: it cannot wait for a provider's batch "
                         "(drop the batch options)", field="--batch")


def versions() -> dict[str, str | None]:
    """Versions of this project (its installed distribution, else the source tree's), Python and the
    libraries that shape scores or serving."""
    out: dict[str, str | None] = {"python": platform.python_version(), DISTRIBUTION: version() or SOURCE_VERSION}
    for dist in ("llama-cpp-python", "starlette", "uvicorn"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out
