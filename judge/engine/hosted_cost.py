"""What a run on a hosted API will cost in money, before it starts (``--check``, ``--max-cost``).

Like the token count of local cells (:mod:`judge.engine.cost`), the count is a replay, not a model: the
run's own scorers ask their own prompts in the run's own order behind the run's own cache keys, on the
backend's declared twin (``Backend.cost = "hosted"``, its replay in :data:`judge.backends.registry.REPLAYS`: for OpenAI the backend with the
sending taken out, :mod:`judge.backends.openai_replay`), whose counters say how many requests it would
send and their estimated prompt tokens. A prompt answered from the SQLite cache costs nothing; every other
one is a request of one answer token (``max_tokens=1``), or for a judge that reasons first of its whole
budget and answer line (``K`` of them when they are sampled). The estimate leans high (the twin's module says by
how much); the figures are printed with ``~`` and called estimates. No cached-input discount is assumed
(the provider's prompt cache cannot be foreseen); the batch figure is the same usage at the Batch API's
discount. Nothing is sent and nothing is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..accounting.prices import Price, dollars, load_prices
from ..backends.hosted import HostedOptions
from ..core.errors import InputError
from .cost import CostPool, Entry, _cached, estimable, replay_group
from .spec import MethodSpec

__all__ = ["Budget", "HostedCell", "count_hosted", "money_lines"]


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
    #: The most the requests may generate (None: one answer token each, ``max_tokens=1``).
    completion_tokens: int | None = None

    @property
    def output_tokens(self) -> int:
        return self.requests if self.completion_tokens is None else self.completion_tokens

    def cost(self, batch: bool = False) -> float | None:
        if self.price is None:
            return None
        return self.price.cost(self.prompt_tokens, self.output_tokens, batch=batch)


def count_hosted(groups: Sequence[Sequence[Entry]]) -> list[HostedCell]:
    """Replay the hosted cells of ``groups`` (the run's order) and count what each would send."""
    pool = CostPool()
    out: list[HostedCell] = []
    try:
        for group in groups:
            if estimable(group[0].prep.spec) != "hosted":
                continue
            replay_group(group, pool)
            for e in group:
                spec = e.prep.spec
                prices = load_prices(HostedOptions.of(spec.options).prices)
                model = str(spec.model or "")
                requests = e.counters.get("counted_requests", 0)
                out.append(HostedCell(e.label, model, e.done + len(e.todo), _cached(e), requests,
                                      e.counters.get("counted_prompt_tokens", 0), prices.get(model),
                                      "" if prices.get(model) else prices.missing(model),
                                      e.counters.get("counted_completion_tokens")))
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
    lines.append("note: prompt tokens are estimated without the hosted model's tokenizer (docs/backends-api.md, "
                 f"\"Cost in money\"); {_answers(cells)}; no cached-input discount assumed")
    return lines


def _answers(cells: Sequence[HostedCell]) -> str:
    """What the estimate counts of the answers: one token per request, or the rationales' whole budgets."""
    generated = sum(c.output_tokens for c in cells if c.output_tokens != c.requests)
    if not generated:
        return "one answer token per request"
    return f"~{generated:,} generated tokens counted at the rationales' whole budgets (the most they may take)"


class Budget:
    """``--max-cost`` before anything is sent: the estimated cost of the hosted cells whose backend sets a cap,
    added up over the parts of a run given to :meth:`add` (a streamed file is counted a chunk at a time), with
    the run refused (InputError) as soon as a cap's total is above it. The estimate is the synchronous one, or
    the Batch API's for a backend that sends its requests as batches (``batch``). It is a first check only:
    what bounds the spend is the backend's purse (:mod:`judge.backends.priced`), which lets a synchronous
    request, or a batch, go only when the most it can cost fits what the server's usage leaves of the cap."""

    def __init__(self) -> None:
        self.spent: dict[float, float] = {}

    def add(self, groups: Sequence[Sequence[Entry]]) -> list[HostedCell]:
        """Count ``groups`` (the run's order) into the totals and refuse the run when a cap is passed; returns
        the counted cells (cells whose backend sets no cap are not counted)."""
        capped = [g for g in ([e for e in g if _capped(e.prep.spec)] for g in groups) if g]
        if not capped:
            return []
        cells = count_hosted(capped)  # one per entry, in the groups' order
        for e, cell in zip([e for g in capped for e in g], cells, strict=True):
            o = HostedOptions.of(e.prep.spec.options)
            assert o.max_cost is not None
            self.spent[o.max_cost] = self.spent.get(o.max_cost, 0.0) + (cell.cost(batch=o.batch) or 0.0)
        for cap, estimate in self.spent.items():
            if estimate > cap:
                raise InputError(f"the run's estimated cost ~{dollars(estimate)} is above --max-cost {dollars(cap)} "
                                 "(run with --check to see it per cell; raise the cap or score fewer items)",
                                 field="--max-cost")
        return cells


def _capped(spec: MethodSpec) -> bool:
    """Whether the method runs on a hosted backend with a cost cap."""
    return estimable(spec) == "hosted" and HostedOptions.of(spec.options).max_cost is not None
