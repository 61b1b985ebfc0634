"""``judge run --check`` (and ``judge bench --check``): what each cell of a run will cost, before it starts.

The cells are replayed as :func:`judge.harness.runner.run_experiment` computes them: the same results
folder (rows already saved cost nothing, as a resume skips them), the same groups of cells scored in one
prefix-scheduled pass (:func:`judge.harness.runner.entry_groups`), in the same order. The counting and the
tables are the run's :class:`judge.engine.session.Session`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ..accounting.rates import Rate
from ..engine import Prepared
from ..engine.cost import CellCost, estimate
from ..engine.session import RunOptions, Session
from .compare_cells import CompareCell
from .config import Experiment
from .runner import Cell, entry_groups, pending


def cost_report(exp: Experiment, prepared: Sequence[tuple[Cell, Prepared]], log: Callable[[str], None],
                measure: Callable[..., Rate] | None = None, compares: Sequence[CompareCell] = ()) -> list[str]:
    """The cost table of the run ``exp`` would start now, then the money table of its hosted cells
    (:meth:`judge.engine.session.Session.check`)."""
    groups, entries = entry_groups(pending(prepared, Path(exp.output)), compares, Path(exp.output), exp)
    return Session(RunOptions(log=log)).check(groups, entries, measure)


def cost_estimate(exp: Experiment, prepared: Sequence[tuple[Cell, Prepared]], log: Callable[[str], None],
                  measure: Callable[..., Rate] | None = None, compares: Sequence[CompareCell] = ()
                  ) -> tuple[list[CellCost], dict[str, Rate]]:
    """What each cell of the run ``exp`` would start now costs, and the rates used (see
    :func:`judge.engine.cost.estimate`)."""
    groups, entries = entry_groups(pending(prepared, Path(exp.output)), compares, Path(exp.output), exp)
    if measure is None:
        return estimate(groups, log, order=entries)
    return estimate(groups, log, measure, order=entries)
