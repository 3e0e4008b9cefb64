"""A callback whose URL cannot be sent is an attempt like any other: recorded with its reason, retried on
the schedule, then failed; it never stays pending for ever, holding back the order's later callbacks."""

from __future__ import annotations

import time

from tests.support.databases import run_sql
from tests.support.gateway import Gateway, Merchant
from tests.support.operations import final, preauth, refund

BASE_DELAY, BACKOFF = 15, 1.435  # the defaults of KASSA_CALLBACK_BASE_DELAY and KASSA_CALLBACK_BACKOFF
MAX_ATTEMPTS = 4  # tests/conftest.py CLOCK_ENV

UNSENDABLE = {
    "backslash": "http://127.0.0.1\\@8.8.8.8/cb",
    "port": "http://127.0.0.1:99999/cb",
    "space": "http://shop .example/cb",
    "bracket": "http://[::1/cb",
}


def _attempts(gateway: Gateway, order: str) -> list[tuple[str, str]]:
    rows = run_sql(
        gateway.database_url,
        "SELECT a.url, a.error FROM callback_attempts a JOIN callbacks c ON c.id = a.callback_id "
        f"WHERE c.order_id = {int(order)} ORDER BY a.id",
    )
    return [(str(url), str(error)) for url, error in rows]


def _wait_attempts(gateway: Gateway, orders: list[str], count: int, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while any(len(_attempts(gateway, order)) < count for order in orders):
        assert time.monotonic() < deadline, f"no attempt {count} at every callback"
        time.sleep(0.05)


def _order_notifying(merchant: Merchant, name: str, url: str) -> str:
    """An approved preauth whose notify_url is ``url``, written past the request-time check (as one that
    let it through, or an older version's, would have stored it), then cancelled: its callback is queued."""
    order = final(merchant, preauth(merchant, name, "5.00"))["paynet-order-id"]
    escaped = url.replace("'", "''")
    run_sql(merchant.gateway.database_url, f"UPDATE orders SET notify_url = '{escaped}' WHERE id = {int(order)}")
    assert final(merchant, refund(merchant, name, order))["status"] == "approved"
    return order


def test_callback_to_unsendable_url_is_recorded_as_failed_attempt_and_fails_on_schedule(
    clock_merchant: Merchant,
) -> None:
    gateway = clock_merchant.gateway
    orders = {kind: _order_notifying(clock_merchant, f"poison-{kind}", url) for kind, url in UNSENDABLE.items()}
    _wait_attempts(gateway, list(orders.values()), 1)
    for kind, order in orders.items():
        [(_, error)] = _attempts(gateway, order)
        assert error.startswith("unsendable URL"), (kind, error)
    for attempts in range(1, MAX_ATTEMPTS):
        gateway.advance(BASE_DELAY * BACKOFF ** (attempts - 1))
        _wait_attempts(gateway, list(orders.values()), attempts + 1)
    for order in orders.values():
        [callback] = gateway.cli("callbacks", "list", "--order", order)
        assert (callback["status"], len(callback["attempts"])) == ("failed", MAX_ATTEMPTS)


def test_callback_to_an_internationalised_host_name_goes_to_its_punycode_form(clock_merchant: Merchant) -> None:
    order = _order_notifying(clock_merchant, "idn-1", "http://bücher.example/cb?shop=ü")
    _wait_attempts(clock_merchant.gateway, [order], 1)
    [(url, error)] = _attempts(clock_merchant.gateway, order)
    assert url.startswith("http://xn--bcher-kva.example/cb?shop=%C3%BC&status=approved&")
    assert not error.startswith("unsendable URL")  # sent: the name does not resolve
