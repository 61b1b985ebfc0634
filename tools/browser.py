"""Headless Chromium for the view's browser tests, its load benchmark and the README's picture.

Debian's ``chromium`` (``apt-get install chromium``; ``.ci/run`` installs it) is driven by Playwright for
Python, told where the browser is: ``playwright install`` (a browser download) is never run. A browser
calls home (component updates, safe browsing, ...), so a script that opens one runs in a network
namespace of its own where only loopback is up: :func:`isolated` wraps a command for that
(``unshare -n``), and :func:`browser_page` starts the browser inside it with a fresh profile.

    python tools/view_screenshot.py          # uses both: re-runs itself isolated, then opens the page
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: Flags that keep the browser quiet: no GPU, no QUIC, no first-run pages, no background traffic.
CHROMIUM_ARGS = ("--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage")
#: Set in the environment of a command that :func:`isolated` wraps, so that it knows it is inside.
ISOLATED_ENV = "JUDGE_NET_ISOLATED"


def chromium() -> str | None:
    """The browser binary: ``JUDGE_CHROMIUM``, else Debian's (its real binary, not the shell wrapper that
    adds flags of its own), else ``chromium`` on PATH; None when there is none."""
    for candidate in (os.environ.get("JUDGE_CHROMIUM"), "/usr/lib/chromium/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def missing() -> str | None:
    """Why a browser cannot be started here (None: it can)."""
    if chromium() is None:
        return "no chromium (apt-get install chromium)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "no Playwright for Python (pip install playwright; the test extra has it)"
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "no unshare (util-linux) or ip (iproute2) for a network namespace"
    probe = subprocess.run(isolated(["true"]), capture_output=True, text=True)
    if probe.returncode != 0:
        return f"no network namespace here ({' '.join(isolated(['true']))}: {probe.stderr.strip()})"
    return None


def isolated(argv: Sequence[str]) -> list[str]:
    """``argv`` run in a network namespace of its own with loopback up (and nothing else); a user other
    than root gets a user namespace too, where it may set the loopback up."""
    unshare = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-r", "-n"]
    return [*unshare, "sh", "-c", 'ip link set lo up && exec "$0" "$@"', *argv]


def run_isolated(argv: Sequence[str], timeout: float = 300, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` isolated (:func:`isolated`), capturing its output as text."""
    env = {**os.environ, ISOLATED_ENV: "1", **kwargs.pop("env", {})}
    return subprocess.run(isolated(argv), capture_output=True, text=True, timeout=timeout, env=env, **kwargs)


def reexec_isolated() -> None:
    """Run this script again inside a network namespace (once), and exit with its status."""
    if os.environ.get(ISOLATED_ENV):
        return
    env = {**os.environ, ISOLATED_ENV: "1"}
    sys.exit(subprocess.call(isolated([sys.executable, *sys.argv]), env=env))


@contextmanager
def browser_page(width: int = 1440, height: int = 900) -> Iterator[Any]:
    """A page of a fresh headless Chromium (a new profile in a temporary folder, removed afterwards).
    Refuses to start outside a network namespace made by :func:`isolated`."""
    if not os.environ.get(ISOLATED_ENV):
        raise RuntimeError("start the browser inside a network namespace (tools.browser.isolated)")
    from playwright.sync_api import sync_playwright

    path = chromium()
    if path is None:
        raise RuntimeError(missing() or "no chromium")
    with tempfile.TemporaryDirectory(prefix="judge-chromium-") as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(profile, executable_path=path, headless=True,
                                                        args=list(CHROMIUM_ARGS),
                                                        viewport={"width": width, "height": height})
        try:
            yield context.pages[0] if context.pages else context.new_page()
        finally:
            context.close()


def open_view(page: Any, html: str | Path, timeout_ms: float = 30_000) -> float:
    """Open a view file and wait until it has drawn itself; returns the milliseconds from navigation to
    that moment as the page measured them (``performance.now()`` when its script finished)."""
    page.goto(Path(html).resolve().as_uri())
    page.wait_for_function("document.body.dataset.ready === '1'", timeout=timeout_ms)
    return float(page.evaluate("window.judgeView.ready"))
