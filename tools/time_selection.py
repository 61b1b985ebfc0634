"""Time example selection alone (no model): index build per pool and selection per test item.

    python3 tools/time_selection.py ../shared/data dailydialog-zhao fed-turn
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from judge.datasets import load_benchmark
from judge.selectors import get_selector


def main() -> None:
    data_dir, names = sys.argv[1], sys.argv[2:]
    for name in names:
        pool = load_benchmark(name, data_dir)
        for sel_name in ("bm25-context", "bm25-response", "bm25-context-response", "random"):
            sel = get_selector(sel_name)
            t0 = time.perf_counter()
            if hasattr(sel, "index"):
                sel.index(pool)
            build = time.perf_counter() - t0
            t0 = time.perf_counter()
            for it in pool:
                sel.select(it, pool, 4)
            per = (time.perf_counter() - t0) / len(pool)
            print(f"{name:18} pool {len(pool):4}  {sel_name:22} index build {build * 1000:7.1f} ms  "
                  f"selection {per * 1000:6.2f} ms/item (k=4, all {len(pool)} items as queries)")


if __name__ == "__main__":
    main()
