"""Two sections of the results page for the sets rated beyond DSTC10: Reliable-Eval's system level, with the
human self-replication ceiling beside each figure, and pairwise accuracy against the pairs' own labels
(PandaLM, LLMBar), with the LLMBar paper's judges beside ours.

Both are computed when a run is collected (``judge results collect``) and kept in its committed summary, so
the page prints them from the summary alone, as it does every other figure: ``system_level`` (from
:func:`judge.report.system_level.system_rows`, which reads the run's rows and the data) and each pairwise
entry's ``labels`` (written by ``judge run``). The published judges come from the committed release file
(:mod:`judge.datasets.published_judges`), never typed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..data.qualities import LOWER_IS_BETTER
from ..datasets.benchmarks import DATASETS
from ..stats.system_level import SystemAgreement
from .figures import figure_text, num
from .pairwise import Markdown, labels_tables
from .system_level import SystemRow, rank_text

# --- collect ----------------------------------------------------------------------------------------


def committed_system_rows(rows: Sequence[SystemRow]) -> list[dict[str, Any]]:
    """What a committed summary keeps of ``judge results system``'s rows: per method, set, quality and human
    scores the judge's figure with its interval and p, where the judge and people rank the quality-control
    bot, and the human run-1 vs run-2 ceiling with its interval."""
    return [{"method": r.method, "abbrev": DATASETS[r.dataset].abbrev, "quality": r.quality,
             "negative": r.negative, "scores": r.scores, **_agreement(r.judge),
             "qc_judge": list(r.qc_judge) if r.qc_judge else None,
             "qc_human": list(r.qc_human) if r.qc_human else None,
             "ceiling": _agreement(r.ceiling) if r.ceiling else None} for r in rows]


def _agreement(a: SystemAgreement) -> dict[str, Any]:
    """A system-level correlation as JSON (no interval: ``low``/``high`` None)."""
    return {"value": _finite(a.value), "low": _finite(a.low), "high": _finite(a.high), "p": _finite(a.p_value),
            "n_systems": a.n_systems, "n_conversations": a.n_conversations, "n_boot": a.n_boot}


def _finite(x: float) -> float | None:
    return round(float(x), 6) if math.isfinite(x) else None


# --- render -----------------------------------------------------------------------------------------

_SYSTEM_ABOUT = (
    "Reliable-Eval (RE1, RE2: two runs of the same free-topic experiment; REI: the ice-breaker run): the judge's "
    "mean score per system against the people's mean rating per system, over the same conversations (each "
    "rated by the person who held it), Spearman over the ten systems; the deliberately degraded quality-control "
    "bot is left out of the correlation and ranked on its own (it should be last: 11 of 11). The 95% CI resamples "
    "conversations within each system. Each row says which human scores it uses: the raw 0-100 sliders or the "
    "authors' per-worker z-scores. Beside it, the ceiling: the people's own system-level agreement between the "
    "two free-topic runs (run 1 against run 2, all their conversations, the same quality and scores). For a "
    f"quality marked {LOWER_IS_BETTER} a good judge's figure is negative (its score and people's rating run "
    "opposite ways), while the ceiling, people against people, stays positive. p is Spearman's over the ten "
    "systems; † marks a judge's figure that is not significant (p ≥ .05): with n = 10 only a large correlation "
    "is, and its interval, which resamples conversations, can be wide where p is small.")

_SYSTEM_HEAD = ("| method | set | quality | human scores | systems | conv. | judge | 95% CI | p | QC bot: judge's rank "
                "| QC bot: people's rank | ceiling: people, run 1 vs run 2 [95% CI] |\n"
                "|---|---|---|---|---:|---:|---:|---|---:|---:|---:|---|")


def system_section(summaries: Sequence[Mapping[str, Any]], run_line: Callable[[Mapping[str, Any]], str]) -> str:
    """The page's "system level" section: one table per committed run with ``system_level`` rows
    (``run_line``: the page's provenance line of a summary)."""
    blocks = ["## Reliable-Eval: system level, beside the human replication ceiling\n", _SYSTEM_ABOUT + "\n"]
    for s in summaries:
        rows = s.get("system_level") or []
        if not rows:
            continue
        lines = [f"### system level, run `{s['name']}`\n",
                 f"{run_line(s)}\nRegenerate: `{s['run']['command']}`, then "
                 f"`judge results system results/{s['name']}`\n", _SYSTEM_HEAD]
        lines += [_system_row(r) for r in rows]
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def _system_row(r: Mapping[str, Any]) -> str:
    quality = f"{r['quality']} ({LOWER_IS_BETTER})" if r.get("negative") else r["quality"]
    interval = r.get("low") is not None
    ceiling = r.get("ceiling")
    return "| " + " | ".join([
        r["method"], r["abbrev"], quality, "raw 0-100" if r["scores"] == "raw" else "per-worker z",
        str(r["n_systems"]), str(r["n_conversations"]),
        figure_text(r["value"], r["p"] if interval else None),
        _interval(r), num(r["p"]) if interval else "–",
        rank_text(r.get("qc_judge")), rank_text(r.get("qc_human")),
        f"{num(ceiling['value'])} {_interval(ceiling)} (n = {ceiling['n_systems']})" if ceiling else "–",
    ]) + " |"


def _interval(x: Mapping[str, Any]) -> str:
    if x.get("low") is None:
        return f"too few conversations ({x.get('n_conversations')})"
    return f"[{num(x['low'], 2)}, {num(x['high'], 2)}]"


_LABELS_ABOUT = (
    "PandaLM (three annotators per pair, ties allowed: the label is their majority) and LLMBar's seven sets (one "
    "gold label). Accuracy: each order's verdict against the label, averaged over the two orders (the LLMBar "
    "paper's `correct_average`); a tie label is matched only by a tie verdict. Both orders: right in both. "
    "Positional agreement: the same verdict in both orders. Our rows carry a 95% CI resampling instructions (a "
    "pair's conversation is its instruction) and p against .5 in the line below the table; the LLMBar paper's "
    "judges (GPT-4, ChatGPT, PaLM2, LLaMA2, Falcon; per judge its plain strategy and its best) are read from the "
    "release's `evaluators/*/statistics.json` and scored the whole set, where ours scored its test half (the "
    "pairs column says how many). PandaLM's line gives the human-human agreement, the ceiling. Reference-free: "
    "the judge reads the instruction and the two replies.")


def labels_section(summaries: Sequence[Mapping[str, Any]], run_line: Callable[[Mapping[str, Any]], str]) -> str:
    """The page's "against the pairs' labels" section: per committed run with labelled pairwise entries, one
    table per set, our judges first and the published ones below, then each cell's labels line."""
    blocks = ["## Pairwise against the pairs' own labels, beside the LLMBar paper's judges\n", _LABELS_ABOUT + "\n"]
    for s in summaries:
        entries = [_entry(s, e) for e in s.get("pairwise") or () if (e.get("labels") or {}).get("accuracy")]
        if not entries:
            continue
        lines = [f"### labels, run `{s['name']}`\n", f"{run_line(s)}\nRegenerate: `{s['run']['command']}`",
                 *labels_tables(Markdown(), entries, level=4, compact=True)]
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def has_labels(summaries: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any committed run compared pairs that carry their own labels."""
    return any((e.get("labels") or {}).get("accuracy") for s in summaries for e in s.get("pairwise") or ())


def _entry(s: Mapping[str, Any], e: Mapping[str, Any]) -> dict[str, Any]:
    """A committed pairwise entry in the form the pairwise report reads (its cell's settings as ``spec``, the
    bootstrap's resamples)."""
    settings = ((s.get("pairwise_methods") or {}).get(e["name"]) or {}).get("settings") or {}
    return {**e, "spec": settings, "bootstrap": {"n_boot": e.get("n_boot")}}

