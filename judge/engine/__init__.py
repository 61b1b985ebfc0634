"""The one library layer that builds and runs a judge: a typed method spec, the builder that turns it
into a scorer, the per-item row schema, and the loop that streams rows. Every entry point (CLI,
harness, ``judge serve``, ``make_judge``, benchmark scripts) translates its input into a
:class:`MethodSpec` and comes through here; what each kind of method does is its type's
(:mod:`judge.methods`)."""

from ..records.rows import PROMPT_KEYS, REASON_KEYS, ROW_KEYS, Row, item_row
from .build import BackendPool, build, build_scorer, check_names, prepare
from .named import load_methods, named_method, with_runtime
from .run import run_rows, run_rows_together, score_rows
from .spec import MethodSpec, Prepared

__all__ = ["PROMPT_KEYS", "REASON_KEYS", "ROW_KEYS", "BackendPool", "MethodSpec", "Prepared", "Row", "build",
           "build_scorer", "check_names", "item_row", "load_methods", "named_method", "prepare", "run_rows",
           "run_rows_together", "score_rows", "with_runtime"]
