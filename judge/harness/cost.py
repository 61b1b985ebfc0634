"""``judge run --check`` (and ``judge bench --check``): every cell checked, listed, and what each will cost.

The cells are replayed as :func:`judge.harness.runner.run_experiment` computes them: the same results
folder (rows already saved cost nothing, as a resume skips them), the same groups of cells scored in one
prefix-scheduled pass (:func:`judge.harness.runner.entry_groups`), in the same order. The counting and the
tables are the run's :class:`judge.engine.session.Session`'s.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ..accounting.rates import Rate
from ..engine import Prepared
from ..engine.cost import CellCost, calibrate, estimate
from ..engine.session import RunOptions, Session
from .compare_cells import CompareCell
from .config import Experiment
from .runner import Cell, entry_groups, family_report, pending, prepare_run


def print_check(exp: Experiment) -> None:
    """Check every cell of ``exp`` against its data (templates, manual sets, scales, pairs: everything short of
    loading a model), list the cells (stdout) and those skipped (stderr), then the prompt families' shared
    prefixes and the cost and money tables."""
    prepared, compares, skipped = prepare_run(exp)
    for c, prep in prepared:
        without = "".join(f"\twithout {name}" for name, _ in prep.left_out)
        print(f"{c.method.name}\t{c.dataset}\t{c.quality.name}\tseed {c.seed}\t{len(c.items)} items{without}")
    for cc in compares:
        print(f"{cc.spec.name}\t{cc.dataset}\t{cc.quality.name}\t{len(cc.pairs)} pairs\t{len(cc.items)} items"
              + (f"\tbeside {cc.against.spec.name}" if cc.against is not None else ""))
    for sk in skipped:
        print(f"skipped: {sk['method']} on {sk['dataset']} {sk['quality']}: {sk['reason']}", file=sys.stderr)
    cells = [c for c, _ in prepared]
    print(f"{len(cells)} cells, {sum(len(c.items) for c in cells)} item scorings"
          + (f"; {len(compares)} compare cells, {sum(len(c.pairs) for c in compares)} pairs" if compares else ""),
          file=sys.stderr)
    for line in [*family_report(prepared), *cost_report(exp, prepared, RunOptions().log, compares=compares)]:
        print(line)


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
    return estimate(groups, log, measure or calibrate, order=entries)
