"""The cost layer of a hosted backend (:data:`judge.backends.registry.METERS`): the backend counts the tokens of
its answers; the layer prices them from the price table (``--prices``), reports the spend in the run's counters
and gives the backend the purse (:class:`judge.accounting.spend.Purse`) that holds ``--max-cost`` for every
request it sends, synchronous or in a provider batch. :func:`judge.backends.registry.create_backend` puts it
around the backend wherever one is built (a local run, a Ray worker, ``judge serve``, the batch pre-pass).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from ..accounting.prices import load_prices
from ..accounting.spend import Purse
from ..core.errors import InputError
from .base import Backend, Failure, LabelDist, Prompt
from .hosted import HostedOptions
from .layer import Layer


class Spending(Backend, Protocol):
    """A backend that asks a purse before each request it sends, and counts the tokens of its answers."""

    purse: Purse
    options: HostedOptions


class Priced(Layer):
    """``inner`` (a hosted backend) with its spend priced and capped by its options (``prices``, ``max_cost``);
    a cap on a model with no price is refused (InputError) before anything is sent."""

    def __init__(self, inner: Spending) -> None:
        super().__init__(inner)
        o = inner.options
        prices = load_prices(o.prices)
        price = prices.get(inner.model_id)
        if o.max_cost is not None and price is None:
            raise InputError(f"--max-cost needs the model's price: {prices.missing(inner.model_id)}",
                             field="--max-cost")
        self.purse = inner.purse = Purse(price, o.max_cost, inner.counters)

    def iter_label_logprobs(self, prompts: Sequence[Prompt], candidates: Sequence[str],
                            top_n: int = 20) -> Iterator[tuple[int, LabelDist | Failure]]:
        """The backend's answers as they arrive (a cache in front keeps each at once)."""
        return self.inner.iter_label_logprobs(prompts, candidates, top_n)

    def spent(self) -> float | None:
        """Dollars spent so far, from the usage the server reported (None: the model has no price)."""
        return self.purse.spent()

    def counters(self) -> dict[str, int]:
        """The backend's counters, with their cost in millionths of a dollar (``cost_micro_usd``) when the model
        has a price, else the requests whose cost is not known (``unpriced_requests``)."""
        out = self.inner.counters()
        spent = self.purse.spent()
        if spent is not None:
            out["cost_micro_usd"] = round(spent * 1_000_000)
        else:
            out["unpriced_requests"] = out.get("requests", 0) + out.get("batch_requests", 0)
        return out


__all__ = ["Priced", "Spending"]
