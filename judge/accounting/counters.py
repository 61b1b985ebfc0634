"""Backend usage counters as the lines a person reads on stderr.

Kept outside ``judge/cli`` because the command line is not the only place that reports them:
``judge serve`` prints them when it stops, and nothing outside ``cli/`` imports from ``cli/``.
"""

from __future__ import annotations

import sys
from typing import TextIO

from .prices import dollars

#: What the API backend did with each parameter a server refused (the ``refused:<param>`` counters).
REFUSED = {"max_tokens": "sent max_completion_tokens instead", "logprobs": "answers estimated from samples",
           "top_logprobs": "answers estimated from samples", "temperature": "the server's default temperature",
           "seed": "sent without a seed", "n": "one completion per request", "reasoning_effort": "sent without it"}


def report_counters(counters: dict[str, int], file: TextIO | None = None) -> None:
    """One stderr line each for cache hits/misses, API token usage and its cost in dollars (when there were
    any): the cost is priced from the usage the server reported (``cost_micro_usd``, millionths of a dollar);
    and the parameters the server refused and how the run went on without them."""
    file = file or sys.stderr
    if "cache_hits" in counters:
        print(f"judge: cache: {counters['cache_hits']} hits, {counters['cache_misses']} misses", file=file)
    if "requests" in counters:
        thinking = f" ({counters['reasoning_tokens']} of them reasoning)" if counters.get("reasoning_tokens") else ""
        print(f"judge: API usage: {counters['requests']} requests answered, {counters['prompt_tokens']} prompt "
              f"tokens, {counters['completion_tokens']} completion tokens{thinking}, {counters['retries']} retries",
              file=file)
        if counters.get("batch_requests"):
            print(f"judge: Batch API usage: {counters['batch_requests']} requests answered, "
                  f"{counters['batch_prompt_tokens']} prompt tokens, {counters['batch_completion_tokens']} completion "
                  "tokens", file=file)
        if counters.get("rate_limited") or counters.get("paced_waits"):
            print(f"judge: pacing: {counters.get('paced_waits', 0)} requests held back for the server's rate limit, "
                  f"{counters.get('rate_limited', 0)} answered 429", file=file)
    refused = [key.removeprefix("refused:") for key in counters if key.startswith("refused:")]
    if refused:
        done = ", ".join(f"{p} ({REFUSED.get(p, 'dropped')})" for p in refused)
        print(f"judge: the server refused {done}; remembered for the run", file=file)
    for line in cost_lines(counters):
        print(line, file=file)


def cost_lines(counters: dict[str, int]) -> list[str]:
    """The run's cost in dollars from the usage the server reported, or why it is not known."""
    out = []
    if "cost_micro_usd" in counters:
        out.append(f"judge: API cost: {dollars(counters['cost_micro_usd'] / 1_000_000)} (the usage the server "
                   "reported, at the price table's prices)")
    if counters.get("unpriced_requests"):
        out.append(f"judge: API cost: not known for {counters['unpriced_requests']} requests: the model has no price "
                   "(--prices FILE gives one)")
    return out
