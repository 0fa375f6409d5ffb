"""Pages opened as a reader opens them: Debian's Chromium, headless, driven by Playwright, with the network off.

Every request that is not for the page's own file is refused and recorded; so is every console error and
every uncaught page error. Where Chromium or Playwright is missing the browser tests are skipped with the
fix, except in CI (MNIST_SPEEDUP_BROWSER=1, which .ci/run sets after installing Chromium), where a missing
browser fails them.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

CHROMIUM = os.environ.get("MNIST_SPEEDUP_CHROMIUM", "/usr/bin/chromium")
#: the flags under which Chromium starts on a machine with no network and no screen (no background fetches)
FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-default-apps", "--disable-extensions",
]  # fmt: skip


@dataclass
class Seen:
    """What the page did besides drawing: console errors, page errors, requests beyond its own file."""

    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def clean(self) -> bool:
        return not self.errors and not self.requests


def need_browser():
    """Playwright's sync API, or a skip naming the fix (a failure where CI promised a browser)."""
    missing = None
    if not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM):
        missing = f"no Chromium at {CHROMIUM}: apt-get install chromium (or set MNIST_SPEEDUP_CHROMIUM)"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing = missing or "Playwright is not installed: pip install -e '.[dev]'"
    if missing:
        if os.environ.get("MNIST_SPEEDUP_BROWSER") == "1":
            pytest.fail(missing)
        pytest.skip(missing)
    return sync_playwright


@contextmanager
def opened(path, *, wait_for: str | None = None, timeout_ms: int = 60_000):
    """The page at ``path`` in headless Chromium, offline; yields (page, seen)."""
    sync_playwright = need_browser()
    url = f"file://{os.path.abspath(path)}"
    seen = Seen()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            context = browser.new_context(offline=True, viewport={"width": 1200, "height": 1000})
            page = context.new_page()
            page.on("console", lambda m: m.type == "error" and seen.errors.append(f"console: {m.text}"))
            page.on("pageerror", lambda e: seen.errors.append(f"page: {e}"))
            page.route("**/*", lambda route: _own_file_only(route, url, seen))
            page.goto(url, wait_until="load", timeout=timeout_ms)
            if wait_for:
                page.wait_for_selector(wait_for, state="attached", timeout=timeout_ms)
            yield page, seen
        finally:
            browser.close()


def _own_file_only(route, url: str, seen: Seen) -> None:
    request = route.request.url
    if request == url or request.startswith("data:") or request.startswith("blob:"):
        route.continue_()
    else:
        seen.requests.append(request)
        route.abort()
