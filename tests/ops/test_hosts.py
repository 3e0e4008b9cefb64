"""The operator console and the operations listener answer only requests that name them in ``Host``: their
bound address, ``localhost`` and loopback addresses on a loopback bind, any address on a bind to every
interface, and the names of ``KASSA_OPERATOR_HOSTS``. A page on a rebinding domain (a name of its own that
resolves to the listener's address) is answered 421, so the browser gives it nothing to read."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from kassa.ops.hosts import HostRule
from tests.support.gateway import TLS, Gateway

FOREIGN = ("evil.example", "rebind.127.0.0.1.nip.io", "localhost.evil.example", "")


def test_a_listener_on_one_address_answers_that_address_and_the_configured_names_only() -> None:
    rule = HostRule.of("10.0.0.5", ("console.ops.example", "fd00::7"))
    for host in ("10.0.0.5", "10.0.0.5:9101", "console.ops.example", "CONSOLE.ops.example.:443", "[fd00::7]:8081"):
        assert rule.accepts(host), host
    for host in (*FOREIGN, "10.0.0.6", "localhost", "127.0.0.1:9101", "ops.example", "console.ops.example.evil"):
        assert not rule.accepts(host), host


def test_a_loopback_listener_answers_localhost_and_loopback_addresses() -> None:
    for bound in ("127.0.0.1", "::1", "localhost"):
        rule = HostRule.of(bound, ())
        for host in ("127.0.0.1:8081", "localhost:8081", "LOCALHOST", "localhost.", "[::1]:8081", "127.0.0.2"):
            assert rule.accepts(host), (bound, host)
        for host in (*FOREIGN, "10.0.0.5:8081", "[fd00::7]"):
            assert not rule.accepts(host), (bound, host)


def test_a_listener_on_every_interface_answers_any_address_and_localhost_but_no_other_name() -> None:
    for bound in ("0.0.0.0", "::"):  # noqa: S104 (addresses a listener is bound to, as a rule reads them)
        rule = HostRule.of(bound, ("ops.example",))
        for host in ("10.0.0.5:9101", "[fe80::1]:9101", "192.168.1.2", "localhost:9101", "ops.example"):
            assert rule.accepts(host), (bound, host)
        for host in FOREIGN:
            assert not rule.accepts(host), (bound, host)


def test_a_missing_or_malformed_host_is_refused() -> None:
    rule = HostRule.of("127.0.0.1", ())
    for host in (None, "", ":8081", "[::1", "127.0.0.1:8081:1", "local host"):
        assert not rule.accepts(host), host


def _status(url: str, host: str) -> int:
    return httpx.get(url, headers={"Host": host}, timeout=10, verify=TLS).status_code


def test_the_console_and_the_operations_listener_answer_a_foreign_host_421(shared_gateway: Gateway) -> None:
    pages = [f"{shared_gateway.console}/sign-in", f"{shared_gateway.console}/static/console.css"]
    pages += [f"{shared_gateway.ops}{path}" for path in ("/metrics", "/livez", "/readyz")]
    for url in pages:
        port = url.split(":")[2].split("/")[0]
        for host in ("evil.example", f"evil.example:{port}", f"rebind.127.0.0.1.nip.io:{port}"):
            assert _status(url, host) == 421, (url, host)
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost"):
            assert _status(url, host) == 200, (url, host)
    refused = httpx.get(pages[0], headers={"Host": "evil.example"}, timeout=10, verify=TLS)
    assert "evil.example" not in refused.text


def test_the_merchant_api_answers_whatever_host_it_is_addressed_by(shared_gateway: Gateway) -> None:
    assert _status(f"{shared_gateway.base}/openapi.json", "pay.merchant-proxy.example") == 200


@pytest.mark.backends("sqlite")
def test_names_the_operator_sets_are_answered_too(gateway_factory: Callable[..., Gateway]) -> None:
    gateway = gateway_factory(KASSA_OPERATOR_HOSTS="console.ops.example, metrics.ops.example")
    for url in (f"{gateway.console}/sign-in", f"{gateway.ops}/livez"):
        assert _status(url, "console.ops.example") == 200
        assert _status(url, "metrics.ops.example:443") == 200
        assert _status(url, "evil.example") == 421
