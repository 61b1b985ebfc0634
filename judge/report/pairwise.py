"""Reports of pairwise comparisons: ``judge compare``'s terminal summary and the pairwise section of a
results folder's Markdown, HTML and CSV (``pairwise.csv``).

Each renders the entries of ``Summary.pairwise``: one per ``[[compare]]`` cell and set (or the one
``judge compare`` ran), as :func:`judge.stats.pairwise.summarise_pairs` computed them plus the cell's name,
set, quality, method settings and the pointwise method beside it. Nothing is recomputed here.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from ..stats.floor import MIN_CONVERSATIONS, has_interval, too_few_text
from .table import fmt, md_table, p_text, too_few

#: Systems up to which win rates print as a matrix (above, as a list of pairs).
MATRIX_MAX = 8
#: Columns of ``pairwise.csv``: one row per figure.
CSV_FIELDS = ["cell", "dataset", "quality", "method", "figure", "a", "b", "n", "value", "ci_low", "ci_high", "p",
              "p_text", "significant"]


def few(x: Mapping[str, Any]) -> int | None:
    """The conversations behind a figure when it is below the floor (:func:`too_few`), else None."""
    return too_few(x, x.get("n_conversations"))


def _ci(x: Mapping[str, Any] | None, signed: bool = False) -> str:
    """`` [low, high]`` (``signed``: each end with its sign), the floor's words below it, empty without a CI."""
    if x and (k := few(x)) is not None:
        return f" [{too_few_text(x.get('strata') or k)}]"
    if not x or x.get("low") is None:
        return ""
    return f" [{_signed(x['low'])}, {_signed(x['high'])}]" if signed else f" [{fmt(x['low'], 2)}, {fmt(x['high'], 2)}]"


def _p(x: Mapping[str, Any], boot: Mapping[str, Any]) -> str:
    if few(x) is not None:
        return "–"
    return p_text(x.get("p"), boot.get("n_boot"), x.get("n_degenerate", 0))


def _mark(x: Mapping[str, Any]) -> str:
    """``†`` for a figure whose bootstrap p is 0.05 or more (or undefined, as below the floor)."""
    p = x.get("p")
    return "" if few(x) is None and p is not None and p < 0.05 else "†"


def _signed(x: float | None) -> str:
    return "–" if x is None else f"{x:+.2f}"


def headline(e: Mapping[str, Any]) -> str:
    """What was compared: pairs, systems, contexts, conversations, quality, failures."""
    where = f"{e['abbrev']} " if e.get("abbrev") else ""
    failed = f", {e['n_failed']} failed" if e.get("n_failed") else ""
    marks = (f", {e['n_estimated']} estimated from sampled answers" if e.get("n_estimated") else "") + (
        f", {e['n_incomplete']} read from a top-N list" if e.get("n_incomplete") else "")
    return (f"{where}{e['n_pairs']} pairs of {len(e['systems'])} systems in {e['n_contexts']} contexts "
            f"({e['n_conversations']} conversations), quality {e.get('quality') or '(none named)'}, "
            f"{_orders_text(e['orders'])}{failed}{marks}")


def _orders_text(orders: str) -> str:
    return {"both": "both orders", "one": "one order per pair"}.get(orders, "orders mixed")


def win_matrix(e: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The win rates as a matrix: header (systems) and one row per system, ``row over column``."""
    systems = list(e["systems"])
    cells = {(w["a"], w["b"]): w for w in e["win_rates"]}
    rows = []
    for x in systems:
        row = [x]
        for y in systems:
            w = cells.get((x, y))
            back = cells.get((y, x))
            if x == y or (w is None and back is None):
                row.append("–" if x == y else "")
            elif w is not None:
                row.append(f"{fmt(w['value'])}{_mark(w)}{_ci(w)}")
            else:
                assert back is not None
                flipped = {**back, "low": None if back.get("low") is None else 1 - back["high"],
                           "high": None if back.get("high") is None else 1 - back["low"]}
                row.append(f"{fmt(1 - back['value'])}{_mark(back)}{_ci(flipped)}")
        rows.append(row)
    return systems, rows


def win_list(e: Mapping[str, Any]) -> list[list[str]]:
    """The win rates as a list: a, b, n, wins/ties/losses, rate [CI], p."""
    boot = e["bootstrap"]
    return [[w["a"], w["b"], str(w["n"]), f"{w['wins']}/{w['ties']}/{w['losses']}",
             f"{fmt(w['value'])}{_mark(w)}{_ci(w)}", _p(w, boot)] for w in e["win_rates"]]


def ranking_rows(e: Mapping[str, Any]) -> list[list[str]]:
    return [[str(r["rank"]), r["system"], f"{_signed(r['value'])}{_ci(r, True)}", str(r["comparisons"])]
            for r in e["ranking"]]


def position_text(e: Mapping[str, Any]) -> str:
    pos = e.get("position")
    if not pos:
        return "–"
    boot = e["bootstrap"]
    parts = []
    c = pos.get("consistency")
    if c:
        parts.append(f"both orders agree on {fmt(c['value'])}{_ci(c)} of {c['n']} pairs")
    b = pos["bias"]
    parts.append(f"the reply shown first is preferred by {_signed(b['value'])}{_ci(b, True)} on average "
                 f"(p {_p(b, boot)}{', not significant' if _mark(b) else ''})")
    return "; ".join(parts)


def humans_text(e: Mapping[str, Any]) -> str | None:
    h = e.get("humans")
    if not h:
        return None
    boot = e["bootstrap"]
    j = h["judge"]
    text = (f"agreement with the human preference on {h['n_pairs']} pairs whose human means differ: "
            f"{e['method_name']} {fmt(j['value'])}{_mark(j)}{_ci(j)} (p {_p(j, boot)} against chance)")
    if "pointwise" in h:
        pt, same, d = h["pointwise"], h["judge_same_pairs"], h["difference"]
        text += (f"; {pt['method']} score differences {fmt(pt['value'])}{_mark(pt)}{_ci(pt)} on {pt['n']} of them "
                 f"(pairwise {fmt(same['value'])} there); difference {_signed(d['value'])}{_ci(d, True)}, "
                 f"p {_p(d, boot)}{' (not significant)' if _mark(d) else ''}")
    return text


def length_text(e: Mapping[str, Any]) -> str | None:
    ln = e.get("length")
    if not ln:
        return None
    j = ln["judge"]
    text = f"the longer reply wins {fmt(j['value'])}{_ci(j)} of {j['n']} pairs for the judge"
    if ln.get("humans"):
        h = ln["humans"]
        text += f", {fmt(h['value'])}{_ci(h)} of {h['n']} for the humans"
    return text


def system_text(e: Mapping[str, Any]) -> str | None:
    s = e.get("system_level")
    if not s:
        return None
    k = few(s)
    text = (f"Kendall tau of the Bradley-Terry ranking with the systems' mean human ratings {fmt(s['kendall'])} "
            f"({s['n_systems']} systems, {too_few_text(k) if k is not None else 'p ' + p_text(s['p'])})")
    if k is not None:
        return text
    if "pointwise" in s:
        text += f"; {s['pointwise']['method']} mean scores {fmt(s['pointwise']['kendall'])} (p {p_text(s['pointwise']['p'])})"
    return text


# -- judge compare's terminal summary ------------------------------------------------------------------
def text_lines(e: Mapping[str, Any]) -> list[str]:
    """What ``judge compare`` prints: the pairs, win rates, ranking, position, humans, length, systems."""
    boot = e["bootstrap"]
    unit = f"95% CI from {boot['n_boot']} bootstrap resamples of {boot['n_units']} conversations"
    if not has_interval(boot["n_units"]):
        unit = f"no CI and no p: {too_few_text(boot['n_units'])}, fewer than {MIN_CONVERSATIONS}"
    out = [f"compared  {headline(e)}", f"method    {e['method_name']}: {e.get('settings', '')}".rstrip(": ")]
    out.append(f"win rates row over column, a tie counting half; {unit}; † = not significant (p >= .05)")
    if len(e["systems"]) <= MATRIX_MAX:
        systems, rows = win_matrix(e)
        out += _aligned([["", *systems], *rows], indent="  ")
    else:
        out += _aligned([["a", "b", "n", "w/t/l", "a's win rate", "p"], *win_list(e)], indent="  ")
    out.append("ranking   Bradley-Terry strength (log-odds, centred) [95% CI], comparisons")
    out += _aligned(ranking_rows(e), indent="  ")
    out.append(f"position  {position_text(e)}")
    for label, line in (("humans", humans_text(e)), ("length", length_text(e)), ("systems", system_text(e)),
                        ("labels", labels_text(e))):
        if line:
            out.append(f"{label:<9} {line}")
    return out


def _aligned(rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


# -- the results folder's reports ----------------------------------------------------------------------
_ABOUT = ("Each pair is two systems' replies to one context; the judge reads p(label) for each reply "
          "(and a tie where the template allows one). Win rate: the share of the two systems' pairs the row "
          "system wins, a tie counting half; a pair whose two orders disagree counts as a tie. Bradley-Terry: "
          "log-odds strengths (centred) from every verdict. Position: how often the two orders give the same "
          "verdict, and how far the reply shown first is preferred on average. Humans: on the pairs whose two "
          "human means differ, how often the judge's preference (p > .5 for the higher-rated reply; .5 counts "
          "half) sides with the humans, beside a pointwise method's score difference on the same pairs. "
          "Brackets: 95% bootstrap CI resampling conversations; † = not significant (p ≥ .05).")


def mean_text(m: Mapping[str, Any]) -> str:
    """One ``pairwise_means`` entry: the mean over a table's sets of the agreement with the humans (and the
    pointwise method's, and their difference), with the joint bootstrap's CI and p."""
    boot = m["bootstrap"]
    j = m["judge"]
    text = (f"{m['name']}, mean over {m['n_sets']} sets ({', '.join(m['sets'])}): agreement with the humans "
            f"{fmt(j['value'])}{_mark(j)}{_ci(j)} (p {_p(j, boot)} against chance)")
    if "pointwise" in m:
        pt, d = m["pointwise"], m["difference"]
        text += (f"; pointwise {fmt(pt['value'])}{_mark(pt)}{_ci(pt)}; difference {_signed(d['value'])}{_ci(d, True)}, "
                 f"p {_p(d, boot)}")
    return text + (f"; joint bootstrap over the {j['n_conversations']} conversations of its sets, each resampled "
                   "within its set")


class Markdown:
    """The blocks of ``leaderboard.md``'s pairwise section, each after a blank line."""

    markdown = True

    def heading(self, level: int, text: str) -> list[str]:
        return ["", "#" * level + " " + text]

    def lines(self, texts: Sequence[str], bullets: bool = False) -> list[str]:
        return ["", *(("- " if bullets else "") + t for t in texts)] if texts else []

    def table(self, head: Sequence[str], rows: Sequence[Sequence[str]], align: str) -> list[str]:
        """``align``: per column ``l`` or ``r``."""
        return ["", *md_table(head, rows, align)]


class _Html(Markdown):
    """The same blocks in ``leaderboard.html``."""

    markdown = False

    def heading(self, level: int, text: str) -> list[str]:
        return [f"<h{level}>{escape(text, quote=False)}</h{level}>"]

    def lines(self, texts: Sequence[str], bullets: bool = False) -> list[str]:
        return [f"<p>{escape(t)}</p>" for t in texts]

    def table(self, head: Sequence[str], rows: Sequence[Sequence[str]], align: str) -> list[str]:
        return [_html_table(head, rows)]


def markdown(entries: Sequence[Mapping[str, Any]], means: Sequence[Mapping[str, Any]] = ()) -> list[str]:
    """The pairwise section of ``leaderboard.md`` (nothing without entries); ``means``: the summary's
    ``pairwise_means``."""
    return _section(Markdown(), entries, means)


def html(entries: Sequence[Mapping[str, Any]], means: Sequence[Mapping[str, Any]] = ()) -> list[str]:
    """The pairwise section of ``leaderboard.html`` (``means``: the summary's ``pairwise_means``)."""
    return _section(_Html(), entries, means)


def _section(w: Markdown, entries: Sequence[Mapping[str, Any]], means: Sequence[Mapping[str, Any]]) -> list[str]:
    if not entries:
        return []
    out = w.heading(2, "Pairwise comparisons") + w.lines([_ABOUT]) + w.table(
        ["cell", "set", "pairs", "conv.", "agreement with humans [CI]", "pointwise beside [CI]", "difference [CI], p",
         "orders agree", "first preferred by", "Kendall tau (systems)"], [summary_cells(e) for e in entries],
        "llrrrrrrrr")
    out += w.lines([f"{mean_text(m)}." for m in means], bullets=True)
    out += _labels(w, entries)
    for e in entries:
        out += w.heading(3, f"{e['name']}, {e.get('abbrev') or e['dataset']} {e.get('quality') or ''}".rstrip())
        out += w.lines([headline(e) + (f"; method `{e['method_name']}`: {e.get('settings', '')}." if w.markdown
                                       else "")])
        if len(e["systems"]) <= MATRIX_MAX:
            systems, rows = win_matrix(e)
            out += w.table(["win rate (row over column)", *systems], rows, "l" + "r" * len(systems))
        else:
            out += w.table(["a", "b", "n", "wins/ties/losses", "a's win rate", "p"], win_list(e), "llrrrr")
        out += w.table(["rank", "system", "Bradley-Terry strength [CI]", "comparisons"], ranking_rows(e), "rlrr")
        out += w.lines([f"Position: {position_text(e)}."] + [f"{label}: {line}." for label, line in (
            ("Humans", humans_text(e)), ("Length", length_text(e)), ("Systems", system_text(e))) if line])
    return out


def summary_cells(e: Mapping[str, Any]) -> list[str]:
    """One line of the pairwise overview: agreement beside the pointwise method, position, system tau."""
    boot = e["bootstrap"]
    h = e.get("humans") or {}
    j, pt, d = h.get("judge"), h.get("pointwise"), h.get("difference")
    pos = e.get("position") or {}
    c, b = pos.get("consistency"), pos.get("bias")
    s = e.get("system_level")
    return [e["name"], e.get("abbrev") or e["dataset"], str(e["n_pairs"]), str(e["n_conversations"]),
            f"{fmt(j['value'])}{_mark(j)}{_ci(j)} n={j['n']}" if j else "–",
            f"{fmt(pt['value'])}{_mark(pt)}{_ci(pt)} ({pt['method']})" if pt else "–",
            f"{_signed(d['value'])}{_ci(d, True)}, {_p(d, boot)}" if d else "–",
            f"{fmt(c['value'])}{_ci(c)}" if c else "–",
            f"{_signed(b['value'])}{_mark(b)}{_ci(b, True)}" if b else "–",
            f"{fmt(s['kendall'])} ({s['n_systems']}, {_tau_p(s)})" if s else "–"]


def _tau_p(s: Mapping[str, Any]) -> str:
    k = few(s)
    return too_few_text(k) if k is not None else f"p {p_text(s['p'])}"


def _labels(w: Markdown, entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """The leaderboards' "Against the pairs' labels" section (:func:`labels_tables`)."""
    labelled = [e for e in entries if (e.get("labels") or {}).get("accuracy")]
    if not labelled:
        return []
    return w.heading(2, "Against the pairs' labels") + w.lines([_LABELS_ABOUT]) + labels_tables(w, labelled)


def labels_tables(w: Markdown, entries: Sequence[Mapping[str, Any]], level: int = 3,
                  compact: bool = False) -> list[str]:
    """Per set that labels its pairs (a heading of ``level``): every entry's judge and the published judges
    in one table (``compact``: see :func:`anchor_rows`), then each entry's labels line."""
    from ..datasets.published_judges import published_judges

    out = []
    for dataset in dict.fromkeys(e["dataset"] for e in entries):
        mine = [e for e in entries if e["dataset"] == dataset]
        out += w.heading(level, f"{mine[0].get('abbrev') or dataset} ({dataset})")
        out += w.table(ANCHOR_HEAD, anchor_rows(mine, published_judges(str(dataset)), compact), "llrrrr")
        out += w.lines([f"{e['name']}: {labels_text(e)}." for e in mine], bullets=True)
    return out


def _html_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    cells = "".join(f"<th>{escape(x)}</th>" for x in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(x)}</td>" for x in r) + "</tr>" for r in rows)
    return f'<table class="plain"><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>'


def csv_text(entries: Sequence[Mapping[str, Any]]) -> str:
    """``pairwise.csv``: one row per figure of every entry (win rates, strengths, position, agreement, length,
    against the pairs' labels (``label_*``), system-level tau), for spreadsheets."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, CSV_FIELDS, lineterminator="\n")
    w.writeheader()
    for e in entries:
        base = {"cell": e["name"], "dataset": e["dataset"], "quality": e.get("quality") or "", "method": e["method_name"]}
        for row in _figures(e):
            w.writerow({**base, **row})
    return buf.getvalue()


def _figures(e: Mapping[str, Any]) -> list[dict[str, Any]]:
    boot = e["bootstrap"]

    def fig(name: str, x: Mapping[str, Any] | None, a: str = "", b: str = "", n: Any = None) -> list[dict[str, Any]]:
        if not x:
            return []
        k = few(x)  # below the floor: no interval, no p, not significant
        p = x.get("p")
        return [{"figure": name, "a": a, "b": b, "n": x.get("n", n), "value": x.get("value"),
                 "ci_low": x.get("low") if k is None else "", "ci_high": x.get("high") if k is None else "",
                 "p": p if k is None else "", "p_text": too_few_text(k) if k is not None else _p(x, boot) if "p" in x else "",
                 "significant": "" if "p" not in x else k is None and p is not None and p < 0.05}]

    out = []
    for wr in e["win_rates"]:
        out += fig("win_rate", wr, wr["a"], wr["b"])
    for r in e["ranking"]:
        out += fig("bradley_terry", r, r["system"], n=r["comparisons"])
    pos = e.get("position") or {}
    out += fig("position_consistency", pos.get("consistency")) + fig("position_bias", pos.get("bias"))
    h = e.get("humans") or {}
    out += fig("human_agreement", h.get("judge"), e["method_name"])
    if h.get("pointwise"):
        out += fig("human_agreement", h["pointwise"], h["pointwise"]["method"])
        out += fig("human_agreement_difference", h["difference"], e["method_name"], h["pointwise"]["method"])
    ln = e.get("length") or {}
    out += fig("longer_wins", ln.get("judge"), e["method_name"]) + fig("longer_wins", ln.get("humans"), "humans")
    lab = e.get("labels") or {}
    for key in ("accuracy", "decided", "both_orders", "positional_agreement", "verdict", "human_human", "judge_human"):
        out += fig(f"label_{key}", lab.get(key), e["method_name"] if key != "human_human" else "humans")
    s = e.get("system_level")
    if s:
        k = few(s)
        out += [{"figure": "system_kendall", "a": e["method_name"], "n": s["n_systems"], "value": s["kendall"],
                 "p": "" if k is not None else s["p"], "p_text": too_few_text(k) if k is not None else p_text(s["p"]),
                 "significant": k is None and s["p"] is not None and s["p"] < 0.05}]
    return out


# -- against the pairs' human labels (PandaLM, LLMBar) -------------------------------------------------
_LABELS_ABOUT = ("Sets that label their pairs (PandaLM: three annotators, ties allowed, the label is their "
                 "majority; LLMBar: one gold label). Accuracy: each order's verdict against the label, averaged "
                 "over the two orders (the LLMBar paper's); a tie label is matched only by a tie verdict. Both: right "
                 "in both orders. Agreement: the same verdict in both orders (positional agreement). Human-human: "
                 "per pair the share of annotator pairs that agree, the ceiling beside the judge-human agreement "
                 "(the share of annotators the judge's verdict equals). Published judges: the LLMBar paper's "
                 "(evaluators/<judge>/<strategy>/statistics.json), read from the release: over the whole set, where ours are "
                 "over the pairs the run compared (its half and contexts; the pairs column says how many).")


def judge_label(e: Mapping[str, Any]) -> str:
    """How the anchors table names a judge of ours: the cell or method, and the model and backend it ran on."""
    spec = e.get("spec") or {}
    where = ", ".join(str(x) for x in (spec.get("model"), spec.get("backend")) if x)
    return f"{e['name']} ({where})" if where else str(e["name"])


def labels_text(e: Mapping[str, Any]) -> str | None:
    """The labels line of ``judge compare`` and the leaderboards (None for a set without pair labels)."""
    lab = e.get("labels")
    if not lab or not lab.get("accuracy"):
        return None
    boot = e["bootstrap"]
    a = lab["accuracy"]
    what = ("the annotators' majority" if lab["kind"] == "annotators" else "the gold label")
    text = (f"accuracy against {what} {fmt(a['value'])}{_mark(a)}{_ci(a)} on {a['n']} pairs "
            f"(p {_p(a, boot)} against .5)")
    if lab.get("n_tie_labels"):
        d = lab.get("decided")
        text += (f"; {lab['n_tie_labels']} tie labels, matched only by a tie verdict"
                 + (f"; on the {d['n']} decided pairs {fmt(d['value'])}{_mark(d)}{_ci(d)}" if d else ""))
    if lab.get("n_without_majority"):
        text += f"; {lab['n_without_majority']} pairs without a majority left out"
    for key, name in (("both_orders", "right in both orders"), ("positional_agreement", "positional agreement"),
                      ("verdict", "the pair's verdict right")):
        if lab.get(key):
            text += f"; {name} {fmt(lab[key]['value'])}{_ci(lab[key])}"
    if lab.get("human_human"):
        hh, jh = lab["human_human"], lab["judge_human"]
        text += (f"; human-human agreement {fmt(hh['value'])}{_ci(hh)} ({lab['n_annotators']} annotators, the "
                 f"ceiling) beside judge-human {fmt(jh['value'])}{_ci(jh)}")
    return text


#: Columns of the anchors table.
ANCHOR_HEAD = ["judge", "strategy", "accuracy [CI]", "both orders", "positional agreement", "pairs"]


def anchor_rows(entries: Sequence[Mapping[str, Any]], published: Sequence[Mapping[str, Any]],
                compact: bool = False) -> list[list[str]]:
    """One table per set: our judges (``entries``, each with its CI) first, then the published ones
    (``published``: :func:`judge.datasets.published_judges.published_judges`). ``compact``: per published
    judge its plain strategy (``Vanilla``, else ``Vanilla_NoRules``) and its best one only."""
    rows = []
    for e in entries:
        lab = e.get("labels") or {}
        a, b, g = lab.get("accuracy"), lab.get("both_orders"), lab.get("positional_agreement")
        if a:
            spec = e.get("spec") or {}
            rows.append([judge_label(e), f"ours: prompt {spec.get('prompt')}, {_orders_text(str(spec.get('orders')))}",
                         f"{fmt(a['value'])}{_ci(a)}", fmt(b["value"]) if b else "–", fmt(g["value"]) if g else "–",
                         str(a["n"])])
    shown = _compact(published) if compact else list(published)
    rows += [[p["judge"], p["strategy"], fmt(p["accuracy"]), fmt(p["both_orders"]), fmt(p["positional_agreement"]),
              str(p.get("n") or "")] for p in shown]
    return rows


def _compact(published: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    for judge in dict.fromkeys(p["judge"] for p in published):
        mine = [p for p in published if p["judge"] == judge]
        plain = next((p for s in ("Vanilla", "Vanilla_NoRules") for p in mine if p["strategy"] == s), None)
        best = max(mine, key=lambda p: (p["accuracy"], p["strategy"]))
        out += [p for p in (plain, best) if p is not None]
        if plain is best:
            out.pop()
    return out


def anchors_text(e: Mapping[str, Any], published: Sequence[Mapping[str, Any]]) -> list[str]:
    """``judge compare``'s anchors: this judge beside the published judges' plain and best strategies."""
    if not published or not (e.get("labels") or {}).get("accuracy"):
        return []
    return (["judges   this one beside the LLMBar paper's (accuracy averaged over both orders; plain and best "
             "strategy per judge; docs/pairwise.md)"]
            + _aligned([ANCHOR_HEAD, *anchor_rows([e], published, compact=True)], indent="  "))
