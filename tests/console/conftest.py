"""Headless Chromium and signed-in operators for the console's tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support.browser import browser, page, screenshots
from tests.support.console import ConsoleClient, Login, new_operator
from tests.support.gateway import Gateway

__all__ = ["browser", "page", "screenshots"]


@pytest.fixture
def operator_of(shared_gateway: Gateway) -> Callable[..., Login]:
    """A new operator of the given role on the shared gateway (each test its own: one-time codes are
    accepted once, and lockouts must not leak between tests)."""
    return lambda role, **options: new_operator(shared_gateway, role, **options)


_SIGNED_IN: dict[tuple[str, str], ConsoleClient] = {}


@pytest.fixture
def console_as(shared_gateway: Gateway, operator_of: Callable[..., Login]) -> Callable[[str], ConsoleClient]:
    """A console client signed in as an operator of the given role, one per role and gateway for the whole
    session (a session outlives the suite): tests that sign out, lock or change an operator make their own
    with ``operator_of``."""

    def sign_in(role: str) -> ConsoleClient:
        key = (shared_gateway.console, role)
        if key not in _SIGNED_IN:
            client = ConsoleClient(shared_gateway)
            answer = client.sign_in(operator_of(role))
            assert answer.status_code == 303, answer.text
            _SIGNED_IN[key] = client
        return _SIGNED_IN[key]

    return sign_in
