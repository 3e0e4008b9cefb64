"""Capture and return as the original gateway's PHP client sends them (issue 16, item 9): neither
`amount` nor `currency` in the body, but both signed, as the order's amount in minor units and currency.
They capture or return all that is left; a control that matches neither formula is code 2, whether or
not the order exists."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import httpx

from tests.support.gateway import (
    JSON_ACCEPT,
    Gateway,
    Merchant,
    minor_units,
    new_classic_merchant,
    post_without_accept,
    sha1,
)
from tests.support.operations import approved_order, capture, final, preauth, refund


def php_signed(
    m: Merchant, operation: str, client_orderid: str, orderid: str, order_amount: str, **headers: str
) -> httpx.Response:
    """The PHP client's capture (or return): the order's amount and currency signed, not sent."""
    data = {"login": m.login, "client_orderid": client_orderid, "orderid": orderid}
    data["control"] = sha1(m.login, client_orderid, orderid, minor_units(order_amount), m.currency, m.control_key)
    return m.gateway.post(f"/api/v2/{operation}/{m.endpoint_id}", data, {**JSON_ACCEPT, **headers})


def _approved_preauth(m: Merchant, client_orderid: str, amount: str) -> str:
    order = str(preauth(m, client_orderid, amount).json()["paynet-order-id"])
    assert m.wait_final(order)["status"] == "approved"
    return order


def test_capture_signed_like_the_php_client_captures_the_whole_authorization(merchant: Merchant) -> None:
    order = _approved_preauth(merchant, "php-1", "25.50")
    captured = final(merchant, php_signed(merchant, "capture", "php-1", order, "25.50"))
    assert (captured["status"], captured["transaction-type"], captured["amount"]) == ("approved", "capture", "25.50")


def test_return_signed_like_the_php_client_returns_the_whole_sale(merchant: Merchant) -> None:
    order = approved_order(merchant, "php-2", amount="42.00")
    reversal = final(merchant, php_signed(merchant, "return", "php-2", order, "42.00"))
    assert (reversal["status"], reversal["transaction-type"], reversal["amount"]) == ("approved", "reversal", "42.00")
    assert merchant.status(orderid=order).json()["refunded-amount"] == "42.00"


def test_php_signed_capture_of_a_partly_captured_authorization_captures_the_remainder(
    make_merchant: Callable[..., Merchant],
) -> None:
    m = make_merchant(multi_capture=True)
    order = _approved_preauth(m, "php-3", "100.00")
    assert final(m, capture(m, "php-3", order, "60.00"))["status"] == "approved"
    assert final(m, php_signed(m, "capture", "php-3", order, "100.00"))["amount"] == "40.00"
    assert m.status(orderid=order).json()["captured-amount"] == "100.00"


def test_php_signed_return_of_a_partly_returned_sale_returns_the_remainder(merchant: Merchant) -> None:
    order = approved_order(merchant, "php-4", amount="100.00")
    assert final(merchant, refund(merchant, "php-4", order, "30.00"))["status"] == "approved"
    assert final(merchant, php_signed(merchant, "return", "php-4", order, "100.00"))["amount"] == "70.00"
    assert merchant.status(orderid=order).json()["refunded-amount"] == "100.00"


def test_php_style_control_with_another_amount_is_code_2_and_moves_nothing(merchant: Merchant) -> None:
    order = _approved_preauth(merchant, "php-5", "25.50")
    answer = php_signed(merchant, "capture", "php-5", order, "25.49")
    assert (answer.status_code, answer.json()["error-code"]) == (400, "2")
    assert merchant.status(orderid=order).json()["transaction-type"] == "preauth"


def test_a_wrong_control_never_tells_whether_the_order_exists(merchant: Merchant) -> None:
    order = _approved_preauth(merchant, "php-6", "10.00")
    refusals = [
        php_signed(merchant, "capture", "php-6", order, "10.01"),  # the order exists
        php_signed(merchant, "capture", "php-6", "987654321987", "10.00"),  # no such order
        php_signed(merchant, "capture", "other", order, "10.00"),  # another client_orderid
    ]
    bodies = [r.json() for r in refusals]
    for body in bodies:
        del body["serial-number"], body["merchant-order-id"]
    assert [r.status_code for r in refusals] == [400] * 3
    assert bodies[0]["error-code"] == "2"
    assert bodies == [bodies[0]] * 3
    assert merchant.status(orderid=order).json()["transaction-type"] == "preauth"


def test_a_wrong_php_style_control_does_not_use_up_the_idempotency_key(merchant: Merchant) -> None:
    order = approved_order(merchant, "php-7", amount="10.00")
    key = {"Idempotency-Key": str(uuid.uuid4())}
    assert php_signed(merchant, "return", "php-7", order, "9.99", **key).json()["error-code"] == "2"
    assert final(merchant, php_signed(merchant, "return", "php-7", order, "10.00", **key))["status"] == "approved"


def test_php_client_capture_in_the_classic_format(shared_gateway: Gateway) -> None:
    m = new_classic_merchant(shared_gateway, f"php-{uuid.uuid4().hex[:10]}")
    order = _approved_preauth(m, "php-8", "12.34")
    data = {"login": m.login, "client_orderid": "php-8", "orderid": order}
    data["control"] = sha1(m.login, "php-8", order, "1234", m.currency, m.control_key)
    answer = post_without_accept(m.gateway, f"/api/v2/capture/{m.endpoint_id}", data)
    assert answer.headers["content-type"].startswith("text/html")
    assert "status=processing" in answer.text
    assert m.wait_final(order)["captured-amount"] == "12.34"
