"""Counters for ``GET /metrics`` in the Prometheus text exposition format (version 0.0.4).

Written by hand: a handful of counters and one histogram do not justify a client library, and the
format is plain text (``# HELP``/``# TYPE`` lines, then ``name{labels} value``).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Mapping, Sequence

from ..records.pair_rows import PairRow
from ..records.rows import Row

#: Upper bounds (seconds) of the request latency histogram buckets.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """Thread-safe counters of requests, items, failures and latency."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, int], int] = defaultdict(int)
        self.items = 0
        self.item_failures = 0
        self.batches = 0
        self.batched_requests = 0
        self.buckets: dict[str, list[int]] = {}
        self.latency_sum: dict[str, float] = defaultdict(float)
        self.latency_count: dict[str, int] = defaultdict(int)

    def request(self, endpoint: str, status: int, seconds: float) -> None:
        with self._lock:
            self.requests[(endpoint, status)] += 1
            counts = self.buckets.setdefault(endpoint, [0] * len(LATENCY_BUCKETS))
            for i, bound in enumerate(LATENCY_BUCKETS):
                if seconds <= bound:
                    counts[i] += 1
            self.latency_sum[endpoint] += seconds
            self.latency_count[endpoint] += 1

    def scored(self, rows: Sequence[Row | PairRow]) -> None:
        with self._lock:
            self.items += len(rows)
            self.item_failures += sum(row.error is not None for row in rows)

    def batch(self, requests: int, items: int) -> None:
        """One scoring call of the worker, holding ``requests`` requests' items."""
        with self._lock:
            self.batches += 1
            self.batched_requests += requests

    def render(self, counters: Mapping[str, int], pending: int) -> str:
        """The exposition text; ``counters`` are the backend's (cache hits and misses, API usage)."""
        with self._lock:
            out: list[str] = []
            _head(out, "judge_requests_total", "counter", "HTTP requests answered, by endpoint and status")
            for (endpoint, status), n in sorted(self.requests.items()):
                out.append(f'judge_requests_total{{endpoint="{endpoint}",status="{status}"}} {n}')
            _head(out, "judge_items_total", "counter", "items scored", self.items)
            _head(out, "judge_item_failures_total", "counter", "items whose row carries an error", self.item_failures)
            _head(out, "judge_scoring_batches_total", "counter", "scoring calls of the worker thread", self.batches)
            _head(out, "judge_scoring_batched_requests_total", "counter",
                  "requests handled by those calls (above batches: requests were merged)", self.batched_requests)
            _head(out, "judge_queue_pending", "gauge", "requests waiting for the worker thread", pending)
            _head(out, "judge_request_duration_seconds", "histogram", "request latency, by endpoint")
            for endpoint in sorted(self.buckets):
                for bound, n in zip(LATENCY_BUCKETS, self.buckets[endpoint], strict=True):
                    out.append(f'judge_request_duration_seconds_bucket{{endpoint="{endpoint}",le="{bound:g}"}} {n}')
                count = self.latency_count[endpoint]
                out.append(f'judge_request_duration_seconds_bucket{{endpoint="{endpoint}",le="+Inf"}} {count}')
                out.append(f'judge_request_duration_seconds_sum{{endpoint="{endpoint}"}} {self.latency_sum[endpoint]:.6f}')
                out.append(f'judge_request_duration_seconds_count{{endpoint="{endpoint}"}} {count}')
        for key in ("cache_hits", "cache_misses"):
            name = f"judge_{key}_total"
            _head(out, name, "counter", f"label distributions {'served from' if key == 'cache_hits' else 'not in'} "
                  "the SQLite cache", counters.get(key, 0))
        for key, value in sorted(counters.items()):
            if key not in ("cache_hits", "cache_misses"):
                _head(out, f"judge_backend_{key}_total", "counter", f"backend counter '{key}'", value)
        return "\n".join(out) + "\n"


def _head(out: list[str], name: str, kind: str, help_text: str, value: int | None = None) -> None:
    """A metric's HELP and TYPE lines, and with ``value`` its one sample."""
    out += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *([f"{name} {value}"] if value is not None else [])]
