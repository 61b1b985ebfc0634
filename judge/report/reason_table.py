"""The table of a measurement whose run a script completes: what a rationale first buys (docs/journal.md, Round 10).

``benchmarks/reason_measure.py`` reads a run of ``benchmarks/configs/reason_q15_dev.toml``, adds the candidate it
derives from the run's rows (answers sampled after each rationale) in the run's own form, and collects the whole
into a committed summary (``benchmarks/results/NAME.json``) with a ``measure`` block: per candidate the tokens and
seconds per item, the draws that were no answer, the sets where every score is one value; and how many
rationales open with their verdict. The results page, the script's printout and the journal's table are all
this module's rendering of that summary, so none of them is typed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..stats.floor import too_few_text
from .figures import ALPHA, SUMMARY_DIR, ci_text, figure_text, num, p_display


def measure_section(summaries: Sequence[Mapping[str, Any]]) -> str:
    """The results page's section: per summary with a ``measure`` block, where it comes from and its table."""
    blocks = ["## A rationale before the answer: what it buys (journal, Round 10)\n",
              "A measurement on the dev halves, not a round that chooses a method: the test half is not read. The "
              "third candidate is derived from the second's rows by the measurement's script, whose command "
              "collects the run and it into one summary.\n"]
    for s in summaries:
        if not s.get("measure"):
            continue
        run = s["run"]
        summary = (SUMMARY_DIR / f"{s['name']}.json").as_posix()
        blocks.append(f"### run `{s['name']}`\n\nSplit `{run['split']}`, up to {run['limit']} items per set (seed "
                      f"{run.get('limit_seed', 0)}), {run['n_boot']} bootstrap resamples (seed {run['seed']}). Summary "
                      f"`{summary}`, config `{run['config']}`, commit `{run['commit']}`, {run['date']}.\n"
                      f"Regenerate: `{run['command']}`, then `{s['measure']['command']}`.\n\n{measure_table(s)}\n")
    return "\n".join(blocks)


def measure_table(s: Mapping[str, Any]) -> str:
    """The measurement's table: per candidate its Spearman per set [95% CI], the average over the sets, the paired
    difference of that average against the baseline, tokens and seconds per item; then how many rationales
    open with their verdict, and how to read it."""
    m = s["measure"]
    sets = s["run"]["datasets"]
    base = m["baseline"]
    lines = ["| candidate | " + " | ".join(sets) + f" | avg of {len(sets)} sets [95% CI] | − `{base}` [95% CI], p "
             "| tokens/item (prompt + generated) | s/item |",
             "|---|" + "---:|" * (len(sets) + 4)]
    for name, c in m["candidates"].items():
        cells = {x["abbrev"]: x for x in s["cells"] if x["method"] == name}
        avg = next((a for a in s["averages"] if a["method"] == name), None)
        diff = next((x for x in s["comparisons"] if x["a"] == name and x["b"] == base and "sets" in x), None)
        label = f"`{name}`" + (f" ({c['failed']} failed)" if c.get("failed") else "") + (
            f" ({c['unparsed']} of {c['draws']} draws not Yes/No)" if c.get("draws") else "")
        # A set where the candidate scored every item alike has no correlation: the cell says why.
        shown = [f"constant (every item {c['constant'][a]:.1f})" if a in c.get("constant", {}) else _figure(cells.get(a))
                 for a in sets]
        lines.append("| " + " | ".join([
            label, *shown, _figure(avg), "" if name == base else _difference(diff),
            f"{c['prompt_tokens']:.0f} + {c['generated_tokens']:.0f}", f"{c['seconds']:.1f}"]) + " |")
    first = m["answer_first"]
    lines += ["", f"Rationales whose first word is the answer (Yes or No): {first['opened']} of {first['of']}; p(Yes) "
              f"after the rationale from {first['p_yes_low']:.4f} to {first['p_yes_high']:.4f}.", "",
              "Per set: Spearman with the mean human rating [95% CI, conversations resampled]; † not significant "
              f"(p ≥ {num(ALPHA, 2)}). The difference: the paired bootstrap of the average, conversations resampled. "
              "Seconds: model time per item from the cells' time files (the two read candidates of one set share a "
              f"pass); the sampled candidate reuses the rationales ({m['samples']} answers per item drawn, seed "
              f"{m['sample_seed']}, from the exact answer distribution after each), so its cost is theirs; an API "
              f"without log-probabilities would generate {m['samples']} completions per item."]
    return "\n".join(lines)


def _figure(x: Mapping[str, Any] | None) -> str:
    """A correlation and its CI as the page prints them (``†`` when not significant)."""
    if x is None or x.get("spearman") is None:
        return "–"
    # Below the floor on conversations: no interval, no p, so nothing is marked significant (ci_text says so).
    return f"{figure_text(x['spearman'], None if x.get('too_few') else x.get('p'))} {ci_text(x)}"


def _difference(c: Mapping[str, Any] | None) -> str:
    if c is None or c.get("diff") is None:
        return "–"
    sign = "+" if c["diff"] >= 0 else ""
    if c.get("too_few"):
        return f"{sign}{figure_text(c['diff'], None)} {too_few_text(c.get('n_units'))}"
    return (f"{sign}{figure_text(c['diff'], c['p'])} {ci_text({'ci_low': c['low'], 'ci_high': c['high']})}, p "
            f"{p_display(c['p'], c.get('n_boot'), c.get('n_degenerate') or 0)}")
