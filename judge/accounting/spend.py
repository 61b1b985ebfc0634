"""What a run on a hosted API spends, and what keeps it under ``--max-cost``: :class:`Purse`.

The backend counts the tokens the server reported for each answer; the purse prices them, so the spend is the
server's own usage. A synchronous request and a provider batch ask the same purse before they go, so one cap
bounds both. A request refused is never answered, so never cached: a rerun with a higher cap goes on from the
cache.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from .prices import Price, dollars


class OverBudget(Exception):
    """Sending the request could take the run's spend past the cap: it is not sent."""


class Purse:
    """A run's money on one backend: ``price`` (None: the model has none, its cost is not known), ``cap`` (None:
    no cap) and ``tokens``, the backend's counters of the tokens the server reported (``prompt_tokens``,
    ``completion_tokens``, ``cached_tokens`` and their ``batch_`` twins). Without a price or a cap every request
    goes (a backend's purse until the cost layer, :mod:`judge.backends.priced`, gives it one). Thread-safe."""

    def __init__(self, price: Price | None = None, cap: float | None = None,
                 tokens: Callable[[], Mapping[str, int]] = dict) -> None:
        self.price = price
        self.cap = cap
        self._tokens = tokens
        self._held = 0.0
        self._settle = threading.Condition()

    def spent(self) -> float | None:
        """Dollars spent so far, from the usage the server reported (None: no price)."""
        if self.price is None:
            return None
        t = self._tokens()
        return (self.price.cost(t.get("prompt_tokens", 0), t.get("completion_tokens", 0), t.get("cached_tokens", 0))
                + self.price.cost(t.get("batch_prompt_tokens", 0), t.get("batch_completion_tokens", 0),
                                  t.get("batch_cached_tokens", 0), batch=True))

    def cost(self, prompt_tokens: int, completion_tokens: int, batch: bool = False) -> float:
        """Dollars the tokens cost at the price (0 without one)."""
        return self.price.cost(prompt_tokens, completion_tokens, batch=batch) if self.price is not None else 0.0

    def refusal(self) -> str:
        """Why a request is not sent: the reason its item fails with."""
        return (f"not scored: sending it could take the spend past --max-cost {dollars(self.cap or 0.0)} "
                f"({dollars(self.spent() or 0.0)} spent)")

    def hold(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Under the cap: set aside the most a request of these tokens can cost (no cached discount), waiting
        while what requests in flight hold is what does not fit; OverBudget when the spend alone leaves no room.
        Returns what was set aside (0 without a cap), for :meth:`release` once the answer's usage is counted."""
        if self.cap is None or self.price is None:
            return 0.0
        most = self.price.cost(prompt_tokens, completion_tokens)
        with self._settle:
            while True:
                spent = self.spent() or 0.0
                if spent + most > self.cap:
                    raise OverBudget(self.refusal())
                if spent + self._held + most <= self.cap:
                    self._held += most
                    return most
                self._settle.wait(timeout=1.0)

    def release(self, held: float) -> None:
        """Give back what :meth:`hold` set aside (after the answer's usage was counted: never out of both)."""
        if held:
            with self._settle:
                self._held -= held
                self._settle.notify_all()

    def room(self, held: float) -> float | None:
        """Under the cap: what is left of it after the spend so far and ``held`` (what batches in flight can still
        cost); None without a cap."""
        if self.cap is None or self.price is None:
            return None
        return self.cap - (self.spent() or 0.0) - held


__all__ = ["OverBudget", "Purse"]
