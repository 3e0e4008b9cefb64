"""Rate limits (CONTRACT §12, code 11): per client address and per merchant, answered 429 with
``Retry-After`` in the format the request would get, before the body is read or the signature checked;
budgets refill as the gateway's clock moves (no sleeping). Clients are told apart by the
``X-Forwarded-For`` a trusted proxy (the default: loopback) sets, so each test has addresses of its own."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import httpx
import pytest

from tests.ops.test_probes import scrape, value
from tests.support.databases import fresh_postgres
from tests.support.gateway import (
    JSON_ACCEPT,
    TLS,
    Gateway,
    Merchant,
    classic_fields,
    new_classic_merchant,
    new_merchant,
    sha1,
)

LIMITS = {
    "KASSA_TEST_CLOCK": "1",
    "KASSA_ADDRESS_RATE": "1",
    "KASSA_ADDRESS_BURST": "3",
    "KASSA_MERCHANT_RATE": "1",
    "KASSA_MERCHANT_BURST": "6",
}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A gateway whose clock moves, with a burst of 3 per address and 6 per merchant, then 1 a second."""
    data_dir = tmp_path_factory.mktemp(f"limits-{request.param}")
    with ExitStack() as stack:
        url = f"sqlite:///{data_dir / 'kassa.db'}"
        if request.param == "postgresql":
            url = stack.enter_context(fresh_postgres())
        started = Gateway(url, data_dir, extra_env=LIMITS).start()
        stack.callback(started.stop)
        yield started


@pytest.fixture
def address() -> Callable[[], str]:
    """A fresh client address for each call (documentation ranges: nobody else's budget)."""
    return lambda: f"2001:db8:{uuid.uuid4().hex[:4]}:{uuid.uuid4().hex[:4]}::7"


def status(m: Merchant, client: str, *, accept: dict[str, str] | None = None, **data: str) -> httpx.Response:
    body = {"login": m.login, "client_orderid": "o-1", "orderid": "1"}
    body["control"] = sha1(m.login, "o-1", "1", m.control_key)
    body.update(data)
    headers = {**(JSON_ACCEPT if accept is None else accept), "X-Forwarded-For": client}
    return m.gateway.post(f"/api/v2/status/{m.endpoint_id}", body, headers)


def refused_for_rate(answer: httpx.Response) -> bool:
    return answer.status_code == 429 and answer.json()["error-code"] == "11"


def served(answer: httpx.Response) -> bool:
    """Checked all the way to the order lookup (there is no order 1 of this merchant: code 5)."""
    return answer.json()["error-code"] == "5"


def test_an_address_past_its_burst_gets_429_code_11_with_retry_after_until_the_clock_moves(
    gateway: Gateway, address: Callable[[], str]
) -> None:
    shop, client = new_merchant(gateway, f"m-{uuid.uuid4().hex[:10]}"), address()
    assert all(served(status(shop, client)) for _ in range(3))
    refused = status(shop, client)
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "1"
    assert refused.json()["type"] == "validation-error"
    assert (refused.json()["error-code"], refused.json()["error-message"]) == ("11", "too many requests")
    assert served(status(shop, address()))  # another client is not held up
    gateway.advance(1)
    assert served(status(shop, client))


def test_an_address_past_its_burst_is_refused_before_its_body_is_read_or_its_signature_checked(
    gateway: Gateway, address: Callable[[], str]
) -> None:
    shop, client = new_merchant(gateway, f"m-{uuid.uuid4().hex[:10]}"), address()
    for _ in range(3):
        status(shop, client, control="0" * 40)
    assert refused_for_rate(status(shop, client, control="0" * 40))
    headers = {**JSON_ACCEPT, "X-Forwarded-For": client, "Content-Type": "application/x-www-form-urlencoded"}
    garbage = httpx.post(
        f"{gateway.base}/api/v2/status/{shop.endpoint_id}", content=b"\xff\xfe=%%", headers=headers, verify=TLS
    )
    assert refused_for_rate(garbage)


def test_an_ipv6_client_cannot_escape_its_limit_by_changing_addresses_within_its_slash_64(
    gateway: Gateway,
) -> None:
    shop, prefix = new_merchant(gateway, f"m-{uuid.uuid4().hex[:10]}"), f"2001:db8:{uuid.uuid4().hex[:4]}:1"
    answers = [status(shop, f"{prefix}:{n:x}::1") for n in range(4)]
    assert [served(a) for a in answers[:3]] == [True] * 3
    assert refused_for_rate(answers[3])


def test_a_classic_client_past_its_burst_gets_code_11_in_the_classic_format_with_retry_after(
    gateway: Gateway, address: Callable[[], str]
) -> None:
    shop, client = new_classic_merchant(gateway, f"m-{uuid.uuid4().hex[:10]}"), address()
    for _ in range(3):
        status(shop, client, accept={})
    refused = status(shop, client, accept={})
    assert refused.status_code == 200  # classic clients read any other status as a network failure
    assert refused.headers["content-type"] == "text/html; charset=utf-8"
    assert refused.headers["retry-after"] == "1"
    assert dict(classic_fields(refused.content))["error-code"] == "11"


def test_a_merchant_past_its_burst_is_refused_from_any_address_and_other_merchants_are_not(
    gateway: Gateway, address: Callable[[], str]
) -> None:
    busy, calm = (new_merchant(gateway, f"m-{uuid.uuid4().hex[:10]}") for _ in range(2))
    assert all(served(status(busy, address())) for _ in range(6))
    refused = status(busy, address())
    assert refused_for_rate(refused)
    assert refused.headers["retry-after"] == "1"
    assert served(status(calm, address()))
    gateway.advance(1)
    assert served(status(busy, address()))


def test_refusals_for_rate_are_counted_by_whose_rate_it_was(gateway: Gateway, address: Callable[[], str]) -> None:
    def refused(reason: str) -> float:
        return value(scrape(gateway), "kassa_refused_requests_total", reason=reason)

    before = {reason: refused(reason) for reason in ("address_rate", "merchant_rate")}
    shop, client = new_merchant(gateway, f"m-{uuid.uuid4().hex[:10]}"), address()
    assert refused_for_rate([status(shop, client) for _ in range(4)][-1])  # the address's fourth
    busy = new_merchant(gateway, f"m-{uuid.uuid4().hex[:10]}")
    assert refused_for_rate([status(busy, address()) for _ in range(7)][-1])  # the merchant's seventh
    assert refused("address_rate") == before["address_rate"] + 1
    assert refused("merchant_rate") == before["merchant_rate"] + 1


def test_customer_pages_are_limited_per_address_too(gateway: Gateway, address: Callable[[], str]) -> None:
    client = address()

    def page() -> httpx.Response:
        return httpx.get(f"{gateway.base}/form/no-such-token", headers={"X-Forwarded-For": client}, verify=TLS)

    assert [page().status_code for _ in range(3)] == [410, 410, 410]  # no such form: gone
    refused = page()
    assert (refused.status_code, refused.headers["retry-after"]) == (429, "1")


def test_an_address_past_its_burst_on_no_operation_gets_code_11_in_the_contracts_format(
    gateway: Gateway, address: Callable[[], str]
) -> None:
    client = address()

    def nowhere() -> httpx.Response:
        headers = {**JSON_ACCEPT, "X-Forwarded-For": client}
        return httpx.get(f"{gateway.base}/api/v2/no-such-operation/1", headers=headers, verify=TLS)

    assert [nowhere().status_code for _ in range(3)] == [404, 404, 404]
    refused = nowhere()
    assert (refused.status_code, refused.headers["retry-after"]) == (429, "1")
    assert (refused.json()["type"], refused.json()["error-code"]) == ("validation-error", "11")


def test_without_trusted_proxies_x_forwarded_for_is_ignored_and_the_peer_address_is_limited(
    gateway_factory: Callable[..., Gateway], address: Callable[[], str]
) -> None:
    plain = gateway_factory(**LIMITS, KASSA_TRUSTED_PROXIES="")
    shop = new_merchant(plain, f"m-{uuid.uuid4().hex[:10]}")
    plain.advance(10)  # the start-up's readiness checks came from the same loopback address
    answers = [status(shop, address()) for _ in range(4)]
    assert [served(a) for a in answers[:3]] == [True] * 3
    assert refused_for_rate(answers[3])
