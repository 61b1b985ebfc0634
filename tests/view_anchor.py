"""Open a ``judge view`` page at an item's address (``VIEW#item=ID``) in headless Chromium and report what it
shows, as JSON: the item opened, the count of the list and the search box. Run by tests/test_by_group.py
inside a network namespace of its own (tools.browser.isolated):

    python tests/view_anchor.py '{"page": "view.html", "item": "conv-007#4"}'
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.browser import browser_page


def main() -> None:
    plan = json.loads(sys.argv[1])
    errors: list[str] = []
    with browser_page() as page:
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(Path(plan["page"]).resolve().as_uri() + "#item=" + quote(plan["item"], safe=""))
        page.wait_for_function("document.body.dataset.ready === '1'", timeout=30_000)
        page.wait_for_selector("#detail [data-testid=item-id]", timeout=10_000)
        got = {"item": page.text_content("#detail [data-testid=item-id]"),
               "count": int(page.get_attribute("#count", "data-n") or -1),
               "search": page.input_value("#f-search"), "errors": errors}
    print(json.dumps(got))


if __name__ == "__main__":
    main()
