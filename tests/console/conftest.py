"""Headless Chromium and signed-in operators for the console's tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator

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


@pytest.fixture
def console_as(shared_gateway: Gateway, operator_of: Callable[..., Login]) -> Iterator[Callable[[str], ConsoleClient]]:
    """A console client signed in as a new operator of the given role."""
    clients: list[ConsoleClient] = []

    def sign_in(role: str) -> ConsoleClient:
        client = ConsoleClient(shared_gateway)
        clients.append(client)
        answer = client.sign_in(operator_of(role))
        assert answer.status_code == 303, answer.text
        return client

    yield sign_in
    for client in clients:
        client.close()
