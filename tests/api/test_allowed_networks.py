"""A merchant's allowed source networks (CIDR, IPv4 and IPv6), set by the operator: API requests from
elsewhere are refused with code 3 before the signature is checked; without a list every address may
ask. The client's address is the one the trusted proxy (loopback, in tests) forwards."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.support.gateway import JSON_ACCEPT, Gateway, Merchant, cli_run, new_merchant


@pytest.fixture
def shop(shared_gateway: Gateway) -> Merchant:
    return new_merchant(shared_gateway, f"m-{uuid.uuid4().hex[:10]}")


def sale_from(m: Merchant, address: str, **fields: str) -> httpx.Response:
    data = m.sale_fields(f"o-{uuid.uuid4().hex[:10]}", **fields)
    return m.gateway.post(f"/api/v2/sale/{m.endpoint_id}", data, {**JSON_ACCEPT, "X-Forwarded-For": address})


def allow(m: Merchant, *networks: str) -> dict[str, object]:
    options = [part for network in networks for part in ("--allow-network", network)]
    updated: dict[str, object] = m.gateway.cli("merchant", "update", "--login", m.login, *options)
    return updated


def refused_as_unknown(answer: httpx.Response) -> bool:
    return answer.status_code == 400 and answer.json()["error-code"] == "3"


def test_without_allowed_networks_any_address_may_ask(shop: Merchant) -> None:
    assert sale_from(shop, "192.0.2.44").status_code == 200
    assert sale_from(shop, "2001:db8::44").status_code == 200


def test_a_request_from_outside_the_allowed_networks_is_refused_with_code_3(shop: Merchant) -> None:
    updated = allow(shop, "203.0.113.0/24", "2001:db8:5::/48")
    assert updated["allowed_networks"] == ["203.0.113.0/24", "2001:db8:5::/48"]
    assert sale_from(shop, "203.0.113.200").status_code == 200
    assert sale_from(shop, "2001:db8:5:ffff::1").status_code == 200
    assert sale_from(shop, "::ffff:203.0.113.9").status_code == 200  # IPv4 on a dual-stack socket
    refused = sale_from(shop, "198.51.100.1")
    assert refused_as_unknown(refused)
    assert refused.json()["error-message"] == f"endpoint {shop.endpoint_id} does not accept requests from 198.51.100.1"
    assert refused_as_unknown(sale_from(shop, "2001:db8:6::1"))


def test_a_request_from_outside_is_refused_before_its_signature_is_checked(shop: Merchant) -> None:
    allow(shop, "203.0.113.0/24")
    assert refused_as_unknown(sale_from(shop, "198.51.100.1", control="0" * 40))
    assert sale_from(shop, "203.0.113.1", control="0" * 40).json()["error-code"] == "2"


def test_clearing_the_allowed_networks_lets_every_address_ask_again(shop: Merchant) -> None:
    allow(shop, "203.0.113.7")
    assert refused_as_unknown(sale_from(shop, "198.51.100.1"))
    cleared = shop.gateway.cli("merchant", "update", "--login", shop.login, "--allow-any-network")
    assert cleared["allowed_networks"] == []
    assert sale_from(shop, "198.51.100.1").status_code == 200


def test_show_and_list_name_the_allowed_networks(shop: Merchant) -> None:
    allow(shop, "203.0.113.7", "2001:DB8::/32")
    shown = shop.gateway.cli("merchant", "show", "--login", shop.login)
    assert shown["allowed_networks"] == ["203.0.113.7/32", "2001:db8::/32"]
    listed = {m["login"]: m for m in shop.gateway.cli("merchant", "list")}
    assert listed[shop.login]["allowed_networks"] == ["203.0.113.7/32", "2001:db8::/32"]
    human = cli_run(shop.gateway, "merchant", "show", "--login", shop.login).stdout
    assert "allowed networks: 203.0.113.7/32, 2001:db8::/32" in human


@pytest.mark.parametrize(
    ("network", "problem"),
    [
        ("203.0.113.5/24", "203.0.113.5/24 has host bits set: did you mean 203.0.113.0/24?"),
        ("203.0.113.0/33", "203.0.113.0/33 is not an IP address or network (CIDR)"),
        ("example.com", "example.com is not an IP address or network (CIDR)"),
    ],
)
def test_an_unusable_network_is_refused_and_nothing_changes(shop: Merchant, network: str, problem: str) -> None:
    done = cli_run(shop.gateway, "merchant", "update", "--login", shop.login, "--allow-network", network)
    assert done.returncode != 0
    assert problem in done.stderr
    assert shop.gateway.cli("merchant", "show", "--login", shop.login)["allowed_networks"] == []
