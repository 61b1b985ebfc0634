"""Make the README's picture of ``judge view`` (docs/img/view.png) and the side-by-side one
(docs/img/view-compare.png), the way the browser tests see the page.

    flock /tmp/judge-cpu.lock python tools/view_screenshot.py --data-dir ../shared/data

It scores FED-Turn's test half (up to ``--limit`` items) with the embedded SmolLM2 and two prompts (the
criteria question and the 1-5 rating), writes the view, opens it in headless Chromium inside a network
namespace of its own (tools/browser.py), filters to the criteria prompt, opens the item the judge and
the humans disagree on most with its prompt as the model read it (the chat template shown), and saves
the screenshots. The run's cache makes a second call free. ``--backend mock`` makes a picture in
seconds, of scores that mean nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.browser import browser_page, missing, open_view, run_isolated

CONFIG = """
name = "FED-Turn, two prompts"
datasets = ["FT"]
qualities = ["Overall"]
split = "test"
limit = {limit}
[defaults]
backend = "{backend}"
generate = {{ threads = 2 }}
[[methods]]
name = "criteria"
prompt = "yesno-criteria"
[[methods]]
name = "rating-exp"
prompt = "rating"
rule = "expected"
"""


def shoot(page_path: str, out: Path, compare: Path) -> None:
    """Inside the namespace: open the view and save the two pictures."""
    with browser_page(1440, 960) as page:
        open_view(page, page_path)
        page.select_option("#f-method", "criteria")
        page.wait_for_selector("#cell-panel svg circle")
        page.click("[data-testid=rows] tbody tr:first-child")
        page.wait_for_function("() => { const p = document.querySelector('#detail [data-testid=prompt-text]');"
                               " return p && p.textContent !== 'inflating…'; }")
        read = page.query_selector("#detail button[data-mode=read]")
        if read is not None:
            read.click()
        # The page at its top (filters, the cell's statistics and scatter, the first items), the detail pane
        # scrolled to the judge's part: its numbers, the label bars and the prompt.
        page.evaluate("() => { window.scrollTo(0, 0); const d = document.getElementById('detail');"
                      " d.scrollTop = document.querySelector('#detail [data-testid=judge]').offsetTop - 40; }")
        page.screenshot(path=str(out))
        page.click("#tab-compare")
        page.wait_for_selector("[data-testid=side-by-side]")
        # The paired difference, the items by how far apart A and B rank them, and the first of them with
        # both judges' numbers and prompts side by side: the page's top 1,700 pixels.
        height = min(1700, page.evaluate("document.documentElement.scrollHeight"))
        page.screenshot(path=str(compare), full_page=True, clip={"x": 0, "y": 0, "width": 1440, "height": height})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--limit", type=int, default=30, help="items of the test half scored (default 30)")
    ap.add_argument("--backend", default="llamacpp", help="llamacpp (SmolLM2, default) or mock")
    ap.add_argument("--out", default=str(ROOT / "docs" / "img" / "view.png"))
    ap.add_argument("--compare-out", default=None, help="default: view-compare.png beside --out")
    ap.add_argument("--work", default=None, help="folder for the run and the page (default: a temporary one)")
    ap.add_argument("--shoot", default=None, help=argparse.SUPPRESS)  # the page, inside the namespace
    args = ap.parse_args()
    out = Path(args.out)
    compare = Path(args.compare_out) if args.compare_out else out.with_name("view-compare.png")
    if args.shoot:
        shoot(args.shoot, out, compare)
        return
    why = missing()
    if why is not None:
        sys.exit(f"view_screenshot: {why}")
    with tempfile.TemporaryDirectory(prefix="judge-view-shot-") as tmp:
        work = Path(args.work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        (work / "exp.toml").write_text(CONFIG.format(limit=args.limit, backend=args.backend))
        judge = [sys.executable, "-m", "judge"]
        subprocess.run([*judge, "run", str(work / "exp.toml"), "--data-dir", args.data_dir, "-o", str(work / "run"),
                        "--no-progress"], check=True, cwd=ROOT)
        subprocess.run([*judge, "view", str(work / "run"), "--data-dir", args.data_dir], check=True, cwd=ROOT)
        out.parent.mkdir(parents=True, exist_ok=True)
        proc = run_isolated([sys.executable, __file__, "--shoot", str(work / "run" / "view.html"), "--out", str(out),
                             "--compare-out", str(compare)], cwd=ROOT)
        if proc.returncode != 0:
            sys.exit(f"view_screenshot: the browser failed:\n{proc.stderr[-3000:]}")
    print(json.dumps({"picture": str(out), "compare": str(compare)}))


if __name__ == "__main__":
    main()
