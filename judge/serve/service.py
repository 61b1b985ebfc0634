"""The judge a service holds: built once through the engine, then handed each request's items.

Nothing here knows about HTTP: :class:`JudgeService` parses request records with the JSONL loader's
own checks (so a bad field gets the message a bad file line gets) and scores items into the rows
``judge score`` writes. The web layer (:mod:`judge.serve.app`) and the worker thread
(:mod:`judge.serve.batcher`) call it.
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from ..datasets.identity import identify
from ..datasets.jsonl import items_from_records
from ..engine import BackendPool, MethodSpec, build, prepare, score_rows
from ..engine.kinds import check_live, method_kinds, scorer_kinds
from ..errors import InputError
from ..items import Item
from ..qualities import Quality
from ..scorers.base import Scorer

#: The name request items carry as their file in error messages ("request, record items[2], field ...").
REQUEST = "request"
#: Dataset name given to request items (as a file's stem is for a file's items).
DATASET = "request"


@dataclass
class JudgeService:
    """One built judge: spec, scorer and the backends it holds (closed by :meth:`close`)."""

    spec: MethodSpec
    scorer: Scorer
    backends: BackendPool
    quality: Quality | None
    seed: int | None

    @classmethod
    def build(cls, spec: MethodSpec, quality: Quality | None, reference: Sequence[Item] | None = None
              ) -> JudgeService:
        """Prepare and build the judge before the service listens (bad options fail here, not per request).

        No items are known yet, so the example pool must come from ``--pool`` when ``k > 0``: the
        engine's default (the rated items being scored) would freeze the first request's items as
        every later request's examples. An ensemble places each item among a fixed ``reference`` set
        (``--reference-set FILE``), whose member scores (and ``cv`` weights) are computed here, once.
        """
        check_servable(spec, reference)
        # A listwise prompt shows each reply alone (population ()): a batch may hold several clients'
        # requests, and one client's replies must neither reach another's prompt nor move its score.
        prep = prepare(spec, reference, quality, population=())
        backends = BackendPool()
        try:
            scorer = build(prep, backends)
            scorer.warm()  # an ensemble scores its reference now, before the port answers
        except BaseException:
            backends.close()
            raise
        seed = prep.seed if spec.kind.records_seed else None
        return cls(spec, scorer, backends, prep.quality, seed)

    @property
    def batching(self) -> bool:
        """Whether requests from several clients may be scored in one call (backends that batch)."""
        backend = self.backends.current
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

    def score(self, items: Sequence[Item]) -> list[dict[str, Any]]:
        """The rows of ``items``, in order: exactly ``judge score``'s rows (failed items carry ``error``)."""
        qname = self.quality.name if self.quality else None
        return list(score_rows(self.scorer, items, self.spec.name, qname, self.seed))

    def counters(self) -> dict[str, int]:
        return self.backends.counters()

    def info(self) -> dict[str, Any]:
        """What ``GET /v1/info`` shows: the method, the scorer's resolved settings and versions."""
        return {
            "method": self.spec.name,
            "quality": self.quality.name if self.quality else None,
            "seed": self.seed,
            "batching": self.batching,
            "spec": self.spec.describe(),
            "scorer": self.scorer.describe(),
            "kind": scorer_kinds(self.scorer).to_dict(),
            "fitted": self.scorer.fitted(),
            "versions": versions(),
        }

    def close(self) -> None:
        self.backends.close()


def check_servable(spec: MethodSpec, reference: Sequence[Item] | None) -> None:
    """The spec options a service cannot honour: examples need ``--pool``, an ensemble needs
    ``--reference-set`` (and nothing else does), and no served method may read the user's turn after
    the rated response (a live request has none yet), ``allow_future`` or not. Nor can it wait hours for
    a provider's batch (``--batch``)."""
    from ..engine.batch import BatchPlan

    check_live(spec, method_kinds(spec))
    spec.kind.check_served(spec, reference)
    if BatchPlan().batched(spec):
        raise InputError("a served judge answers each request as it comes: it cannot wait for a provider's batch "
                         "(drop the batch options)", field="--batch")


def versions() -> dict[str, str | None]:
    """Versions of this project (its installed distribution, else the source tree's), Python and the
    libraries that shape scores or serving."""
    from .. import __version__
    from ..distribution import DISTRIBUTION, version

    out: dict[str, str | None] = {"python": platform.python_version(), DISTRIBUTION: version() or __version__}
    for dist in ("llama-cpp-python", "starlette", "uvicorn"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out
