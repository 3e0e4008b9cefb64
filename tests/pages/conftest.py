"""Headless Chromium for the customer-page tests."""

from tests.support.browser import browser, page, screenshots

__all__ = ["browser", "page", "screenshots"]
