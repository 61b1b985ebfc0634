"""What a run on a hosted API will cost in money, before it starts (``--check``, ``--max-cost``).

Like the token count of local cells (:mod:`judge.engine.cost`), the count is a replay, not a model: the
run's own scorers ask their own prompts in the run's own order behind the run's own cache keys, on a
backend that is the OpenAI backend with the sending taken out (:class:`HostedCounter`: same model,
settings and so cache keys; every answer a uniform distribution). A prompt answered from the SQLite cache
costs nothing; every other one is a request of one answer token (``max_tokens=1``).

There is no tokenizer of a hosted model here (tiktoken downloads its encodings at run time, which cannot
happen offline), so a request's prompt tokens are an estimate: characters / 4, rounded up (the backend's
:data:`CHARS_PER_TOKEN`), plus :data:`CHAT_FRAMING` for the framing of a chat request's one user message.
Measured once against o200k_base (the encoding of the gpt-4o, gpt-4.1 and gpt-5 families, counted with
the copy the bpe-openai package ships), the estimate is 1.02x (rating prompts) to 1.16x (yes/no prompts)
the real count on the example dialogues and 200 DailyDialog-Gupta items: it leans high. The figures are
printed with ``~`` and called estimates. No cached-input discount is assumed (the provider's prompt cache
cannot be foreseen); the batch figure is the same usage at the Batch API's discount. Nothing is sent and
nothing is written.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..backends import Backend
from ..backends.base import Failure, LabelDist, Prompt
from ..backends.openai_api import CHARS_PER_TOKEN, CHAT_OVERHEAD, OpenAIBackend
from ..cache import CachedBackend
from ..config import GenerateConfig
from ..errors import InputError
from ..prices import Price, dollars, load_prices
from .build import backend_key
from .cost import CostPool, DryCache, Entry, _cached, _replay, estimable
from .spec import MethodSpec

#: Tokens a chat request adds around its one user message: 3 for the message, 1 for its role, 3 priming the
#: reply (OpenAI's cookbook, "How to count tokens with tiktoken"). The backend's own CHAT_OVERHEAD (32) is
#: a safe margin for fitting a context window, too much for a bill.
CHAT_FRAMING = 7

__all__ = ["CHARS_PER_TOKEN", "CHAT_FRAMING", "CHAT_OVERHEAD", "HostedCell", "HostedCounter", "check_budget", "count_hosted",
           "money_lines"]


class HostedCounter(OpenAIBackend):
    """The OpenAI backend with its requests counted instead of sent: the same identity and settings (so the
    same cache keys), prompt tokens by the estimate above (the server is never asked), one answer token per
    request."""

    def __init__(self, model: str | None, config: GenerateConfig, **options: object) -> None:
        super().__init__(model, config, **{**options, "tokenize": "estimate"})  # type: ignore[arg-type]
        self.sent = 0
        self.prompt_tokens = 0

    def iter_label_logprobs(self, prompts: Sequence[Prompt], candidates: Sequence[str],
                            top_n: int = 20) -> Iterator[tuple[int, LabelDist | Failure]]:
        for i, p in enumerate(prompts):
            tokens = -(-len(p.text) // CHARS_PER_TOKEN) + (CHAT_FRAMING if self._use_chat(p) else 0)
            self.sent += 1
            self.prompt_tokens += tokens
            uniform = -math.log(max(1, len(candidates)))
            yield i, LabelDist(dict.fromkeys(candidates, uniform), [(c, uniform) for c in candidates],
                               n_prompt_tokens=tokens, complete=False)

    def counters(self) -> dict[str, int]:
        return {"counted_requests": self.sent, "counted_prompt_tokens": self.prompt_tokens}


class HostedPool(CostPool):
    """Hands out :class:`HostedCounter` backends (behind a :class:`DryCache` where the method uses the cache)."""

    def get(self, spec: MethodSpec) -> Backend:
        key = backend_key(spec)
        if key != self._key or self._backend is None:
            self.close()
            counter = HostedCounter(spec.model, spec.generate, **dict(spec.options))
            backend: Backend = CachedBackend(counter, DryCache(spec.generate.cache_path)) if spec.generate.cache \
                else counter
            self._backend, self._key = backend, key
        return self._backend


@dataclass
class HostedCell:
    """One hosted cell's share: ``requests`` to send (items not in the cache; several per item for methods
    that ask several prompts), their estimated prompt tokens, and its price (None: the model has none)."""

    label: str
    model: str
    items: int
    cached: int
    requests: int
    prompt_tokens: int
    price: Price | None
    missing: str = ""

    @property
    def output_tokens(self) -> int:
        return self.requests  # max_tokens = 1

    def cost(self, batch: bool = False) -> float | None:
        if self.price is None:
            return None
        return self.price.cost(self.prompt_tokens, self.output_tokens, batch=batch)


def count_hosted(groups: Sequence[Sequence[Entry]]) -> list[HostedCell]:
    """Replay the hosted cells of ``groups`` (the run's order) and count what each would send."""
    pool = HostedPool()
    out: list[HostedCell] = []
    try:
        for group in groups:
            if estimable(group[0].prep.spec) != "hosted":
                continue
            _replay(group, pool)
            for e in group:
                spec = e.prep.spec
                options = dict(spec.options)
                prices = load_prices(options.get("prices") if isinstance(options.get("prices"), str) else None)
                model = str(spec.model or "")
                requests = e.counters.get("counted_requests", 0)
                out.append(HostedCell(e.label, model, e.done + len(e.todo), _cached(e), requests,
                                      e.counters.get("counted_prompt_tokens", 0), prices.get(model),
                                      "" if prices.get(model) else prices.missing(model)))
    finally:
        pool.close()
    return out


def money_lines(cells: Sequence[HostedCell]) -> list[str]:
    """The money table ``--check`` prints after the token table: per hosted cell and in total, the estimated
    cost synchronously and through the Batch API, the prices used (with their dates and sources) and how the
    tokens were estimated. Empty without hosted cells."""
    if not cells:
        return []
    width = max([len(c.label) for c in cells] + [4])
    lines = ["", "cost in money (hosted API; estimates):",
             f"{'cell':<{width}}  {'items':>6}  {'cached':>6}  {'requests':>8}  {'~prompt tokens':>14}  "
             f"{'~synchronous':>12}  {'~batch':>10}"]
    for c in cells:
        sync, batch = c.cost(), c.cost(batch=True)
        lines.append(f"{c.label:<{width}}  {c.items:>6,}  {c.cached:>6,}  {c.requests:>8,}  {c.prompt_tokens:>14,}  "
                     f"{dollars(sync) if sync is not None else 'n/a (no price)':>12}  "
                     f"{dollars(batch) if batch is not None and c.price and c.price.batch_discount else 'n/a':>10}")
    priced = [c for c in cells if c.price is not None]
    total = f"total: {sum(c.requests for c in cells):,} requests, ~{sum(c.prompt_tokens for c in cells):,} prompt tokens"
    if priced:
        total += (f", ~{dollars(sum(c.cost() or 0.0 for c in priced))} synchronous, "
                  f"~{dollars(sum(c.cost(batch=True) or 0.0 for c in priced))} through the Batch API")
    if len(priced) < len(cells):
        total += " (cells without a price not included)"
    lines.append(total)
    for price in dict.fromkeys(c.price for c in priced if c.price is not None):
        lines.append(f"prices: {price.describe()}")
    lines += [f"note: {m}" for m in dict.fromkeys(c.missing for c in cells if c.missing)]
    lines.append(f"note: prompt tokens are estimated (no tokenizer of a hosted model here): characters / "
                 f"{CHARS_PER_TOKEN}, plus {CHAT_FRAMING} per chat request for its framing; one answer token per "
                 "request; no cached-input discount assumed")
    return lines


def check_budget(groups: Sequence[Sequence[Entry]]) -> list[HostedCell]:
    """Refuse (InputError) a run whose hosted cells' estimated synchronous cost is above their ``max_cost``
    option, before anything is sent; returns the counted cells. Cells whose backend sets no cap are not counted."""
    capped = [[e for e in g if _max_cost(e.prep.spec) is not None] for g in groups]
    capped = [g for g in capped if g]
    if not capped:
        return []
    cells = count_hosted(capped)  # one per entry, in the groups' order
    by_cap: dict[float, float] = {}
    for e, cell in zip([e for g in capped for e in g], cells, strict=True):
        cap = _max_cost(e.prep.spec)
        assert cap is not None
        by_cap[cap] = by_cap.get(cap, 0.0) + (cell.cost() or 0.0)
    for cap, estimate in by_cap.items():
        if estimate > cap:
            raise InputError(f"the run's estimated cost ~{dollars(estimate)} is above --max-cost {dollars(cap)} "
                             "(run with --check to see it per cell; raise the cap or score fewer items)",
                             field="--max-cost")
    return cells


def _max_cost(spec: MethodSpec) -> float | None:
    if estimable(spec) != "hosted":
        return None
    value = dict(spec.options).get("max_cost")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
