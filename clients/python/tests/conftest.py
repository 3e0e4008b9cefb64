"""The client's tests run against a real Kassa that the client's own pytest plugin starts (entry point
``kassa_sandbox``); v2 operations run in both formats, JSON and classic."""

from __future__ import annotations

import pytest

from kassa_client import Kassa
from kassa_client.testing import Sandbox


@pytest.fixture(params=["json", "classic"])
def client(request: pytest.FixtureRequest, kassa_sandbox: Sandbox) -> Kassa:
    """The sandbox merchant's client in each format (its merchant allows the classic one)."""
    return kassa_sandbox.new_client(format=request.param)
