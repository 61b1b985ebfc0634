"""``judge estimate``'s output: a text table (each group's human-scale mean and each difference, PPI++ beside
labels only) and the same as JSON (:func:`to_dict`), which the viewer's page draws (``judge estimate --view``)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ..stats.estimate import Estimand, Estimate
from ..stats.floor import MIN_CONVERSATIONS, too_few_text

#: The JSON document's format version.
FORMAT = 1


def _num(x: float, digits: int = 3) -> str:
    return "-" if not math.isfinite(x) else f"{x:.{digits}f}"


def _interval(low: float, high: float, n_conv: int) -> str:
    if not math.isfinite(low):
        return too_few_text(n_conv) if n_conv < MIN_CONVERSATIONS else "no interval (see below)"
    return f"[{_num(low)}, {_num(high)}]"


def _significant(e: Estimand) -> str:
    """A difference whose PPI interval excludes 0 is marked ``*``."""
    return "*" if e.has_interval and (e.ppi_low > 0 or e.ppi_high < 0) else ""


def _lines(title: str, estimands: list[Estimand], difference: bool) -> list[str]:
    width = max([len(title), *(len(e.name) for e in estimands)])
    head = (f"{title:<{width}}  {'PPI++':>7}  {'95% CI':<24}  {'labels':>7}  {'95% CI':<24}  {'judge':>7}"
            f"  {'rows':>5}  {'labels':>6}  {'eff. n':>7}  {'lambda':>6}")
    out = [head]
    for e in estimands:
        mark = _significant(e) if difference else ""
        out.append(f"{e.name:<{width}}  {_num(e.ppi):>7}  {_interval(e.ppi_low, e.ppi_high, e.n_conversations):<24}"
                   f"  {_num(e.labels_only):>7}  {_interval(e.labels_only_low, e.labels_only_high, e.n_conversations):<24}"
                   f"  {_num(e.judge_mean):>7}  {e.n_rows:>5}  {e.n_labels:>6}  {_num(e.effective_n, 1):>7}"
                   f"  {_num(e.lam, 2):>6}{mark}")
    return out


def _raters(est: Estimate) -> str:
    return "(the rows' own human values)" if est.n_raters == 0 else f"by {est.n_raters} rater(s)"


def render_text(est: Estimate) -> str:
    """The table ``judge estimate`` prints; for a results folder's cell with none of the labels, a line and notes."""
    sample = "weighted by inverse sampling probability" if est.weighted else "a uniform random sample"
    target = ("the mean over these rows" if est.target == "rows"
              else "the mean of the conversations these rows come from")
    head = f"{est.source}: quality {est.quality}, {est.n_rows} rows in {est.n_conversations} conversations, "
    if not est.groups:
        return "\n".join([head + "none of them labelled: not estimated", *(f"note: {n}" for n in est.notes)])
    lines = [f"{head}{est.n_labelled} labelled {_raters(est)} ({sample})",
             f"human-scale estimates of {target}; 95% intervals resample conversations; "
             "eff. n = labels x (labels-only variance / PPI variance)", ""]
    lines += _lines(est.by, est.groups, False)
    if est.differences:
        lines += ["", *_lines("difference", est.differences, True),
                  "* the PPI++ interval excludes 0"]
    if any(not (math.isfinite(e.ppi_low) and math.isfinite(e.labels_only_low)) and e.n_conversations >= MIN_CONVERSATIONS
           for e in (*est.groups, *est.differences)):
        lines.append("no interval: a group of the estimate has fewer than 2 labelled conversations, or its labels "
                     "do not vary (a bootstrap of equal values has no spread)")
    lines += [f"note: {n}" for n in est.notes]
    return "\n".join(lines)


def _clean(x: Any) -> Any:
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_clean(v) for v in x]
    return x


def to_dict(est: Estimate) -> dict[str, Any]:
    """The JSON document (non-finite numbers, e.g. an interval below the floor, as null), which the viewer's
    estimate section draws as it is: with the floor on conversations (why an interval is null) and each
    difference's ``*`` mark, so that no reader decides either again."""
    doc = {"format": FORMAT, "min_conversations": MIN_CONVERSATIONS, **_clean(dataclasses.asdict(est))}
    for d, e in zip(doc["differences"], est.differences, strict=True):
        d["significant"] = bool(_significant(e))
    return doc
