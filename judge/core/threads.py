"""Threading defaults judge needs before any OpenMP runtime starts.

llama.cpp's CPU kernels run on OpenMP threads that spin while they wait for work. On a machine with
as many busy processes as cores (a laptop running a browser, a CI runner, two judges at once) the
spinning threads take the cores the working ones need, and a run collapses by 2-10x. Passive waiting
costs a little on an idle machine and saves the run on a busy one, so judge sets it unless the user
chose a value. OpenMP reads the variable once, when its runtime is loaded: this module must run
before llama.cpp (or torch) is imported, so ``judge/__init__.py`` imports it first.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

#: What judge sets when the user has not: variable -> value.
DEFAULTS = {"OMP_WAIT_POLICY": "PASSIVE"}


def set_thread_defaults(environ: MutableMapping[str, str] = os.environ) -> dict[str, str]:
    """Set each default the user has not set themselves; return the ones this call set."""
    chosen = {key: value for key, value in DEFAULTS.items() if not environ.get(key)}
    environ.update(chosen)
    return chosen
