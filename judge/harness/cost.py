"""``judge run --check`` (and ``judge bench --check``): what each cell of a run will cost, before it starts.

The cells are replayed as :func:`judge.harness.runner.run_experiment` computes them: the same results
folder (rows already saved cost nothing, as a resume skips them), the same groups of cells scored in one
prefix-scheduled pass (:func:`schedule_groups`), in the same order. The counting itself is
:mod:`judge.engine.cost`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ..engine import Prepared
from ..engine.cost import CellCost, Entry, cost_lines, estimate
from ..rates import Rate
from ..results import cell_path
from .cells import read_done
from .config import Experiment
from .runner import Cell, schedule_groups


def cell_label(cell: Cell, abbrev: str) -> str:
    """How the cost table names a cell: method, set abbreviation, quality (and seed, for seeded methods)."""
    seed = f" seed {cell.seed}" if cell.method.seeded else ""
    return f"{cell.method.name} {abbrev} {cell.quality.name}{seed}"


def cost_report(exp: Experiment, prepared: Sequence[tuple[Cell, Prepared]], log: Callable[[str], None],
                measure: Callable[..., Rate] | None = None) -> list[str]:
    """The cost table of the run ``exp`` would start now (see :func:`judge.engine.cost.report`), then the money
    table of its hosted cells (:mod:`judge.engine.hosted_cost`)."""
    from ..engine.hosted_cost import count_hosted, money_lines

    return cost_lines(*cost_estimate(exp, prepared, log, measure)) + money_lines(count_hosted(cost_groups(exp, prepared)[0]))


def cost_groups(exp: Experiment, prepared: Sequence[tuple[Cell, Prepared]]) -> tuple[list[list[Entry]], list[Entry]]:
    """The run's cells as the replay takes them: groups in the run's order, and every entry in the cells' order."""
    abbrev = {ds.name: ds.dataset.abbrev for ds in exp.datasets}
    todo = []
    for cell, prep in prepared:
        path = cell_path(Path(exp.output), *cell.key)
        rows, nbytes = read_done(path, [it.id for it in cell.items])
        todo.append((cell, prep, path, rows, nbytes))
    entries = [Entry(cell_label(c, abbrev[c.dataset]), prep, c.items[len(rows):], len(rows))
               for c, prep, _, rows, _ in todo]
    return [[entries[i] for i in group] for group in schedule_groups(todo)], entries


def cost_estimate(exp: Experiment, prepared: Sequence[tuple[Cell, Prepared]], log: Callable[[str], None],
                  measure: Callable[..., Rate] | None = None) -> tuple[list[CellCost], dict[str, Rate]]:
    """What each cell of the run ``exp`` would start now costs, and the rates used (see
    :func:`judge.engine.cost.estimate`)."""
    groups, entries = cost_groups(exp, prepared)
    if measure is None:
        return estimate(groups, log, order=entries)
    return estimate(groups, log, measure, order=entries)
