"""Experiment grids from one TOML config: validation, resumable execution, summaries and reports."""

from .config import DatasetSpec, Experiment, MethodSpec, load_experiment, parse_experiment
from .runner import plan, run_experiment, seeded_subset

__all__ = ["DatasetSpec", "Experiment", "MethodSpec", "load_experiment", "parse_experiment", "plan",
           "run_experiment", "seeded_subset"]
