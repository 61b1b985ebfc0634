"""What a view shows, gathered into plain data: from results folders (``judge view``, ``judge bench
--view``) or from one cell scored in this process (``judge score --view``).

Every number comes from where the reports take it: a cell's Spearman, CI and counts from
``summary.json`` (or, for ``judge score``, from :func:`judge.harness.summary.cell_stats`, the function
that computed them), each item's disagreement from :func:`judge.stats.correlation.rank_gap`, two cells' paired
difference from :func:`judge.harness.summary.paired_comparison`. Prompts are rebuilt by the method's
own code (``MethodType.prompts``) from the rows' example ids; the sets are read again for the
conversations (:mod:`judge.harness.rebuild`). Each rebuilt prompt is checked against the hash its row
recorded (``prompt_sha``): an item whose prompt today's template renders otherwise than the run sent it gets a
warning beside it, naming both templates' hashes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import InputError, JudgeError
from ..data.items import Item
from ..engine.session import RunOptions, Session
from ..engine.spec import MethodSpec, Prepared, method_type
from ..harness.config import Experiment
from ..harness.prompt_settings import read_prompt_settings
from ..harness.rebuild import Key, Rebuilt, rebuild
from ..prompts.templates import short_sha
from ..records.results import cell_path
from ..records.rows import Row, read_rows
from ..records.summary import Stats, read_summary
from ..stats.floor import too_few_text


@dataclass
class ViewRun:
    """One results folder (or one scored file) shown in the view."""

    name: str
    path: str
    description: str = ""
    split: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class ViewCell:
    """One cell (method x set x quality x seed) of a run: its rows, statistics and rebuilt prompts."""

    run: int
    method: str
    dataset: str
    quality: str | None
    seed: int | None
    #: The method's kind and what it reads (``MethodKinds.to_dict``): the view shows a reference or a next
    #: user turn only for a method that read it.
    kind: dict[str, Any]
    settings: str
    #: Spearman with its CI and p, counts: ``summary.json``'s cell, as the reports show it.
    stats: dict[str, Any] | None
    rows: list[Row]
    #: The item table (:attr:`View.items`) holding the cell's items and the examples its prompts showed.
    table: str
    #: One prompt text per row as the backend was sent it (None: not rebuilt; ``prompt_note`` says why).
    prompts: list[str] | None = None
    prompt_note: str = ""
    chat: bool | None = None
    wrapping: list[str] | None = None
    #: Per row, a warning where the prompt rebuilt now is not the one the run sent (None: the same, or unknown).
    drift: list[str | None] | None = None


@dataclass
class View:
    title: str
    runs: list[ViewRun] = field(default_factory=list)
    cells: list[ViewCell] = field(default_factory=list)
    #: Items by table and id: the sets' conversations, their human ratings, the examples shown.
    items: dict[str, dict[str, Item]] = field(default_factory=dict)
    #: Bootstrap settings of the paired comparisons (the first run's, as its summary's were made).
    n_boot: int = 1000
    seed: int = 0
    #: Further sections' data by name (``page_data``'s ``sections``), e.g. ``estimate``: ``judge estimate``'s JSON.
    sections: dict[str, Any] = field(default_factory=dict)

    def add_items(self, dataset: str, run: int, items: dict[str, Item]) -> str:
        """Put a run's items of ``dataset`` in a table and return its key: one table per set, shared by
        runs that read the same items, another for a run whose items under the same ids differ."""
        key = dataset
        table = self.items.get(key)
        if table is not None and any(table[i] != it for i, it in items.items() if i in table):
            key = f"{dataset} (run {run + 1})"
            table = self.items.get(key)
        if table is None:
            self.items[key] = dict(items)
        else:
            table.update({i: it for i, it in items.items() if i not in table})
        return key


def from_results(dirs: Sequence[str | Path], *, data_dir: str | None = None, experiment: Experiment | None = None,
                 title: str | None = None) -> View:
    """The view of one or more results folders written by ``judge run`` or ``judge bench``.

    ``data_dir`` overrides where the registered sets are read; ``experiment``: the run's own when the
    caller still holds it (one folder only)."""
    if experiment is not None and len(dirs) != 1:
        raise ValueError("an experiment describes one results folder")
    view = View(title or "")
    for d in dirs:
        _add_run(view, Path(d), data_dir, experiment)
    if not view.title:
        view.title = " vs ".join(r.name for r in view.runs)
    return view


def _add_run(view: View, root: Path, data_dir: str | None, experiment: Experiment | None) -> None:
    summary = read_summary(root)
    exp = summary.experiment
    run = len(view.runs)
    if not run:  # the first run's bootstrap is the page's
        view.n_boot, view.seed = int(exp["bootstrap"]), int(exp["seed"])
    name = str(exp.get("name") or root.name)
    if any(r.name == name for r in view.runs):
        name = f"{name} ({root})"
    view.runs.append(ViewRun(name, str(root), str(exp.get("description") or ""), exp.get("split")))
    rebuilt = rebuild(root, summary, data_dir=data_dir, experiment=experiment)
    view.runs[-1].notes = [f"{ds}: {why}" for ds, why in rebuilt.set_problems.items()]
    for summarised in summary.cells:
        key = summarised.key
        method, dataset, quality, seed = key
        path = cell_path(root, *key)
        if not path.exists():
            raise InputError("a cell listed in summary.json has no rows file", file=str(path))
        rows = read_rows(path)
        described = summary.methods.get(method, {})
        items = dict(rebuilt.items.get(dataset, {}))
        prep = rebuilt.prepared.get(key)
        if prep is not None:
            items.update({ex.id: ex for ex in prep.pool or () if ex.id not in items})
        table = view.add_items(dataset, run, {r.id: items[r.id] for r in rows if r.id in items} | _examples(rows, items))
        cell = ViewCell(run, method, dataset, quality, seed, _kind(described), _settings(described),
                        below_floor(summarised.stats), rows, table)
        _add_prompts(cell, prep, read_prompt_settings(path), rebuilt, key)
        view.cells.append(cell)


def _examples(rows: Sequence[Row], items: dict[str, Item]) -> dict[str, Item]:
    """The example items the rows' prompts showed (those that are known)."""
    return {i: items[i] for r in rows for i in r.examples if i in items}


def _kind(described: dict[str, Any]) -> dict[str, Any]:
    return {k: described[k] for k in ("kind", "reads", "uses_future", "listwise", "supervised") if k in described}


def _settings(described: dict[str, Any]) -> str:
    """The method's settings in one line, as ``judge bench`` prints them."""
    if "type" not in described:
        return ""
    try:
        return method_type(str(described["type"])).settings_text(described)
    except (JudgeError, KeyError):
        return ""


def below_floor(stats: Stats) -> dict[str, Any]:
    """A cell's statistics as the page reads them, without interval or p when its bootstrap resampled fewer
    conversations than the floor (:mod:`judge.stats.floor`; summaries written before the floor stored them
    anyway), with the text the page prints instead (``too_few_text``)."""
    out = stats.to_dict()
    k = stats.ci.few
    if k is not None:
        out["ci"].update(low=None, high=None, p=None, too_few=True, too_few_text=too_few_text(k))
        for key in ("spearman", "pearson", "kendall"):
            out[key]["p"] = None
    return out


def _add_prompts(cell: ViewCell, prep: Prepared | None, settings: dict[str, Any] | None, rebuilt: Rebuilt,
                 key: Key) -> None:
    """Rebuild the cell's prompts when its method sends any, else say why none are shown."""
    if prep is None:
        cell.prompt_note = f"Prompts not shown: {rebuilt.problems.get(key, 'the cell could not be made again')}."
        return
    chat = settings.get("chat") if settings is not None else prep.spec.generate.chat
    if settings is not None:
        cell.wrapping = settings.get("wrapping")
    cell.chat = chat
    rebuild_prompts(cell, prep, rebuilt.items.get(cell.dataset, {}), bool(chat))
    if cell.prompts is not None and settings is None:
        cell.prompt_note = ("The run recorded no prompt settings (a run older than the view), so whether the "
                            "prompts went as chat messages is " + ("unknown." if chat is None else "the spec's."))


def rebuild_prompts(cell: ViewCell, prep: Prepared, items: dict[str, Item], chat: bool) -> None:
    """The prompts of the cell's rows, rebuilt by its method type (``MethodType.prompts``)."""
    missing = next((r.id for r in cell.rows if r.id not in items), None)
    if missing is not None:
        cell.prompt_note = f"Prompts not shown: item {missing!r} is not in the data read now."
        return
    try:
        sent = Session(RunOptions(progress=False)).prompts(prep, [(items[r.id], r.examples) for r in cell.rows], chat)
    except JudgeError as exc:
        cell.prompt_note = f"Prompts not shown: {exc}"
        return
    if sent is None:
        cell.prompt_note = f"A method of type '{prep.spec.type}' sends no prompt template to show."
        return
    cell.prompts = [p.text for p in sent]
    cell.drift = [drift(row, text, prep) for row, text in zip(cell.rows, cell.prompts, strict=True)]


def drift(row: Row, text: str, prep: Prepared) -> str | None:
    """The warning of a row whose prompt rebuilt now (``text``) is not the one its run sent: the template was
    edited since (or the data it renders changed). None when they are the same, or the row recorded no hash."""
    if row.prompt_sha is None or short_sha(text) == row.prompt_sha:
        return None
    now = prep.prompt.sha if prep.prompt is not None else None
    why = (f"its template changed since the run (template {row.template_sha} then, {now} now)"
           if row.template_sha is not None and now is not None and now != row.template_sha else
           "the data or settings it renders changed since the run")
    return (f"The prompt shown is not the one the model read: today's template renders another text (prompt "
            f"{short_sha(text)} now, {row.prompt_sha} in the run): {why}.")


def from_scored(spec: MethodSpec, prep: Prepared, rows: list[Row], items: Sequence[Item],
                prompt_settings: dict[str, Any] | None, kind: dict[str, Any], source: str) -> View:
    """The view of one cell scored in this process (``judge score --view``): its rows, the items of the
    file (examples included), the statistics ``judge score`` prints and the prompts rebuilt as above."""
    from ..harness.summary import cell_stats

    view = View(f"{spec.name} on {Path(source).name}", runs=[ViewRun(f"judge score {Path(source).name}", source)])
    by_id = {it.id: it for it in items}
    by_id.update({ex.id: ex for ex in prep.pool or () if ex.id not in by_id})
    rated = any(r.human is not None for r in rows)
    quality = prep.quality.name if prep.quality is not None else None
    table = view.add_items(Path(source).name, 0, by_id)
    cell = ViewCell(0, spec.name, Path(source).name, quality, prep.seed if spec.kind.records_seed else None, kind,
                    method_type(spec.type).settings_text(spec.describe()),
                    below_floor(cell_stats(rows, view.n_boot, view.seed)) if rated else None, rows, table)
    if prompt_settings is not None:
        cell.chat, cell.wrapping = bool(prompt_settings.get("chat")), prompt_settings.get("wrapping")
        rebuild_prompts(cell, prep, by_id, cell.chat)
    else:
        cell.prompt_note = f"A method of type '{spec.type}' sends no prompt template to show."
    view.cells.append(cell)
    return view
