"""Drive a ``judge view`` page in headless Chromium and report what a person sees there, as JSON.

Run by tests/test_view_browser.py inside a network namespace of its own (tools.browser.isolated), one
browser for the whole scenario:

    python tests/view_browser.py '{"page": "view.html", "shots": "DIR", "method": "M", "set": "S",
                                   "search": "word", "compare": ["set label", "A label", "B label"]}'

It opens the page, reads the item count, the first page of rows and the item opened first (its prompt);
filters to one method and set (count, scatter points, the cell's statistics), to failed items, then by
text; opens another row; and switches to the side-by-side section (the paired difference, the order of
the shared items, both prompts of the item opened). Each view is saved as a screenshot in ``shots``.
Every request the browser makes on the way is listed (``requests``), the page file's own included.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.browser import browser_page, open_view

#: The prompt's block is drawn, and its text (for a cell with prompts) inflated.
PROMPT_READY = ("(root) => { if (!document.querySelector(root + ' [data-testid=prompt]')) return false; "
                "const p = document.querySelector(root + ' [data-testid=prompt-text]'); "
                "return p === null || p.textContent !== 'inflating…'; }")


def rows(page: Any, selector: str = "[data-testid=rows] tbody tr") -> list[list[int]]:
    return page.eval_on_selector_all(selector, "trs => trs.map(t => [Number(t.dataset.cell), Number(t.dataset.row)])")


def count(page: Any, selector: str = "#count") -> int:
    return int(page.get_attribute(selector, "data-n"))


def wait_count(page: Any, before: int, selector: str = "#count") -> int:
    """The count once the list has been drawn again after a filter (it changes, or stays after a moment)."""
    try:
        page.wait_for_function(f"() => Number(document.querySelector('{selector}').dataset.n) !== {before}",
                               timeout=2000)
    except Exception:  # the filter kept the same number of items
        pass
    return count(page, selector)


def opened(page: Any, root: str = "#detail") -> dict[str, Any]:
    """The judge block(s) shown in the detail pane: which row, and the prompt text as displayed."""
    page.wait_for_function(PROMPT_READY, arg=root)
    blocks = page.eval_on_selector_all(
        f"{root} [data-testid=judge]",
        "bs => bs.map(b => ({cell: Number(b.dataset.cell), row: Number(b.dataset.row), "
        "prompt: (b.querySelector('[data-testid=prompt-text]') || {}).textContent || null}))")
    return {"blocks": blocks, "item": page.text_content(f"{root} [data-testid=item-id]")}


def main() -> None:
    plan = json.loads(sys.argv[1])
    shots = Path(plan["shots"])
    shots.mkdir(parents=True, exist_ok=True)
    seen: dict[str, Any] = {"errors": []}
    with browser_page() as page:
        # Every request of the browser context (the page, its frames, any worker), from the file's own
        # navigation on: the page promises to read nothing but itself.
        seen["requests"] = []
        page.context.on("request", lambda r: seen["requests"].append(r.url))
        page.on("pageerror", lambda e: seen["errors"].append(str(e)))
        page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
        seen["ready_ms"] = open_view(page, plan["page"])
        seen["count"] = count(page)
        seen["first_page"] = rows(page)
        seen["first_open"] = opened(page)
        page.screenshot(path=str(shots / "items.png"))

        before = seen["count"]
        page.select_option("#f-method", plan["method"])
        seen["count_method"] = before = wait_count(page, before)
        page.select_option("#f-set", plan["set"])
        seen["count_cell"] = before = wait_count(page, before)
        seen["scatter_points"] = page.eval_on_selector_all("#cell-panel svg circle", "cs => cs.length")
        seen["cell_stats"] = page.text_content("[data-testid=cell-stats]")
        seen["cell_page"] = rows(page)
        page.screenshot(path=str(shots / "cell.png"))
        page.select_option("#f-failed", "failed")
        seen["count_failed"] = before = wait_count(page, before)
        seen["failed_rows"] = rows(page)
        page.select_option("#f-failed", "")
        before = wait_count(page, before)
        page.fill("#f-search", plan["search"])
        seen["count_search"] = before = wait_count(page, before)
        seen["search_rows"] = rows(page)
        page.click("[data-testid=rows] tbody tr:nth-child(2)")
        seen["clicked"] = opened(page)
        page.screenshot(path=str(shots / "search.png"))

        page.click("#tab-compare")
        group, a, b = plan["compare"]
        page.select_option("#c-group", label=group)
        page.select_option("#c-a", label=a)
        page.select_option("#c-b", label=b)
        page.wait_for_selector("[data-testid=side-by-side]")
        seen["paired_diff"] = page.text_content("[data-testid=paired-diff]")
        seen["pair_stats"] = page.text_content("#c-stats")
        seen["pair_count"] = count(page, "#c-count")
        seen["pair_order"] = page.eval_on_selector_all("[data-testid=pair-rows] tbody tr", "trs => trs.map(t => t.dataset.id)")
        seen["side_by_side"] = opened(page, "#c-detail")
        page.screenshot(path=str(shots / "compare.png"), full_page=True)
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
