"""Pacing requests to a hosted API from the server's own rate-limit headers, the user's caps and 429s.

OpenAI (and servers that copy it) answer every request with the budget left in the current window::

    x-ratelimit-limit-requests: 60        x-ratelimit-limit-tokens: 150000
    x-ratelimit-remaining-requests: 59    x-ratelimit-remaining-tokens: 149984
    x-ratelimit-reset-requests: 1s        x-ratelimit-reset-tokens: 6m0s

where a reset is the time until that budget is whole again, written as a Go duration (``6m0s``, ``1s``,
``20ms``, ``1.5s``). The budget refills continuously, so ``(limit - remaining) / reset`` is its refill
rate. :class:`Pacer` keeps a copy of each budget (:class:`Budget`), refilled at that rate between answers
and set by each newer answer (less what the requests sent after it will take; an answer older than one
already read can only lower it), and sends a request only when both budgets hold it: requests wait
before they are sent instead of coming back as 429s. ``--rpm`` / ``--tpm`` caps space requests evenly on top
(:class:`Cap`). The number of requests in flight adapts between 1 and ``--concurrency``: halved on a 429
(at most once per second, so one burst of 429s is one decrease), one less when the server's budget left
cannot cover the requests in flight, one more after as many answers in a row as are in flight while the
budget is healthy. A server that sends no such headers (a local llama.cpp or vLLM server) is paced by the
caps and 429s alone.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

#: ``<number><unit>`` pieces of a Go duration.
_PIECE = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
#: Fewest seconds between two decreases of the concurrency on 429s.
DECREASE_GAP = 1.0


def parse_duration(text: str | None) -> float | None:
    """Seconds from a reset header: a Go duration (``6m0s``, ``1s``, ``20ms``, ``1h2m3.5s``) or a plain number
    of seconds (``0.5``); None when absent or unreadable."""
    if text is None:
        return None
    text = text.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    pieces = _PIECE.findall(text)
    if not pieces or "".join(n + u for n, u in pieces) != text:
        return None
    return sum(float(n) * _UNIT[u] for n, u in pieces)


def _int(headers: Mapping[str, str], name: str) -> int | None:
    value = headers.get(name)
    if value is None:
        return None
    try:
        return int(float(value))
    except ValueError:
        return None


@dataclass
class Budget:
    """A copy of one server budget (requests or tokens): what was left at ``at``, refilled at ``rate`` per
    second up to ``limit``; ``reset_at`` is when the server said it would be whole (used when no rate is known)."""

    remaining: float
    limit: float | None
    rate: float | None
    at: float
    reset_at: float

    def available(self, now: float) -> float:
        if self.rate is None:  # no refill rate known: what was left until the reset, then all of it
            if now < self.reset_at:
                return self.remaining
            return self.limit if self.limit is not None else float("inf")
        value = self.remaining + self.rate * (now - self.at)
        return min(value, self.limit) if self.limit is not None else value

    def wait_for(self, amount: float, now: float) -> float:
        """Seconds until ``amount`` is available (0: now)."""
        have = self.available(now)
        if have >= amount:
            return 0.0
        if self.rate:
            return (amount - have) / self.rate
        return max(0.0, self.reset_at - now)

    def take(self, amount: float, now: float) -> None:
        self.remaining = self.available(now) - amount
        self.at = now


def read_budget(headers: Mapping[str, str], kind: str, now: float, in_flight: float) -> Budget | None:
    """The budget ``kind`` (``requests`` or ``tokens``) an answer's headers give, less ``in_flight``: what the
    requests sent after that answer's own will take (the server may not have counted them yet)."""
    remaining = _int(headers, f"x-ratelimit-remaining-{kind}")
    if remaining is None:
        return None
    limit = _int(headers, f"x-ratelimit-limit-{kind}")
    reset = parse_duration(headers.get(f"x-ratelimit-reset-{kind}"))
    rate = None
    if reset and limit is not None and limit > remaining:
        rate = (limit - remaining) / reset
    return Budget(float(remaining) - in_flight, float(limit) if limit is not None else None, rate, now,
                  now + (reset or 0.0))


def _merge(old: Budget | None, new: Budget | None, now: float, newer: bool) -> Budget | None:
    """The budget after an answer: the answer's when it is the newest read (``newer``), else the copy's, lowered
    to the answer's when that reports less left."""
    if new is None:
        return old
    if old is not None and not newer:
        new.remaining = min(new.remaining, old.available(now))
    return new


@dataclass(frozen=True)
class Ticket:
    """A request sent: its place in the order of sending, and the tokens sent up to and with it."""

    seq: int
    tokens: float


@dataclass
class Cap:
    """A user's cap (``--rpm``, ``--tpm``): amounts spaced evenly at ``per_minute / 60`` per second, so no
    60-second window holds more than the cap (plus the one amount in progress)."""

    per_minute: float
    next_free: float = 0.0

    def wait_for(self, amount: float, now: float) -> float:
        return max(0.0, self.next_free - now)

    def take(self, amount: float, now: float) -> None:
        self.next_free = max(self.next_free, now) + amount * 60.0 / self.per_minute


@dataclass
class PaceStats:
    """What pacing did over a run (for the run's counters)."""

    waits: int = 0
    limited: int = 0
    decreases: int = 0
    increases: int = 0
    lowest: int = 0
    highest: int = 0


@dataclass
class Pacer:
    """Admits requests to a server (see the module's doc). ``acquire`` blocks until one may be sent;
    ``settle`` reads its answer's headers (or its 429)."""

    max_concurrency: int
    rpm: float | None = None
    tpm: float | None = None
    adaptive: bool = True
    clock: Callable[[], float] = time.monotonic
    stats: PaceStats = field(default_factory=PaceStats)

    def __post_init__(self) -> None:
        self.limit = self.max_concurrency
        self.in_flight = 0
        self._sent = 0  # requests sent so far
        self._sent_tokens = 0.0  # their tokens
        self._newest = -1  # the newest request whose answer set the budgets
        self._cond = threading.Condition()
        self._requests: Budget | None = None
        self._tokens: Budget | None = None
        self._caps = [(Cap(self.rpm), False)] if self.rpm else []
        if self.tpm:
            self._caps.append((Cap(self.tpm), True))
        self._pause_until = 0.0
        self._last_decrease = -DECREASE_GAP
        self._streak = 0
        self.stats.lowest = self.stats.highest = self.limit

    def _delay(self, tokens: int, now: float) -> float:
        waits = [self._pause_until - now]
        if self._requests is not None:
            waits.append(self._requests.wait_for(1, now))
        if self._tokens is not None:
            waits.append(self._tokens.wait_for(tokens, now))
        waits += [cap.wait_for(tokens if is_tokens else 1, now) for cap, is_tokens in self._caps]
        return max(waits)

    def acquire(self, tokens: int) -> Ticket:
        """Block until a request of about ``tokens`` tokens (prompt and answer) may be sent, and count it sent;
        its ticket goes back to :meth:`settle` with its answer."""
        waited = False
        with self._cond:
            while True:
                now = self.clock()
                if self.in_flight < self.limit:
                    delay = self._delay(tokens, now)
                    if delay <= 0:
                        break
                else:
                    delay = 0.05  # woken by a settle before then
                waited = True
                self._cond.wait(timeout=min(delay, 1.0))
            if self._requests is not None:
                self._requests.take(1, now)
            if self._tokens is not None:
                self._tokens.take(tokens, now)
            for cap, is_tokens in self._caps:
                cap.take(tokens if is_tokens else 1, now)
            self.in_flight += 1
            ticket = Ticket(self._sent, self._sent_tokens + tokens)
            self._sent += 1
            self._sent_tokens += tokens
            if waited:
                self.stats.waits += 1
            return ticket

    def settle(self, ticket: Ticket, headers: Mapping[str, str] | None, *, limited: bool = False,
               retry_after: float | None = None) -> None:
        """The answer to the request of ``ticket`` came back (``limited``: it was a 429): read the budgets its
        headers give and adapt. The server had counted every request sent before this one; those sent after it
        may not have reached it, so they come off what it reports left. An answer newer than the last one read
        sets the budgets; an older one (answers come back out of order) can only lower them."""
        with self._cond:
            self.in_flight = max(0, self.in_flight - 1)
            now = self.clock()
            if headers is not None:
                newer = ticket.seq > self._newest
                after = self._sent - ticket.seq - 1
                self._requests = _merge(self._requests, read_budget(headers, "requests", now, after), now, newer)
                self._tokens = _merge(self._tokens, read_budget(headers, "tokens", now,
                                                                self._sent_tokens - ticket.tokens), now, newer)
                self._newest = max(self._newest, ticket.seq)
            if limited:
                self.stats.limited += 1
                wait = retry_after if retry_after is not None else self._refill_time(now)
                if wait is not None:  # the server said when: every request waits (else each backs off alone)
                    self._pause_until = max(self._pause_until, now + wait)
                if now - self._last_decrease >= DECREASE_GAP:
                    self._set_limit(self.limit // 2, now)
            elif self.adaptive:
                self._adapt(now)
            if limited:
                self._cond.notify_all()  # every waiter sees the pause
            else:
                self._cond.notify()  # one request left: one waiter may take its place (the rest wake on time)

    def _refill_time(self, now: float) -> float | None:
        """After a 429 without Retry-After: until the server's budgets hold one more request (None when no
        headers say)."""
        waits = [b.wait_for(1, now) for b in (self._requests, self._tokens) if b is not None]
        return max(waits) if waits else None

    def _adapt(self, now: float) -> None:
        low = self._requests is not None and self._requests.available(now) < self.in_flight + 1
        if low and now - self._last_decrease >= DECREASE_GAP:
            self._set_limit(self.limit - 1, now)
            return
        self._streak += 1
        if not low and self._streak >= self.limit and self.limit < self.max_concurrency:
            self._streak = 0
            self.limit += 1
            self.stats.increases += 1
            self.stats.highest = max(self.stats.highest, self.limit)

    def _set_limit(self, value: int, now: float) -> None:
        if not self.adaptive:
            return
        value = max(1, value)
        if value < self.limit:
            self.stats.decreases += 1
        self.limit = value
        self._last_decrease = now
        self._streak = 0
        self.stats.lowest = min(self.stats.lowest, self.limit)
