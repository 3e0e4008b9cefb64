"""The pytest plugin (entry point ``kassa_sandbox``): a Kassa sandbox started once per test session (once
per xdist worker) and, per test, a ``kassa_sandbox`` with a ready client and the session's merchant.

The ``kassa`` executable is the ini option ``kassa_executable``, else ``$KASSA_EXECUTABLE``, else ``kassa``
on PATH (or beside the running Python)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kassa_client.testing.sandbox import (
    CallbackReceiver,
    Merchant,
    Sandbox,
    SandboxGateway,
    find_executable,
    running_sandbox,
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("kassa_executable", "the kassa command the sandbox runs (default: $KASSA_EXECUTABLE or kassa)")


@pytest.fixture(scope="session")
def kassa_gateway(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[SandboxGateway, Merchant, CallbackReceiver]]:
    """The session's sandbox: the gateway process, its merchant and the callback receiver."""
    executable = find_executable(str(request.config.getini("kassa_executable") or "") or None)
    with running_sandbox(tmp_path_factory.mktemp("kassa-sandbox"), executable) as started:
        yield started


@pytest.fixture
def kassa_sandbox(kassa_gateway: tuple[SandboxGateway, Merchant, CallbackReceiver]) -> Iterator[Sandbox]:
    """A ready ``client``, ``login``, ``endpoint_id``, ``control_key``, ``private_key_pem``/``public_key_pem``,
    a ``callback_url`` of this test's own with ``callbacks()``/``wait_for_callback()``, the test clock
    (``advance``, ``settle``, ``expire_authorizations``, ``reconcile``, ``run_recurring``) and
    ``pay_hosted_form``."""
    sandbox = Sandbox(*kassa_gateway)
    try:
        yield sandbox
    finally:
        sandbox.close()
