"""How fast ``judge view`` opens and filters a full-leaderboard run in headless Chromium.

    flock /tmp/judge-cpu.lock python benchmarks/view_load.py --data-dir ../shared/data

1. The run: the CPU leaderboard's config (8 DSTC10 sets, test half, up to 200 items a set) with six of
   its methods (four SmolLM2 prompts, one of them 4-shot, an ensemble and a classic scorer) on the mock
   backend, through ``judge run``: about 7,700 rows, real conversations, real prompts (no model runs;
   the mock's scores mean nothing). Kept in ``--out`` and reused when there (``--fresh`` runs it again).
2. ``judge view`` of it (one run), and of it twice over (``judge view RUN RUN``: twice the rows, and the
   two copies side by side): wall time, peak memory, file size.
3. Each page opened ``--repeat`` times in a fresh tab of one headless Chromium, in a network namespace
   of its own (tools/browser.py): the time until the page has drawn itself (its script's end, read from
   ``performance.now()``), the load event, and inside the page the time a filter (one method), a text
   search, opening an item (its cell's prompts inflated) and the side-by-side section take to draw.
   Baseline in the same browser: the run's ``leaderboard.html`` (static, no script), so a slow machine
   shows as a slow baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.browser import browser_page, missing, open_view, run_isolated

CONFIG = ROOT / "benchmarks" / "configs" / "cpu_leaderboard.toml"
METHODS = "smollm2-yesno,smollm2-rating-exp,smollm2-bm25c-4,smollm2-criteria,smollm2-ensemble,length"
#: In-page timings: each returns milliseconds, measured by the page's clock around the redraw.
FILTER = """() => { const s = document.getElementById('f-method'); const t = performance.now();
  s.value = s.options[2].value; s.dispatchEvent(new Event('change'));
  const ms = performance.now() - t; s.value = ''; s.dispatchEvent(new Event('change')); return ms; }"""
SEARCH = """() => new Promise((done) => { const s = document.getElementById('f-search');
  const count = document.getElementById('count').dataset.n; const t = performance.now();
  const seen = new MutationObserver(() => { seen.disconnect(); done(performance.now() - t); });
  seen.observe(document.getElementById('rows').parentNode, {childList: true, subtree: true});
  s.value = 'music'; s.dispatchEvent(new Event('input')); })"""
OPEN = """() => new Promise((done) => {
  const cells = window.judgeView.data.cells;
  const rows = [...document.querySelectorAll('[data-testid=rows] tbody tr')].filter((r) => cells[r.dataset.cell].prompts);
  const t = performance.now(); rows[rows.length - 1].click();
  const wait = () => { const p = document.querySelector('#detail [data-testid=prompt-text]');
    if (p && p.textContent !== 'inflating…') done(performance.now() - t);
    else if (performance.now() - t > 30000) done(null); else requestAnimationFrame(wait); };
  wait(); })"""
COMPARE = """() => { const t = performance.now(); document.getElementById('tab-compare').click();
  return performance.now() - t; }"""
HEAP = "() => (performance.memory ? performance.memory.usedJSHeapSize / 1048576 : null)"
LOAD_EVENT = "() => performance.getEntriesByType('navigation')[0].loadEventEnd"


def measure(pages: dict[str, str], repeat: int) -> dict[str, Any]:
    """Inside the namespace: every page ``repeat`` times, each in a fresh tab of one browser."""
    out: dict[str, Any] = {}
    with browser_page() as first:
        context = first.context
        for name, path in pages.items():
            runs = []
            for _ in range(repeat):
                page = context.new_page()
                if name == "baseline":
                    page.goto(Path(path).resolve().as_uri())
                    page.wait_for_load_state("load")
                    runs.append({"load_ms": page.evaluate(LOAD_EVENT)})
                else:
                    ready = open_view(page, path)
                    runs.append({"ready_ms": ready, "load_ms": page.evaluate(LOAD_EVENT), "filter_ms": page.evaluate(FILTER),
                                 "search_ms": page.evaluate(SEARCH), "open_ms": page.evaluate(OPEN),
                                 "compare_ms": page.evaluate(COMPARE), "heap_mib": page.evaluate(HEAP)})
                page.close()
            out[name] = runs
    return out


def _judge(*args: str, env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "judge", *args], check=True, cwd=ROOT, env=env)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--out", default="/tmp/judge-view-bench")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--fresh", action="store_true", help="run the leaderboard again even when --out holds it")
    ap.add_argument("--measure", default=None, help=argparse.SUPPRESS)  # JSON of pages, inside the namespace
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(json.loads(args.measure), args.repeat)))
        return
    why = missing()
    if why is not None:
        sys.exit(f"view_load: {why}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "JUDGE_CACHE": str(out / "cache.sqlite"), "PYTHONPATH": str(ROOT)}
    run = out / "run"
    if args.fresh or not (run / "summary.json").exists():
        _judge("run", str(CONFIG), "--backend", "mock", "--methods", METHODS, "--data-dir", args.data_dir, "-o", str(run),
               "--no-progress", env=env)
    builds = {}
    for name, cmd in (("view", ["view", str(run), "-o", str(out / "view.html")]),
                      ("view x2", ["view", str(run), str(run), "-o", str(out / "view2.html")])):
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        seconds = _judge(*cmd, "--data-dir", args.data_dir, env=env)
        peak = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
        builds[name] = {"build_s": seconds, "peak_rss_mib": peak}
    pages = {"baseline": str(run / "leaderboard.html"), "view": str(out / "view.html"), "view x2": str(out / "view2.html")}
    proc = run_isolated([sys.executable, __file__, "--measure", json.dumps(pages), "--repeat", str(args.repeat)],
                        timeout=1800, cwd=ROOT)
    if proc.returncode != 0:
        sys.exit(f"view_load: the browser failed:\n{proc.stderr[-3000:]}")
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    report(got, builds, pages, run)


def report(got: dict[str, Any], builds: dict[str, Any], pages: dict[str, str], run: Path) -> None:
    summary = json.loads((run / "summary.json").read_text())
    rows = sum(c["n_items"] for c in summary["cells"])
    print(f"run: {len(summary['cells'])} cells ({len(summary['methods'])} methods x {len(summary['datasets'])} sets), "
          f"{rows} rows; medians of {len(got['view'])} loads each, one headless Chromium")
    base = statistics.median(r["load_ms"] for r in got["baseline"])
    print(f"{'page':<10}{'rows':>7}{'MB':>7}{'build s':>9}{'RSS MiB':>9}{'ready ms':>10}{'load ms':>9}{'x base':>8}"
          f"{'filter':>8}{'search':>8}{'open':>8}{'compare':>9}{'heap MiB':>10}")
    print(f"{'baseline':<10}{'':>7}{Path(pages['baseline']).stat().st_size / 1e6:>7.2f}{'':>9}{'':>9}{'':>10}"
          f"{base:>9.0f}{1:>7.2f}x")
    for name, factor in (("view", 1), ("view x2", 2)):
        med = {k: statistics.median(r[k] for r in got[name]) for k in got[name][0] if got[name][0][k] is not None}
        b = builds[name]
        print(f"{name:<10}{rows * factor:>7}{Path(pages[name]).stat().st_size / 1e6:>7.2f}{b['build_s']:>9.1f}"
              f"{b['peak_rss_mib']:>9.0f}{med['ready_ms']:>10.0f}{med['load_ms']:>9.0f}{med['load_ms'] / base:>7.1f}x"
              f"{med['filter_ms']:>8.0f}{med['search_ms']:>8.0f}{med['open_ms']:>8.0f}{med['compare_ms']:>9.0f}"
              f"{med.get('heap_mib', float('nan')):>10.0f}")
    print("ready: the page's script done (list, cells and first item drawn); filter: one method chosen; search: a "
          "word typed (after the list's 120 ms typing pause); open: an item with its prompt (first of its cell: "
          "inflated); compare: the side-by-side section drawn. All in ms.")


if __name__ == "__main__":
    main()
