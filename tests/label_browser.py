"""Label items with ``judge label`` in headless Chromium, kill the server mid-session, restart it, go on; report
what the page showed, as JSON.

Run by tests/test_label_browser.py inside a network namespace of its own (tools.browser.isolated), where the
server it starts listens too:

    python tests/label_browser.py '{"command": [...], "shots": "DIR", "before": 3, "after": 2,
                                    "second": "bo", "second_n": 2}'

``command`` starts the server (its address is read from its output). The rater named by the command labels
``before`` items by clicking a point of the scale and Save; the server gets SIGKILL; the rater rates the item
on screen and saves (the page says the server is gone); the server is started again, the page reloaded, and
the rater labels ``after`` more; then ``second`` types their name and labels ``second_n``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.browser import browser_page

ADDRESS = re.compile(r"at (http://127\.0\.0\.1:\d+/)")


def start(command: list[str]) -> tuple[subprocess.Popen[str], str]:
    """The server process and its address, once it says it is serving."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = ADDRESS.search(line)
    if m is None:
        proc.kill()
        raise RuntimeError(f"no address from the server: {line!r} {proc.stderr.read() if proc.stderr else ''}")
    return proc, m.group(1)


def ready(page: Any, labelled: int | None = None) -> dict[str, Any]:
    """Wait until the page has drawn the next item (after ``labelled`` labels of its rater); what it shows."""
    cond = "document.body.dataset.ready === '1'"
    if labelled is not None:
        cond += f" && document.body.dataset.labelled === '{labelled}'"
    page.wait_for_function(f"() => {cond}", timeout=15_000)
    return page.evaluate("""() => ({id: document.body.dataset.itemId, position: Number(document.body.dataset.position),
        labelled: Number(document.body.dataset.labelled),
        progress: document.querySelector('[data-testid=progress]').textContent,
        text: document.querySelector('[data-testid=item]').innerText,
        qualities: document.querySelector('#qualities').innerText})""")


def label(page: Any, value: int, shown: dict[str, Any]) -> dict[str, Any]:
    """Click ``value`` on the first quality's scale and Save; the next item as shown."""
    page.click(f"[data-testid=rate-0-{value}]")
    page.click("[data-testid=save]")
    return ready(page, shown["labelled"] + 1)


def main() -> None:
    plan = json.loads(sys.argv[1])
    shots = Path(plan["shots"])
    shots.mkdir(parents=True, exist_ok=True)
    seen: dict[str, Any] = {"errors": [], "requests": [], "labelled": []}
    values = iter([1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2])
    proc, url = start(plan["command"])
    seen["urls"] = [url]
    try:
        with browser_page(1100, 800) as page:
            page.on("request", lambda r: seen["requests"].append(r.url))
            page.on("pageerror", lambda e: seen["errors"].append(str(e)))
            page.goto(url)
            shown = ready(page)
            seen["first"] = shown
            page.screenshot(path=str(shots / "item.png"))
            for _ in range(plan["before"]):
                v = next(values)
                seen["labelled"].append({"rater": "first", "id": shown["id"], "position": shown["position"],
                                         "value": v})
                shown = label(page, v, shown)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            seen["killed_at"] = shown
            page.click("[data-testid=rate-0-5]")
            page.click("[data-testid=save]")
            page.wait_for_function("() => !document.querySelector('[data-testid=error]').hidden",
                                   timeout=15_000)
            seen["error_when_down"] = page.text_content("[data-testid=error]")
            proc, url = start(plan["command"])
            seen["urls"].append(url)
            page.goto(url)
            shown = ready(page)
            seen["after_restart"] = shown
            for _ in range(plan["after"]):
                v = next(values)
                seen["labelled"].append({"rater": "first", "id": shown["id"], "position": shown["position"],
                                         "value": v})
                shown = label(page, v, shown)
            page.fill("[data-testid=rater]", plan["second"])
            page.click("[data-testid=rater-go]")
            page.wait_for_function(f"() => document.querySelector('[data-testid=progress]').textContent"
                                   f".startsWith({json.dumps(plan['second'] + ':')})", timeout=15_000)
            shown = ready(page)
            seen["second_first"] = shown
            for _ in range(plan["second_n"]):
                v = next(values)
                seen["labelled"].append({"rater": plan["second"], "id": shown["id"], "position": shown["position"],
                                         "value": v})
                shown = label(page, v, shown)
            page.screenshot(path=str(shots / "after.png"))
    finally:
        proc.kill()
        proc.wait()
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
