"""``judge run --check`` (and ``judge bench --check``): what each cell of a run will cost, before it starts.

The cells are replayed as :func:`judge.harness.runner.run_experiment` computes them: the same results
folder (rows already saved cost nothing, as a resume skips them), the same groups of cells scored in one
prefix-scheduled pass (:func:`schedule_groups`), in the same order. The counting itself is
:mod:`judge.engine.cost`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ..accounting.rates import Rate
from ..engine import Prepared
from ..engine.cost import CellCost, Entry, cost_lines, estimate
from ..records.results import cell_path
from .cells import read_done
from .compare_cells import CompareCell, cost_entries
from .config import Experiment
from .runner import Cell, schedule_groups


def cell_label(cell: Cell, abbrev: str) -> str:
    """How the cost table names a cell: method, set abbreviation, quality (and seed, for seeded methods)."""
    seed = f" seed {cell.seed}" if cell.method.seeded else ""
    return f"{cell.method.name} {abbrev} {cell.quality.name}{seed}"


def cost_report(exp: Experiment, prepared: Sequence[tuple[Cell, Prepared]], log: Callable[[str], None],
                measure: Callable[..., Rate] | None = None, compares: Sequence[CompareCell] = ()) -> list[str]:
    """The cost table of the run ``exp`` would start now (see :func:`judge.engine.cost.report`), then the money
    table of its hosted cells (:mod:`judge.engine.hosted_cost`)."""
    from ..engine.hosted_cost import count_hosted, money_lines

    return (cost_lines(*cost_estimate(exp, prepared, log, measure, compares))
            + money_lines(count_hosted(cost_groups(exp, prepared, compares)[0])))


def cost_groups(exp: Experiment, prepared: Sequence[tuple[Cell, Prepared]], compares: Sequence[CompareCell] = ()
                ) -> tuple[list[list[Entry]], list[Entry]]:
    """The run's cells as the replay takes them: groups in the run's order, and every entry in the cells' order
    (``[[compare]]`` cells after the others, as the run computes them: their pairs, then the pointwise rows
    beside them)."""
    abbrev = {ds.name: ds.dataset.abbrev for ds in exp.datasets}
    todo = []
    for cell, prep in prepared:
        path = cell_path(Path(exp.output), *cell.key)
        rows, nbytes = read_done(path, [it.id for it in cell.items])
        todo.append((cell, prep, path, rows, nbytes))
    entries = [Entry(cell_label(c, abbrev[c.dataset]), prep, c.items[len(rows):], len(rows))
               for c, prep, _, rows, _ in todo]
    groups = [[entries[i] for i in group] for group in schedule_groups(todo)]
    extra = cost_entries(compares, Path(exp.output))
    return groups + [[e] for e in extra], entries + extra


def cost_estimate(exp: Experiment, prepared: Sequence[tuple[Cell, Prepared]], log: Callable[[str], None],
                  measure: Callable[..., Rate] | None = None, compares: Sequence[CompareCell] = ()
                  ) -> tuple[list[CellCost], dict[str, Rate]]:
    """What each cell of the run ``exp`` would start now costs, and the rates used (see
    :func:`judge.engine.cost.estimate`)."""
    groups, entries = cost_groups(exp, prepared, compares)
    if measure is None:
        return estimate(groups, log, order=entries)
    return estimate(groups, log, measure, order=entries)
