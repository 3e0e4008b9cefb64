"""The console listens on its own address, never on the merchant API's, and not at all unless asked."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from tests.support.gateway import TLS, Gateway


def test_the_console_is_not_served_on_the_api_port(shared_gateway: Gateway) -> None:
    api_root = shared_gateway.base.removesuffix("/paynet")
    assert httpx.get(f"{api_root}/sign-in", verify=TLS).status_code == 404
    assert httpx.get(f"{shared_gateway.console}/sign-in", verify=TLS).status_code == 200


def test_the_api_is_not_served_on_the_console_port(shared_gateway: Gateway) -> None:
    assert httpx.get(f"{shared_gateway.console}/paynet/openapi.json", verify=TLS).status_code == 404


@pytest.mark.backends("sqlite")
def test_without_an_address_there_is_no_console(gateway_factory: Callable[..., Gateway]) -> None:
    gateway = gateway_factory(KASSA_CONSOLE="")
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{gateway.console}/sign-in", verify=TLS)


@pytest.mark.backends("sqlite")
def test_the_demo_prints_the_console_address_and_an_admin_who_can_sign_in(
    gateway_factory: Callable[..., Gateway],
) -> None:
    import re
    import time

    from tests.support.console import ConsoleClient, Login

    gateway = gateway_factory("--demo")
    deadline = time.monotonic() + 10
    while "one-time code" not in (banner := gateway.log_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert f"Operator console: {gateway.console}/" in banner
    password = re.search(r"password:\s+(\S+)", banner)
    secret = re.search(r"add the secret (\S+)", banner)
    assert password and secret, banner
    admin = Login("admin@demo.kassa.local", password[1], secret[1])
    assert ConsoleClient(gateway).sign_in(admin).status_code == 303
