"""Headless Chromium (Debian's, driven by Playwright) for the tests of customer pages and of the console:
each of their conftest modules imports these fixtures."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Module-scoped: Playwright's sync API keeps an event loop running in this thread until it stops,
    and tests elsewhere run their own loops."""
    executable = shutil.which("chromium") or "/usr/bin/chromium"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 390, "height": 844})  # a phone-sized screen
    opened = context.new_page()
    yield opened
    context.close()


@dataclass(frozen=True)
class Screenshots:
    """Pictures of pages for the docs, taken under `make screenshots` (``KASSA_SCREENSHOT_DIR``) and not
    otherwise: a full-page capture asserts nothing, and cost Chromium 30% of the CPU of the console's
    every-page test."""

    folder: Path | None

    def take(self, page: Page, name: str, *, full_page: bool = True) -> None:
        if self.folder is not None:
            page.screenshot(path=str(self.folder / name), full_page=full_page)


@pytest.fixture(scope="session")
def screenshots() -> Screenshots:
    configured = os.environ.get("KASSA_SCREENSHOT_DIR")
    if not configured:
        return Screenshots(None)
    folder = Path(configured)
    folder.mkdir(parents=True, exist_ok=True)
    return Screenshots(folder)
