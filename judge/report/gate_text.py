"""How ``judge gate`` shows its comparisons: lines for a terminal or a CI log (:func:`text`) and a Markdown
table for a pull-request comment (:func:`markdown`). Numbers have fixed decimals, so the same result prints
the same bytes."""

from __future__ import annotations

import math

from ..data.qualities import LOWER_IS_BETTER
from ..stats.floor import too_few_text
from ..stats.gate import Delta
from .gate import Comparison, GateResult


def _num(x: float, sign: bool = False) -> str:
    if not math.isfinite(x):
        return "-"
    return f"{x:+.3f}" if sign else f"{x:.3f}"


def interval(d: Delta) -> str:
    """``-0.014 [-0.031, +0.002]``, or the delta with the floor's words when there is no interval."""
    if d.too_few:
        return f"{_num(d.delta, True)} ({too_few_text(d.conversations[0] if d.paired else list(d.conversations))})"
    return f"{_num(d.delta, True)} [{_num(d.low, True)}, {_num(d.high, True)}]"


def pairing(d: Delta) -> str:
    """How a delta was computed, in words."""
    if d.paired:
        return (f"paired by context ({d.n_baseline} shared contexts, {d.conversations[0]} conversations resampled "
                "jointly for both sides)")
    return (f"unpaired ({d.conversations[0]} baseline and {d.conversations[1]} candidate conversations "
            "resampled independently)")


def _quality(c: Comparison) -> str:
    name = "(no quality)" if c.quality == "-" else c.quality
    return f"{name} ({LOWER_IS_BETTER})" if c.negative else name


def _where(c: Comparison) -> str:
    quality = _quality(c)
    parts = [p for p in (c.cell, quality, "/".join(c.group)) if p]
    return " · ".join(parts)


def _notes(c: Comparison) -> list[str]:
    out = []
    if any(c.unmatched):
        out.append(f"left out: {c.unmatched[0]} baseline and {c.unmatched[1]} candidate contexts without a partner")
    if any(c.failed):
        out.append(f"failed: {c.failed[0]} baseline and {c.failed[1]} candidate rows have no score")
    return out


def _tolerance(result: GateResult) -> str:
    o = result.options
    return (f"a drop of at most {o.max_drop:g} in the mean of the {'judge' if o.on == 'judge' else 'human'} "
            f"scores ({o.level:.0%} intervals, {o.n_boot} resamples of conversations, seed {o.seed})")


def text(result: GateResult, exit_code: int) -> str:
    """The gate's report for a terminal or a CI log, ending with its verdict and exit code."""
    lines = [f"baseline:  {result.baseline}", f"candidate: {result.candidate}", f"tolerance: {_tolerance(result)}"]
    for c in result.comparisons:
        lines += ["", f"{_where(c)}: {pairing(c.judge)}"]
        judge_line = (f"  judge  {_num(c.judge.baseline)} -> {_num(c.judge.candidate)}  delta {interval(c.judge)}")
        human_line = None if c.human is None else \
            f"  human  {_num(c.human.baseline)} -> {_num(c.human.candidate)}  delta {interval(c.human)}"
        gated = result.options.on == "judge"
        mark = f"  {c.verdict}" + ("" if not c.group else " (breakdown, not gated)")
        lines.append(judge_line + (mark if gated else ""))
        if human_line is not None:
            lines.append(human_line + ("" if gated else mark))
        lines += [f"  {n}" for n in _notes(c)]
    lines += ["", f"verdict: {result.verdict} (exit {exit_code})"]
    return "\n".join(lines) + "\n"


def markdown(result: GateResult) -> str:
    """A Markdown table of the deltas, one row per cell, quality and group, for a pull-request comment."""
    cells = any(c.cell for c in result.comparisons)
    groups = any(c.group for c in result.comparisons)
    human = any(c.human is not None for c in result.comparisons)
    head = (["cell"] if cells else []) + ["quality"] + (["group"] if groups else []) + \
        ["pairing", "conversations", "baseline", "candidate", "delta [CI]"] + (["human delta [CI]"] if human else []) + \
        ["verdict"]
    lines = [f"### judge gate: {result.verdict}", "",
             f"Baseline `{result.baseline}`, candidate `{result.candidate}`; tolerance: {_tolerance(result)}.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in result.comparisons:
        d = c.judge
        convs = str(d.conversations[0]) if d.paired else f"{d.conversations[0]} / {d.conversations[1]}"
        row = ([c.cell] if cells else []) + [_quality(c)] + (["/".join(c.group) or "all"] if groups else []) + \
            ["paired" if d.paired else "unpaired", convs, _num(d.baseline), _num(d.candidate), interval(d)] + \
            ([interval(c.human) if c.human is not None else "-"] if human else []) + \
            [f"**{c.verdict}**" if not c.group else f"{c.verdict} (not gated)"]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"
