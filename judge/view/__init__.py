"""``judge view``: a run's items in the browser, in one self-contained HTML file.

:mod:`judge.view.data` gathers what the view shows (from results folders, or from one cell scored in
this process), :mod:`judge.view.page` writes it into the page (``assets/``: its script and style),
:mod:`judge.view.serve` serves the file on 127.0.0.1.
"""

from __future__ import annotations

from pathlib import Path

from ..core.io import atomic_write_text
from .data import View, from_results, from_scored
from .page import page_data, render_page

__all__ = ["View", "from_results", "from_scored", "page_data", "render_page", "write_view"]


def write_view(view: View, output: str | Path) -> Path:
    """Write the view's page to ``output`` (atomically) and return its path."""
    path = Path(output)
    atomic_write_text(path, render_page(view))
    return path
