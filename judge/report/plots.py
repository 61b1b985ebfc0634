"""PNG plots (matplotlib, imported only here): heatmap of methods x sets, judge-vs-human scatter per
set, and correlation vs number of examples per selector. Figure sizes are fixed by the table shape
(no tight bounding box), so a plot's pixel size is predictable: ``figsize * DPI``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..core.errors import MissingExtraError
from ..records.rows import Row
from ..records.summary import Summary
from .table import build

DPI = 100


def heatmap_size(n_rows: int, n_cols: int) -> tuple[float, float]:
    return (max(6.0, 2.5 + 1.1 * n_cols), max(3.0, 1.5 + 0.5 * n_rows))


def scatter_size(n_sets: int) -> tuple[float, float]:
    cols = min(4, n_sets)
    rows = math.ceil(n_sets / cols)
    return (3.2 * cols, 3.0 * rows)


K_CURVE_SIZE = (6.4, 4.0)


def _plt():
    try:
        import matplotlib
    except ImportError as exc:
        raise MissingExtraError("plots", "report", "matplotlib") from exc
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, fig: Any, path: Path) -> Path:
    """Write the PNG to a temp file, then rename it over ``path`` (never half a file), and close the figure."""
    import os

    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, dpi=DPI, format="png")
    os.replace(tmp, path)
    plt.close(fig)
    return path


def heatmap(summary: Summary, path: Path) -> Path:
    plt = _plt()
    import numpy as np

    board = build(summary)
    # Reference-free methods first, as in the tables; the rows of the other kinds say theirs in their label.
    board.rows = [r for _kind, _title, rows in board.sections() for r in rows]
    data = np.array([[c.value if c.value is not None else np.nan for c in r.cells] for r in board.rows], dtype=float)
    fig, ax = plt.subplots(figsize=heatmap_size(len(board.rows), len(board.columns)), dpi=DPI)
    im = ax.imshow(data, cmap="RdYlGn", vmin=-1, vmax=1, aspect="auto")
    ax.set_xticks(range(len(board.columns)), [c.label for c in board.columns], rotation=45, ha="right")
    ax.set_yticks(range(len(board.rows)),
                  [r.label + (f" [{r.kind}]" if r.kind not in ("reference-free", "unknown") else "") for r in board.rows])
    for i, r in enumerate(board.rows):
        for j, c in enumerate(r.cells):
            if c.value is not None:
                mark = "*" if c.marked else ""
                ax.text(j, i, f"{c.value:.2f}{mark}", ha="center", va="center", fontsize=8,
                        fontweight="bold" if c.best else "normal")
    fig.colorbar(im, ax=ax, label="Spearman")
    ax.set_title(board.title, fontsize=10)
    fig.subplots_adjust(left=0.25, bottom=0.3, right=0.95, top=0.9)
    return _save(plt, fig, path)


def scatter(summary: Summary, rows_by_cell: dict[tuple[str, str, str], list[Row]], method: str, path: Path) -> Path:
    """One panel per (set, quality): the method's score against the mean human rating."""
    plt = _plt()
    panels = [(d["name"], q) for d in summary.datasets for q in d["qualities"]]
    cols = min(4, len(panels))
    nrows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=scatter_size(len(panels)), dpi=DPI, squeeze=False)
    res = {(r.method, r.dataset, r.quality): r for r in summary.results}
    for k, (ds, q) in enumerate(panels):
        ax = axes[k // cols][k % cols]
        rows = [r for r in rows_by_cell.get((method, ds, q), []) if r.score is not None and r.human is not None]
        ax.scatter([r.human for r in rows], [r.score for r in rows], s=8, alpha=0.6)
        r = res.get((method, ds, q))
        rho = "–" if not r or r.spearman is None else f"{r.spearman:.2f}"
        ax.set_title(f"{ds} {q}\nρ={rho} n={len(rows)}", fontsize=8)
        ax.set_xlabel("human", fontsize=7)
        ax.set_ylabel("judge", fontsize=7)
        ax.tick_params(labelsize=6)
    for k in range(len(panels), nrows * cols):
        axes[k // cols][k % cols].axis("off")
    fig.suptitle(method, fontsize=9)
    fig.subplots_adjust(hspace=0.6, wspace=0.4, top=0.85)
    return _save(plt, fig, path)


def k_curve(summary: Summary, path: Path) -> Path | None:
    """Mean correlation over the sets (DSTC10 average) against k, one line per selector and model.

    Returns None when no selector was run at more than one k (nothing to draw).
    """
    lines: dict[str, list[tuple[int, float, float]]] = {}
    for m, spec in summary.methods.items():
        if "selector" not in spec:  # methods without in-context examples have no k to draw against
            continue
        avg = summary.averages.get(m, {}).get("overall")
        if avg is None:
            continue
        # The sd over seeds of the overall average, from the per-seed cells.
        per_seed: dict[int, list[float]] = {}
        for c in summary.cells:
            if c.method == m and (v := c.stats.spearman.value) is not None:
                per_seed.setdefault(c.seed, []).append(v)
        means = [sum(v) / len(v) for v in per_seed.values()]
        sd = (sum((x - avg) ** 2 for x in means) / (len(means) - 1)) ** 0.5 if len(means) > 1 else 0.0
        label = f"{spec['selector'] if spec['k'] else 'zero-shot'} · {spec['backend']}:{spec.get('model') or 'default'}"
        lines.setdefault(label, []).append((spec["k"], avg, sd))
    zero = {lab.split(" · ")[1]: pts for lab, pts in lines.items() if lab.startswith("zero-shot")}
    curves = {lab: pts for lab, pts in lines.items() if not lab.startswith("zero-shot")}
    for lab, pts in curves.items():  # the zero-shot point of the same model starts each curve
        pts.extend(zero.get(lab.split(" · ")[1], []))
    curves = {lab: sorted(set(p)) for lab, p in curves.items() if len({k for k, _, _ in p}) > 1}
    if not curves:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=K_CURVE_SIZE, dpi=DPI)
    for lab, pts in curves.items():
        ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[p[2] for p in pts], marker="o", capsize=3,
                    label=lab)
    ax.set_xlabel("in-context examples (k)")
    ax.set_ylabel("mean Spearman over sets")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.subplots_adjust(left=0.12, bottom=0.12, right=0.97, top=0.95)
    return _save(plt, fig, path)
