"""Open a ``judge estimate --view`` page in headless Chromium and report what a person reads there, as JSON.

Run by tests/test_estimate_view.py inside a network namespace of its own (tools.browser.isolated):

    python tests/estimate_browser.py '{"page": "estimate.html", "shot": "estimate.png"}'

Per estimate shown, in page order: each line of text (a paragraph) and each table row as its cells' texts
(headers included). Every request the browser makes is listed (``requests``), and every script error (``errors``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.browser import browser_page, open_view

#: Each estimate's paragraphs (a line of text each) and table rows (a list of cell texts each), in page order.
READ = """ests => ests.map(e => [...e.children].flatMap(c => c.tagName === 'P' ? [c.textContent]
  : c.tagName === 'TABLE' ? [...c.querySelectorAll('tr')].map(tr => [...tr.children].map(x => x.textContent)) : []))"""


def main() -> None:
    plan = json.loads(sys.argv[1])
    seen: dict[str, Any] = {"errors": [], "requests": []}
    with browser_page() as page:
        page.context.on("request", lambda r: seen["requests"].append(r.url))
        page.on("pageerror", lambda e: seen["errors"].append(str(e)))
        page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
        open_view(page, plan["page"])
        seen["tabs"] = page.eval_on_selector_all("#tabs button", "bs => bs.map(b => b.textContent)")
        seen["estimates"] = page.eval_on_selector_all("[data-testid=estimate]", READ)
        page.screenshot(path=plan["shot"], full_page=True)
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
