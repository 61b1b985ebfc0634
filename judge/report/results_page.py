"""The published results page, generated from committed run summaries instead of typed by hand.

``collect`` reads a ``judge run`` folder's ``summary.json`` and keeps the little a reader needs to trust
a figure: per cell n, Spearman, its conversation-bootstrap CI and p, the method's kind, the set,
quality, split and seed; per run the config and the command that regenerates it, the commit, the date,
the models (name and sha256) and the backend settings. Those summaries are committed under
``benchmarks/results/``; ``render_page`` turns all of them into ``docs/results.md`` and a test compares
the two byte for byte, so a figure on the page can only change by re-running and re-collecting.
"""

from __future__ import annotations

import json
import math
import shlex
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from ..core.errors import InputError
from ..data.kinds import BY_NAME, KINDS, recorded_kind
from ..data.qualities import LOWER_IS_BETTER
from ..datasets.benchmarks import dataset_info
from ..datasets.identity import index_digest
from ..records.summary import read_summary
from ..stats.floor import MIN_CONVERSATIONS, too_few_text
from .figures import ALPHA, SUMMARY_DIR, ci_text, figure_text, num, p_display
from .reason_table import measure_section
from .results_sections import has_labels, labels_section, system_section
from .table import together_text, too_few

#: Format of a committed run summary (bump when a field changes meaning).
SUMMARY_SCHEMA = "judge-results/1"
#: Where the page goes, relative to the repository root (the summaries: ``figures.SUMMARY_DIR``).
PAGE = Path("docs") / "results.md"
#: Which test items earlier splits put in a dev half that rounds read, and which items the last change of the
#: split moved (written from the data by benchmarks/halves_history.py, checked by a test).
HISTORY = Path("benchmarks") / "halves_history.json"
#: Runs the page cannot show yet, with the commands that will produce them (see docs/journal.md for
#: their last typed figures).
PENDING = (
    ("Qwen2.5-Coder-1.5B with the other prompts and ensembles of the CPU leaderboard (relevance question, "
     "criteria rating, 4-shot BM25, the 4-shot + relevance + rating ensembles, the reference-based ensembles): "
     "pending re-run on the leak-free split (about 0.9M more prompt tokens: `--check` prints the time on "
     "your machine); its yes/no, rating, criteria and their ensembles are above, in run `q15-test`; last typed "
     "figures in [journal.md](journal.md)",
     "judge run benchmarks/configs/cpu_leaderboard.toml --data-dir ../shared/data --methods "
     "q15-yesno,q15-rating-exp,q15-criteria,q15-ensemble,q15-ensemble-cv,q15-ensemble-lodo,q15-relevant,"
     "q15-rating-criteria,q15-bm25c-4,q15-ensemble-mix,q15-ensemble-mix-lodo,q15-ensemble-mix-cv,q15-ensemble-ref,"
     "q15-ensemble-ref-cv -o results/q15-test"),
    ("Qwen2.5-Coder-0.5B and SmolLM2 with the other prompts and ensembles of the CPU leaderboard: "
     "pending re-run; last typed figures in [journal.md](journal.md)",
     "judge run benchmarks/configs/cpu_leaderboard.toml --data-dir ../shared/data -o results/cpu-leaderboard"),
)


def method_kind(info: Mapping[str, Any]) -> str:
    """The page's kind of one method, from ``summary.json``'s ``methods`` entry (:func:`recorded_kind`)."""
    return recorded_kind(info, "reference-free")


# --- collect ----------------------------------------------------------------------------------------


class RunConfig(Protocol):
    """What the regenerating command is rebuilt from: an experiment config as ``judge run`` reads it
    (:class:`judge.harness.config.Experiment`; the caller, above the reports, loads it)."""

    @property
    def data_dir(self) -> str: ...
    @property
    def limit(self) -> int | None: ...
    @property
    def split(self) -> str | None: ...
    @property
    def methods(self) -> Sequence[Any]: ...
    @property
    def datasets(self) -> Sequence[Any]: ...


def collect(run_dir: str | Path, name: str, *, load_config: Callable[[str], RunConfig], root: str | Path = ".",
            command: str | None = None, allow_mock: bool = False,
            summary: Mapping[str, Any] | None = None,
            system_level: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The small committed summary of the ``judge run`` folder ``run_dir``. ``command`` overrides the
    regenerating command that is otherwise rebuilt from the config (refused when the run's methods
    differ from the config's, as after --model or --backend, since that command would not rebuild them).
    A run with a method on the mock backend is refused unless ``allow_mock`` (tests): its figures mean
    nothing and must never be published. ``load_config`` reads the run's config (``load_experiment``).
    ``summary``: the run's ``summary.json`` with a candidate a script derives from its rows added in the same
    form (benchmarks/reason_measure.py), instead of the file as the run wrote it. ``system_level``: Reliable-Eval's
    system-level rows of the run (:func:`.results_sections.committed_system_rows`), kept as they are."""
    summary = dict(summary) if summary is not None else read_summary(Path(run_dir)).to_dict()
    compared = {e["name"]: e["spec"] for e in summary.get("pairwise", [])}
    mocked = [m for m, info in {**summary["methods"], **compared}.items() if uses_mock(info)]
    if mocked and not allow_mock:
        raise InputError(f"methods {', '.join(mocked)} ran on the mock backend: their figures mean nothing and "
                         "are never published", field="backend")
    exp = summary["experiment"]
    methods = {m: _method_entry(info) for m, info in summary["methods"].items()}
    kinds = {m: e["kind"] for m, e in methods.items()}
    split = exp.get("split") or "all"
    abbrev = {d["name"]: d.get("abbrev", d["name"]) for d in summary["datasets"]}
    cells = [_cell_entry(r, kinds[r["method"]], split, abbrev) for r in summary["results"]]
    averages = [_average_entry(m, avg, kinds[m], split) for m, avg in summary["averages"].items()
                if m in kinds and avg.get("ci")]
    return {
        "schema": SUMMARY_SCHEMA,
        "name": name,
        "run": {
            "config": exp.get("config"),
            "command": command or regenerate_command(summary, name, load_config),
            "commit": _commit(Path(root)),
            "date": _run_date(Path(run_dir)),
            "description": exp.get("description"),
            "split": split, "split_seed": exp.get("split_seed"),
            "limit": exp.get("limit"), "limit_seed": exp.get("limit_seed"),
            "n_boot": exp.get("bootstrap"), "seed": exp.get("seed"),
            "datasets": [abbrev[d["name"]] for d in summary["datasets"]],
            # The halves scored: the registered sets' conversation index of the judge that collects (collect a
            # run with the judge that ran it); the page marks a summary computed on other halves.
            "halves": index_digest(),
        },
        "methods": methods,
        "cells": cells,
        "averages": averages,
        "skipped": [{k: s[k] for k in ("method", "dataset", "quality", "reason")} for s in summary.get("skipped", [])],
        "comparisons": [_comparison_entry(c, kinds, abbrev) for c in summary.get("average_comparisons", [])]
                       + [_comparison_entry(c, kinds, abbrev) for c in summary.get("comparisons", [])],
        **({"pairwise_methods": {name: _method_entry({**spec, **_kind(summary, name)}) for name, spec in compared.items()},
            "pairwise": [_pairwise_entry(e) for e in summary["pairwise"]]} if compared else {}),
        **({"pairwise_means": summary["pairwise_means"]} if summary.get("pairwise_means") else {}),
        **({"system_level": [dict(r) for r in system_level]} if system_level else {}),
    }


def unlisted_cells(run_dir: str | Path) -> list[str]:
    """The method/set folders of a results folder that its summary does not list: cells an earlier run into
    the folder wrote (with ``--datasets`` or ``--methods``) and the last run, which wrote the summary, did not
    take. Collecting leaves them out; running the config once whole summarises them (it scores nothing)."""
    summary = read_summary(Path(run_dir)).to_dict()
    listed = {(r["method"], r["dataset"]) for r in summary["results"]}
    listed |= {(e["name"], e["dataset"]) for e in summary.get("pairwise", [])}
    found = {(m.name, d.name) for kind in ("items", "compare") if (Path(run_dir) / kind).is_dir()
             for m in (Path(run_dir) / kind).iterdir() if m.is_dir() for d in m.iterdir() if d.is_dir()}
    return sorted(f"{m}/{d}" for m, d in found - listed)


def _kind(summary: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A pairwise cell's kind as its summary entries recorded it."""
    return next(dict(e["kind"]) for e in summary["pairwise"] if e["name"] == name)


#: What a committed pairwise entry keeps of ``summary["pairwise"]`` (not the win-rate matrix).
_PAIRWISE_KEYS = ("name", "dataset", "abbrev", "quality", "n_pairs", "n_failed", "n_estimated", "n_incomplete",
                  "n_contexts", "n_conversations", "orders", "against", "humans", "position", "length", "system_level",
                  "ranking", "labels")


def _pairwise_entry(e: Mapping[str, Any]) -> dict[str, Any]:
    """One ``[[compare]]`` cell on one set: its counts, agreement with the humans beside the pointwise method,
    position and length bias, the ranking and its system-level tau, the figures against the pairs' own labels
    (sets that label their pairs; absent elsewhere), and the bootstrap they come from."""
    kept = {k: e.get(k) for k in _PAIRWISE_KEYS if k != "labels" or e.get("labels")}
    return {**kept, "n_systems": len(e["systems"]), "n_boot": e["bootstrap"]["n_boot"]}


#: What a committed paired comparison keeps (``judge run``'s ``compare``; per set, or ``sets`` for the average).
_COMPARISON_KEYS = ("a", "b", "n", "r_a", "r_b", "diff", "low", "high", "p", "n_boot", "n_degenerate", "unit",
                    "n_units")


def _comparison_entry(c: Mapping[str, Any], kinds: Mapping[str, str], abbrev: Mapping[str, str]) -> dict[str, Any]:
    """A paired comparison of the run, with the kinds of its two methods (the page shows only same-kind
    pairs) and where it was taken: one set (``abbrev``) or the average over ``sets`` sets."""
    where = {"abbrev": abbrev.get(c["dataset"], c["dataset"])} if "dataset" in c else {"sets": c.get("n_sets")}
    together = {"resampled_together": c["resampled_together"]} if c.get("resampled_together") else {}
    few = {"too_few": True} if c.get("too_few") else {}
    return {**{k: c.get(k) for k in _COMPARISON_KEYS}, **where, **together, **few,
            "kind_a": kinds.get(c["a"]), "kind_b": kinds.get(c["b"])}


def uses_mock(info: Mapping[str, Any]) -> bool:
    """Whether a method (or any ensemble member) ran on the mock backend."""
    if info.get("backend") == "mock":
        return True
    return any(uses_mock(m) for m in (info.get("members") or {}).values())


def write_summary(collected: Mapping[str, Any], directory: str | Path = SUMMARY_DIR) -> Path:
    """Write one collected summary as ``<directory>/<name>.json`` (stable key order, one trailing newline)."""
    from ..core.io import atomic_write_text

    path = Path(directory) / f"{collected['name']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(collected, indent=1, ensure_ascii=False) + "\n")
    return path


def _method_entry(info: Mapping[str, Any]) -> dict[str, Any]:
    """A method's kind, the models it loads (name and sha256) and its settings as the run recorded them."""
    settings = {k: v for k, v in info.items() if k not in ("paper", "kind", "uses_future", "reads", "listwise")}
    return {"kind": method_kind(info), "reads": list(info.get("reads", [])), "models": _models(info),
            "settings": settings}


def _models(info: Mapping[str, Any]) -> dict[str, str | None]:
    """Every model one method (or any ensemble member) loads, mapped to its sha256 (None when unknown)."""
    out: dict[str, str | None] = {}
    if isinstance(info.get("members"), Mapping):  # an ensemble: its members' models
        for member in info.get("members", {}).values():
            out.update(_models(member))
        return out
    if "backend" in info and info.get("backend") != "mock":  # a method running a model; mock loads none
        from ..models.packaged import DEFAULT_MODEL

        name = info.get("model") or DEFAULT_MODEL
        out[name] = _sha256(name)
    elif isinstance(info.get("options"), Mapping) and info["options"].get("model"):
        name = str(info["options"]["model"])
        out[name] = _sha256(name)
    return out


def _sha256(model: str) -> str | None:
    """The pinned sha256 of a packaged model (verified before it loads), or a local file's own hash."""
    from ..models.packaged import PACKAGED, file_sha256

    packaged = PACKAGED.get(model) or PACKAGED.get(f"{model}-135m-instruct")
    if packaged is not None:
        return packaged.sha256
    path = Path(model).expanduser()
    return file_sha256(path) if path.is_file() else None


def _cell_entry(r: Mapping[str, Any], kind: str, split: str, abbrev: Mapping[str, str]) -> dict[str, Any]:
    ci = r.get("ci") or {}
    return {"method": r["method"], "dataset": r["dataset"], "abbrev": abbrev.get(r["dataset"], r["dataset"]),
            "quality": r["quality"], "kind": kind, "split": split, "seed": r["seeds"][0], "n": r["n"],
            "n_conversations": r.get("n_conversations"), "spearman": r["spearman"],
            "ci_low": ci.get("low"), "ci_high": ci.get("high"), "p": ci.get("p"),
            "n_boot": ci.get("n_boot"), "n_degenerate": ci.get("n_degenerate", 0),
            "n_failed": r.get("n_failed", 0), **({"too_few": True} if ci.get("too_few") else {})}


def _average_entry(method: str, avg: Mapping[str, Any], kind: str, split: str) -> dict[str, Any]:
    ci = avg["ci"]
    covered, total = avg.get("overall_n", [None, None])
    return {"method": method, "kind": kind, "split": split, "spearman": avg.get("overall"),
            "ci_low": ci.get("low"), "ci_high": ci.get("high"), "p": ci.get("p"), "n_boot": ci.get("n_boot"),
            "n_degenerate": ci.get("n_degenerate", 0), "sets": covered, "of_sets": total,
            "per_set": avg.get("per_set", {}), "n_conversations": ci.get("n_units"),
            **({"too_few": True} if ci.get("too_few") else {}),
            **({"resampled_together": avg["resampled_together"]} if avg.get("resampled_together") else {})}


def regenerate_command(summary: Mapping[str, Any], name: str, load_config: Callable[[str], RunConfig]) -> str:
    """``judge run CONFIG ...`` that rebuilds this run: the config's own methods, sets, limit and split
    (the config read by ``load_config``), narrowed to what the run held."""
    exp = summary["experiment"]
    config = exp.get("config")
    if not config or not Path(config).is_file():
        raise InputError(f"the run's config {config!r} is not a file here; pass --command", field="command")
    base = load_config(config)
    own = {m.name: m.describe() for m in base.methods}
    ran = list(summary["methods"])
    for m in ran:
        wanted = {k: v for k, v in summary["methods"][m].items() if k in own.get(m, {})}
        if m not in own or wanted != own[m]:
            raise InputError(f"method '{m}' differs from {config}'s (--model or --backend?); its command "
                             "cannot be rebuilt: pass --command", field="command")
    args = ["judge", "run", str(config), "--data-dir", str(exp.get("data_dir") or base.data_dir)]
    if ran != [m.name for m in base.methods]:
        args += ["--methods", ",".join(ran)]
    names = [d["name"] for d in summary["datasets"]]
    if names != [d.name for d in base.datasets]:
        args += ["--datasets", ",".join(names)]
    if exp.get("limit") != base.limit:
        args += ["--limit", str(exp.get("limit"))]
    if exp.get("split") != base.split:
        args += ["--split", str(exp.get("split"))]
    return shlex.join([*args, "-o", f"results/{name}"])


def _commit(root: Path) -> str:
    """HEAD's commit, with ``+changes`` when the scoring code or prompts differ from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    try:
        head = git("rev-parse", "HEAD")
        changed = git("status", "--porcelain", "--", "judge", "prompts")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if changed else "")


def _run_date(run_dir: Path) -> str:
    """The day (UTC) the run last wrote its summary."""
    stamp = (run_dir / "summary.json").stat().st_mtime
    return datetime.fromtimestamp(stamp, UTC).date().isoformat()


# --- render -----------------------------------------------------------------------------------------


def load_summaries(directory: str | Path = SUMMARY_DIR) -> list[dict[str, Any]]:
    """Every committed summary, by name."""
    out = []
    for path in sorted(Path(directory).glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("schema") != SUMMARY_SCHEMA:
            raise InputError(f"not a results summary (schema {data.get('schema')!r})", file=str(path))
        out.append(data)
    return out


def load_history(root: str | Path = ".") -> dict[str, Any] | None:
    """``benchmarks/halves_history.json`` under ``root`` (None where there is none: a summary folder of
    one's own)."""
    path = Path(root) / HISTORY
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def render_page(summaries: Sequence[Mapping[str, Any]], history: Mapping[str, Any] | None = None,
                coverage: str | None = None) -> str:
    """The whole of docs/results.md: the reading notes, one section per kind in ``KINDS`` (one
    table per run inside it, with its command and provenance, and what of it stands on earlier halves),
    the test items earlier development rounds read (``history``), the coverage of estimates from labels
    (``coverage``, a section :mod:`.coverage_table` renders), then the pending runs."""
    parts = [_HEADER.replace("{floor}", str(MIN_CONVERSATIONS))]
    for kind in _kinds(summaries):
        parts.append(_kind_section(kind, summaries, history))
    if any(_rated_pairs(s) for s in summaries):
        parts.append(_pairwise_section(summaries))
    if has_labels(summaries):
        parts.append(labels_section(summaries, _run_line))
    if any(s.get("system_level") for s in summaries):
        parts.append(system_section(summaries, _run_line))
    if any(s.get("measure") for s in summaries):  # a measurement with a candidate its script derives
        parts.append(measure_section(summaries))
    if history is not None:
        parts.append(_read_in_dev_section(history))
    if coverage is not None:
        parts.append(coverage)
    parts.append(_pending_section())
    return "\n".join(parts)


def earlier_halves(s: Mapping[str, Any], history: Mapping[str, Any] | None) -> bool:
    """Whether a committed summary was computed on other halves than today's (it records none, or another)."""
    return history is not None and s["run"].get("split") in ("dev", "test") and \
        s["run"].get("halves") != history["current"]


def _kinds(summaries: Sequence[Mapping[str, Any]]) -> list[str]:
    """``KINDS``, then any kind a summary names that it does not know (never dropped silently)."""
    seen = {c["kind"] for s in summaries for c in s["cells"]}
    return [*KINDS, *sorted(seen - set(KINDS))]


_HEADER = """\
# Results

Current figures of `judge` on the eight DSTC10 Track 5 sets (TU Topical-USR, DZ DailyDialog-Zhao,
PU Persona-USR, DGU DailyDialog-Gupta, DGR DailyDialog-GRADE, FT FED-Turn, EG Empathetic-GRADE,
FD FED-Dial), each set's overall rating, and on the sets rated beyond them: Reliable-Eval's live chats
rated by the people who held them (RE1, RE2 free-topic runs, REI ice-breaker; seven 0-100 sliders and
their derived overall, dialog level and system level), PredictiveEngagement's turn-level engagement
(PED DailyDialog queries, PEC ConvAI), and the response pairs of PandaLM (PL) and LLMBar (LBN, LBGI,
LBGO, LBM, LBNB, LBFE, LBL2) judged against their own labels. This page is generated: `judge results render` writes it
from the run summaries committed in `benchmarks/results/`, and a test fails when the two disagree.
Do not edit it by hand; re-run, then `judge results collect RUN_DIR --name NAME` and
`judge results render`. Earlier rounds, with every candidate's dev figure, are in
[journal.md](journal.md) (typed at the time, not regenerated).

How to read the tables:

- Spearman correlation with the human ratings, per set and averaged over the sets a method scores
  (the DSTC10 average: within a set, then across sets).
- 95% CI and p from a bootstrap that resamples conversations (all the items of one conversation go
  together). In an average's CI, a conversation that several sets rate (FT and FD share every test
  conversation, DZ, DGU and DGR a few) is drawn once for all of them, since their figures are not
  independent; a run whose averages were resampled otherwise says so below its table. A p at the
  bootstrap's floor prints as `< 1/n_boot`, e.g. `< .001`.
- † marks a figure that is not significant (p ≥ .05).
- No CI and no p from fewer than {floor} conversations: a bootstrap over k conversations has at most
  C(2k−1, k) distinct resamples (3 for k = 2, 10 for k = 3), too few to read an interval from. Such a
  figure shows `too few conversations (k)` and carries † (nothing is claimed significant); see
  [harness.md](harness.md#statistics-judgestatscorrelationpy-judgestatsagreementpy).
- `split = test`: the test half of each set's conversations (docs/harness.md). Methods are chosen on
  the dev half, but an earlier split put some of today's test items in a dev half that development
  rounds read: they are listed under "Test items read in earlier development rounds" at the end of
  this page. n is the items scored, conv. the conversations they come from.
- Kinds never share a table, and no figure is compared with one of another kind.
- A conversation lives in one half across every set that rates it: FED-Turn's turns follow the
  FED-Dial dialog they come from, and the few DailyDialog dialogues that DZ, DGU and DGR share follow
  one name ([harness.md](harness.md#development-and-test-halves)). Weights learned on other sets
  (`lodo`), and heads ([heads.md](heads.md)), leave out every set that shares a conversation with the
  scored one.
"""


def _kind_section(kind: str, summaries: Sequence[Mapping[str, Any]], history: Mapping[str, Any] | None) -> str:
    title = BY_NAME[kind].page_title if kind in BY_NAME else kind
    blocks = [f"## {title}\n"]
    for s in summaries:
        cells = [c for c in s["cells"] if c["kind"] == kind]
        if cells:
            blocks.append(_run_table(s, kind, cells, history))
    if len(blocks) == 1:
        blocks.append("No committed run has a method of this kind yet.\n")
    return "\n".join(blocks)


_TABLE_HEAD = "| method | set | n | conv. | Spearman | 95% CI | p |\n|---|---|---:|---:|---:|---|---:|"
#: A run that rates more than each set's overall quality (Reliable-Eval's sliders) names the quality per row.
_QUALITY_HEAD = ("| method | set | quality | n | conv. | Spearman | 95% CI | p |\n"
                 "|---|---|---|---:|---:|---:|---|---:|")


def _run_table(s: Mapping[str, Any], kind: str, cells: Sequence[Mapping[str, Any]],
               history: Mapping[str, Any] | None = None) -> str:
    """One run's cells of one kind: per method its average first (when it covers two sets or more),
    then its sets in the run's order; then how its averages were resampled, and what of it stands on
    earlier halves."""
    run = s["run"]
    order = {a: i for i, a in enumerate(run["datasets"])}
    averages = {a["method"]: a for a in s["averages"] if a["kind"] == kind}
    named = any(c["quality"].lower() != dataset_info(c["dataset"]).overall.lower() for c in cells)
    lines = [f"### {kind}, run `{s['name']}`\n",
             f"{_run_line(s)}\nRegenerate: `{run['command']}`\n", _QUALITY_HEAD if named else _TABLE_HEAD]
    for method in dict.fromkeys(c["method"] for c in cells):
        avg = averages.get(method)
        if avg is not None and (avg.get("sets") or 0) >= 2:
            lines.append(_average_row(avg, named))
        for c in sorted((c for c in cells if c["method"] == method), key=lambda c: order.get(c["abbrev"], 99)):
            lines.append(_cell_row(c, named))
    pairs = [c for c in s.get("comparisons", []) if c["kind_a"] == c["kind_b"] == kind]
    if pairs:
        lines += ["", "Paired on the same items (a − b; the bootstrap resamples conversations):", "",
                  _PAIR_HEAD, *(_pair_row(c) for c in pairs)]
    notes = [_resampling_note(s, kind, history), _earlier_halves_note(s, history, {c["abbrev"] for c in cells}),
             _negative_note(cells)]
    lines += [f"\n{n}" for n in notes if n]
    return "\n".join(lines) + "\n"


def _resampling_note(s: Mapping[str, Any], kind: str, history: Mapping[str, Any] | None) -> str:
    """How the averages' CIs of one run resampled sets that rate the same conversations."""
    averages = [a for a in s["averages"] if a["kind"] == kind and (a.get("sets") or 0) >= 2]
    if not averages:
        return ""
    named = together_text(averages, _abbrev)
    if named:
        return (f"The averages' CIs (and paired averages) resample together the conversations these sets share, "
                f"one draw per conversation: {named}.")
    if earlier_halves(s, history):
        return ("The averages' CIs (and paired averages) of this run resampled every set's conversations on its own "
                "(the rule before shared conversations were resampled together), though FT and FD share every test "
                "conversation and DZ, DGU and DGR a few: they are narrower than today's rule gives.")
    return ""


def _earlier_halves_note(s: Mapping[str, Any], history: Mapping[str, Any] | None, sets: set[str]) -> str:
    """What of a run's table stands on halves other than today's: the items the last split change moved, in
    the table's sets (``sets``: abbreviations); nothing when none of them moved."""
    if history is None or not earlier_halves(s, history):
        return ""
    by_set: dict[str, dict[str, list[str]]] = {}
    for m in history["moved"]:
        if _abbrev(m["set"]) in sets:
            by_set.setdefault(_abbrev(m["set"]), {}).setdefault(m["after"], []).append(m["item"].rsplit("_", 1)[-1])
    if not by_set:
        return ""
    moved = "; ".join(f"{abbrev}: " + ", ".join(f"{', '.join(ids)} now in {half}" for half, ids in halves.items())
                      for abbrev, halves in by_set.items())
    return (f"**Earlier halves.** This run scored the halves before {history['moved_by'].split(' (')[0]} (its summary "
            f"does not record today's halves, `{history['current']}`): "
            f"its test items differ from today's in {moved} (ids without the set's prefix); every other set "
            "holds today's test items. The run's command above re-runs it on today's halves.")


def _abbrev(name: str) -> str:
    return dataset_info(name).abbrev


_PAIR_HEAD = "| a | b | set | n | a | b | a − b | 95% CI | p |\n|---|---|---|---:|---:|---:|---:|---|---:|"


def _pair_row(c: Mapping[str, Any]) -> str:
    where = c["abbrev"] if "abbrev" in c else f"avg of {c['sets']} sets"
    # An average's comparison is below the floor only when its bootstrap said so (its strata, not its total).
    k = c.get("n_units") if "abbrev" in c or c.get("too_few") else None
    few = too_few(c, k) is not None
    return "| " + " | ".join([
        c["a"], c["b"], where, str(c["n"]), num(c["r_a"]), num(c["r_b"]), figure_text(c["diff"], None if few else c["p"]),
        *_interval_cells(c, k, ci_text({"ci_low": c["low"], "ci_high": c["high"]}),
                         p_display(c["p"], c.get("n_boot"), c.get("n_degenerate") or 0)),
    ]) + " |"


def _run_line(s: Mapping[str, Any]) -> str:
    """Where a run's figures come from: split, sample, resamples, summary file, commit, date, models."""
    run = s["run"]
    limit = f"up to {run['limit']} items per set" if run.get("limit") else "every item"
    models = _all_models([*s["methods"].values(), *s.get("pairwise_methods", {}).values()])
    loaded = ", ".join(f"{m} (sha256 {(h or 'unknown')[:12]}…)" for m, h in models.items()) or "none"
    summary = (SUMMARY_DIR / f"{s['name']}.json").as_posix()
    return (f"Split `{run['split']}`, {limit} (seed {run.get('limit_seed', 0)}), {run['n_boot']} bootstrap "
            f"resamples (seed {run['seed']}). Summary `{summary}`, config `{run['config']}`, commit "
            f"`{run['commit']}`, {run['date']}; models: {loaded}.")


def _interval_cells(x: Mapping[str, Any], k: int | None, ci: str, p: str) -> list[str]:
    """The figure's CI and p columns, or ``too few conversations (k)`` and ``–`` below the floor."""
    return [too_few_text(x.get("strata") or k), "–"] if too_few(x, k) is not None else [ci, p]


def _negative(c: Mapping[str, Any]) -> bool:
    """Whether a cell's quality is one where lower ratings are better (Reliable-Eval's robotic, repetitive)."""
    return dataset_info(c["dataset"]).quality(c["quality"]).negative


def _negative_note(cells: Sequence[Mapping[str, Any]]) -> str:
    """How to read a table with a lower-is-better quality: its figure as measured, its average sign-flipped."""
    if not any(_negative(c) for c in cells):
        return ""
    return (f"A quality marked ({LOWER_IS_BETTER}) is rated the other way round (a high `robotic` is bad): a good "
            "judge's figure there is negative. It is printed as measured; a set's average (over its qualities, then "
            "over sets) takes it sign-flipped.")


def _cell_row(c: Mapping[str, Any], named: bool = False) -> str:
    k = c.get("n_conversations") if c.get("n_conversations") is not None else c.get("n")
    few = too_few(c, k) is not None
    quality = [f"{c['quality']} ({LOWER_IS_BETTER})" if _negative(c) else c["quality"]] if named else []
    return "| " + " | ".join([
        c["method"], c["abbrev"], *quality, str(c["n"]), _int(c.get("n_conversations")),
        figure_text(c["spearman"], None if few else c["p"]),
        *_interval_cells(c, k, ci_text(c), p_display(c["p"], c.get("n_boot"), c.get("n_degenerate", 0))),
    ]) + " |"


def _average_row(a: Mapping[str, Any], named: bool = False) -> str:
    where = f"avg of {a['sets']} sets" if a.get("sets") == a.get("of_sets") else f"avg of {a['sets']}/{a['of_sets']} sets"
    few = bool(a.get("too_few"))
    # Nothing is bolded: a bold row reads as "best", and the page ranks nothing.
    return "| " + " | ".join([
        a["method"], where, *([""] if named else []), "", "", figure_text(a["spearman"], None if few else a["p"]),
        *([too_few_text(a.get("n_conversations")), "–"] if few else
          [ci_text(a), p_display(a["p"], a.get("n_boot"), a.get("n_degenerate", 0))]),
    ]) + " |"


def _int(x: int | None) -> str:
    return "–" if x is None else str(x)


def _read_in_dev_section(history: Mapping[str, Any]) -> str:
    """Today's test items that an earlier split put in a dev half development rounds read (``history``)."""
    lines = ["## Test items read in earlier development rounds\n",
             "The split has changed twice (docs/harness.md, \"Development and test halves\"). Before the split by "
             "conversation each set was split on its own and rounds 1 to 7 read samples of those dev halves (round "
             "1's 25 items per set chose the prompt variant and the ensemble members, rounds 2 to 7's 50 items per set "
             "the Qwen-1.5B candidates); round 8 read every item of the dev halves that followed. Some of today's test "
             "items were in those dev halves, so figures on this page include items a development round once read. Per set: how "
             "many, how many of them each round's sample held, and which (ids without the set's prefix). Written by "
             "`benchmarks/halves_history.py` from the data; a test keeps it current.\n"]
    for name, entry in history["read_in_dev"].items():
        once = entry["once_dev"]
        if not once:
            lines.append(f"- {_abbrev(name)}: none of its {entry['test']} test items.")
            continue
        read = "; ".join(f"{len(ids)} {what}" for what, ids in entry["samples"].items())
        lines.append(f"- {_abbrev(name)}: {len(once)} of its {entry['test']} test items ({read}): "
                     + ", ".join(i.rsplit("_", 1)[-1] for i in once) + ".")
    return "\n".join(lines) + "\n"


_PAIRWISE_HEAD = ("| cell | set | pairs | conv. | pairwise agrees with humans | 95% CI | p | pointwise beside (same pairs) "
                  "| 95% CI | difference | 95% CI | p | orders agree | first preferred by | Kendall tau (systems) |\n"
                  "|---|---|---:|---:|---:|---|---:|---:|---|---:|---|---:|---:|---:|---|")


def _pairwise_section(summaries: Sequence[Mapping[str, Any]]) -> str:
    """Pairwise judging (docs/pairwise.md): per run, per cell and set, how often the judge's preference sides
    with the higher-rated reply (pairs whose human means differ) beside the pointwise method's score
    difference on the same pairs, the paired difference, and the position and system-level figures."""
    blocks = ["## Pairwise: which of two replies is better (docs/pairwise.md)\n",
              "Agreement: on the pairs whose two human means differ, the share where the judge's preference "
              "(p > .5 for the higher-rated reply, .5 counting half) sides with the humans; chance is .5, and p "
              "tests against it. Beside it, the pointwise method's score difference on the same pairs, and the "
              "paired difference (pairwise − pointwise). Orders agree: both orders of a pair give the same verdict. "
              "First preferred by: mean p(the reply shown first is better) − .5. Kendall tau: the Bradley-Terry "
              "strengths of the systems against their mean human ratings. Every CI resamples conversations. "
              "Reference-free: the judge reads the context and the two replies.\n"]
    for s in summaries:
        entries = _rated_pairs(s)
        if not entries:
            continue
        lines = [f"### pairwise, run `{s['name']}`\n", f"{_run_line(s)}\nRegenerate: `{s['run']['command']}`\n",
                 _PAIRWISE_HEAD]
        order = {a: i for i, a in enumerate(s["run"]["datasets"])}
        joint = {m["name"]: m for m in s.get("pairwise_means") or ()}
        for name in dict.fromkeys(e["name"] for e in entries):
            mine = sorted((e for e in entries if e["name"] == name), key=lambda e: order.get(e["abbrev"], 99))
            if len(mine) >= 2:
                lines.append(_pairwise_mean_row(name, mine, joint.get(name)))
            lines += [_pairwise_row(e) for e in mine]
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def _rated_pairs(s: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A summary's pairwise entries on pairs built from pointwise ratings (the sets that label their pairs
    have a section of their own)."""
    return [e for e in s.get("pairwise") or () if not e.get("labels")]


def _pairwise_row(e: Mapping[str, Any]) -> str:
    h = e.get("humans") or {}
    judge, point, diff = h.get("judge") or {}, h.get("pointwise") or {}, h.get("difference") or {}
    pos = e.get("position") or {}
    cons, bias = pos.get("consistency") or {}, pos.get("bias") or {}
    sl = e.get("system_level")
    n = e.get("n_boot")
    return "| " + " | ".join([
        e["name"], e["abbrev"], str(e["n_pairs"]), str(e["n_conversations"]),
        *_figure_cells(judge, e, n),
        *_figure_cells(point, e, n, with_p=False, suffix=f" ({point['method']})" if point.get("method") else ""),
        *_figure_cells(diff, e, n, signed=True),
        num(cons.get("value")), _signed(bias.get("value")) + ("" if _significant(_p_of(bias, e)) or bias.get("value") is None
                                                             else " †"),
        _systems_cell(sl, e),
    ]) + " |"


def _systems_cell(sl: Mapping[str, Any] | None, e: Mapping[str, Any]) -> str:
    """Kendall's tau over the systems; its p only from conversations at the floor or above (the systems'
    ratings come from the set's conversations)."""
    if not sl:
        return "–"
    k = _k(sl, e)
    p = too_few_text(k) if too_few(sl, k) is not None else f"p {p_display(sl['p'], None)}"
    return f"{num(sl['kendall'])} ({sl['n_systems']} systems, {p})"


def _k(x: Mapping[str, Any], e: Mapping[str, Any]) -> int | None:
    """The conversations behind one pairwise figure: its own count, or (collected before figures kept one)
    its set's."""
    k = x.get("n_conversations", e.get("n_conversations"))
    return None if k is None else int(k)


def _p_of(x: Mapping[str, Any], e: Mapping[str, Any]) -> float | None:
    """A figure's p, None below the floor (nothing is significant there)."""
    return None if too_few(x, _k(x, e)) is not None else x.get("p")


def _figure_cells(x: Mapping[str, Any], e: Mapping[str, Any], n_boot: int | None, *, with_p: bool = True,
                  signed: bool = False, suffix: str = "") -> list[str]:
    """A pairwise figure's value (marked † unless significant), CI and (``with_p``) p columns; below the floor
    ``too few conversations (k)`` and no p."""
    value = (_signed(x.get("value")) + ("" if _significant(_p_of(x, e)) or not x else " †")) if signed else \
        _share({**x, "p": _p_of(x, e)} if x else x)
    k = _k(x, e) if x else None
    cells = _interval_cells(x, k, _ci(x), p_display(x.get("p"), n_boot, x.get("n_degenerate", 0))) if x else ["", "–"]
    return [value + suffix, *(cells if with_p else cells[:1])]


def _pairwise_mean_row(name: str, entries: Sequence[Mapping[str, Any]], joint: Mapping[str, Any] | None) -> str:
    """The mean over a cell's sets of its agreement and of the pointwise method's (round 9's choice rule), with
    the CI and p of a joint bootstrap over the conversations of all its sets (``joint``: the summary's
    ``pairwise_means`` entry). A summary collected before that entry existed keeps no per-pair rows, so its
    mean has no interval: the page says so rather than print one."""
    def mean(key: str) -> float | None:
        vals = [v for e in entries if (v := ((e.get("humans") or {}).get(key) or {}).get("value")) is not None]
        return sum(vals) / len(vals) if len(vals) == len(entries) else None

    head = [name, f"mean of {len(entries)} sets", str(sum(e["n_pairs"] for e in entries)),
            str(sum(e["n_conversations"] for e in entries))]
    tail = ["", "", ""]  # orders agree, first preferred by, Kendall tau: per set only
    if joint is not None:
        boot = {"n_boot": joint["bootstrap"]["n_boot"]}
        return "| " + " | ".join([*head, *_figure_cells(joint["judge"], boot, boot["n_boot"]),
                                  *_figure_cells(joint.get("pointwise") or {}, boot, None, with_p=False),
                                  *_figure_cells(joint.get("difference") or {}, boot, boot["n_boot"], signed=True),
                                  *tail]) + " |"
    judge, point = mean("judge"), mean("pointwise")
    gap = None if judge is None or point is None else judge - point
    none = "no joint CI: per-pair rows not committed"
    mark = " †"  # no interval, no p: nothing is claimed significant
    return "| " + " | ".join([*head, num(judge) + mark, none, "–", num(point) + mark, none, _signed(gap) + mark, none,
                              "–", *tail]) + " |"


def _share(x: Mapping[str, Any]) -> str:
    return figure_text(x.get("value"), x.get("p")) if x else "–"


def _ci(x: Mapping[str, Any]) -> str:
    return ci_text({"ci_low": x.get("low"), "ci_high": x.get("high")}) if x else ""


def _signed(x: float | None) -> str:
    return "–" if x is None or not math.isfinite(x) else ("+" if x >= 0 else "") + num(x)


def _significant(p: float | None) -> bool:
    return p is not None and math.isfinite(p) and p < ALPHA


def _pending_section() -> str:
    lines = ["## Pending runs\n",
             "Not on this page until they are re-run on today's engine and collected:\n"]
    for what, command in PENDING:
        lines.append(f"- {what}. Command: `{command}`")
    return "\n".join(lines) + "\n"


def _all_models(methods: Iterable[Mapping[str, Any]]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for m in methods:
        out.update(m.get("models", {}))
    return dict(sorted(out.items()))


# --- check ------------------------------------------------------------------------------------------
