"""The plugin's helpers for merchants' suites: the test clock's named moves, the callbacks a test receives,
and the customer's side of gateway-hosted 3-D Secure."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from samples import CARD, CUSTOMER

from kassa_client import InvalidStateError, verify_redirect
from kassa_client.testing import Sandbox


def until(condition: Callable[[], bool], timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_settlement_makes_a_void_refused_and_a_return_possible(kassa_sandbox: Sandbox) -> None:
    kassa = kassa_sandbox.client
    sale = kassa.sale(client_orderid=kassa_sandbox.orderid(), amount="6.00", currency="USD", cvv2="123",
                      **CARD, **CUSTOMER)  # fmt: skip
    kassa.wait_for_final(sale.orderid)
    kassa_sandbox.settle()
    with pytest.raises(InvalidStateError):
        kassa.void(orderid=sale.orderid, client_orderid=sale.merchant_order_id)
    kassa.refund(orderid=sale.orderid, client_orderid=sale.merchant_order_id)
    assert kassa.wait_for_final(sale.orderid).transaction_type == "reversal"


def test_reconciliation_settles_an_unknown_outcome_and_calls_back(kassa_sandbox: Sandbox) -> None:
    kassa = kassa_sandbox.client
    sale = kassa.sale(client_orderid=kassa_sandbox.orderid(), amount="6.00", currency="USD", cvv2="217",
                      server_callback_url=kassa_sandbox.callback_url, **CARD, **CUSTOMER)  # fmt: skip
    assert until(lambda: kassa.status(orderid=sale.orderid).status == "unknown")
    kassa_sandbox.reconcile()
    assert kassa.wait_for_final(sale.orderid).status == "approved"
    assert kassa_sandbox.wait_for_callback(sale.orderid)["status"] == "approved"
    assert [c["status"] for c in kassa_sandbox.callbacks(sale.orderid)] == ["approved"]


def test_callbacks_are_the_tests_own(kassa_sandbox: Sandbox) -> None:
    assert kassa_sandbox.callbacks() == []
    with pytest.raises(AssertionError, match="no callback"):
        kassa_sandbox.wait_for_callback("1", timeout=0.1)


def test_gateway_hosted_3ds_of_a_direct_sale_is_followed_from_redirect_to(kassa_sandbox: Sandbox) -> None:
    kassa = kassa_sandbox.client
    sale = kassa.sale(client_orderid=kassa_sandbox.orderid(), amount="6.00", currency="USD", cvv2="321",
                      redirect_url="https://shop.example/back", **CARD, **CUSTOMER)  # fmt: skip
    assert until(lambda: bool(kassa.status(orderid=sale.orderid).redirect_to))
    step = kassa.status(orderid=sale.orderid)
    back = kassa_sandbox.browser().follow(step.redirect_to)
    assert verify_redirect(back, kassa_sandbox.control_key).status == "approved"
    assert kassa.wait_for_final(sale.orderid).status == "approved"


def test_a_wrong_challenge_code_declines(kassa_sandbox: Sandbox) -> None:
    kassa = kassa_sandbox.client
    form = kassa.sale_form(client_orderid=kassa_sandbox.orderid(), amount="6.00", currency="USD",
                           redirect_url="https://shop.example/back")  # fmt: skip
    back = kassa_sandbox.browser(challenge_code="000000").pay(form.redirect_url, cvv2="321")
    assert back["status"] == "declined"


def test_an_endpoint_group_is_addressed_by_its_group_form(kassa_sandbox: Sandbox) -> None:
    group = kassa_sandbox.gateway.cli("group", "create", "--merchant", kassa_sandbox.login,
                                      "--endpoints", str(kassa_sandbox.endpoint_id))  # fmt: skip
    kassa = kassa_sandbox.new_client(endpoint_id=group["id"], group=True)
    sale = kassa.sale(client_orderid=kassa_sandbox.orderid(), amount="6.00", currency="USD", cvv2="123",
                      **CARD, **CUSTOMER)  # fmt: skip
    assert sale.end_point_id == str(kassa_sandbox.endpoint_id)
    assert kassa.wait_for_final(sale.orderid).status == "approved"
