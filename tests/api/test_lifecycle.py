"""The card order lifecycle of CONTRACT §7 over HTTP: preauth, capture, void, return, verification."""

from __future__ import annotations

from collections.abc import Callable

from tests.support.gateway import Merchant
from tests.support.operations import (
    LEDGER_OK,
    account_verification,
    approved_order,
    capture,
    final,
    ledger_check,
    refund,
    void,
)


def test_partial_capture_releases_remainder(merchant: Merchant) -> None:
    order = approved_order(merchant, "pc-1", kind="preauth", amount="100.00")
    captured = final(merchant, capture(merchant, "pc-1", order, "60.00"))
    assert captured["status"] == "approved"
    assert captured["transaction-type"] == "capture"
    assert captured["order-stage"] == "capture_approved"
    status = merchant.status(orderid=order).json()
    assert (status["initial-amount"], status["captured-amount"]) == ("100.00", "60.00")
    second = capture(merchant, "pc-1", order, "10.00")
    assert (second.status_code, second.json()["error-code"]) == (400, "6")
    assert ledger_check(merchant) == LEDGER_OK


def test_capture_without_amount_takes_the_whole_authorization(merchant: Merchant) -> None:
    order = approved_order(merchant, "pc-2", kind="preauth", amount="25.50")
    assert final(merchant, capture(merchant, "pc-2", order))["amount"] == "25.50"


def test_multi_capture_endpoint_allows_captures_up_to_the_authorization(
    make_merchant: Callable[..., Merchant],
) -> None:
    merchant = make_merchant(multi_capture=True)
    order = approved_order(merchant, "mc-1", kind="preauth", amount="100.00")
    assert final(merchant, capture(merchant, "mc-1", order, "60.00"))["status"] == "approved"
    assert final(merchant, capture(merchant, "mc-1", order, "40.00"))["status"] == "approved"
    third = capture(merchant, "mc-1", order, "0.01")
    assert (third.status_code, third.json()["error-code"]) == (400, "7")
    assert merchant.status(orderid=order).json()["captured-amount"] == "100.00"
    assert ledger_check(merchant) == LEDGER_OK


def test_capture_above_the_authorization_is_code_7(merchant: Merchant) -> None:
    order = approved_order(merchant, "pc-3", kind="preauth", amount="10.00")
    answer = capture(merchant, "pc-3", order, "10.01")
    assert answer.json()["error-code"] == "7"


def test_return_without_amount_on_a_sale_is_a_full_reversal(merchant: Merchant) -> None:
    order = approved_order(merchant, "rt-1", amount="42.00")
    reversal = final(merchant, refund(merchant, "rt-1", order))
    assert (reversal["status"], reversal["transaction-type"], reversal["amount"]) == ("approved", "reversal", "42.00")
    assert merchant.status(orderid=order).json()["refunded-amount"] == "42.00"


def test_partial_returns_up_to_the_sale_amount_then_code_7(merchant: Merchant) -> None:
    order = approved_order(merchant, "rt-2", amount="100.00")
    assert final(merchant, refund(merchant, "rt-2", order, "30.00"))["status"] == "approved"
    assert final(merchant, refund(merchant, "rt-2", order, "70.00"))["status"] == "approved"
    third = refund(merchant, "rt-2", order, "0.01")
    assert (third.status_code, third.json()["error-code"]) == (400, "7")
    assert ledger_check(merchant) == LEDGER_OK


def test_return_on_a_preauth_cancels_the_hold(merchant: Merchant) -> None:
    order = approved_order(merchant, "rt-3", kind="preauth", amount="80.00")
    cancel = final(merchant, refund(merchant, "rt-3", order))
    assert (cancel["status"], cancel["transaction-type"], cancel["order-stage"]) == (
        "approved",
        "cancel",
        "cancel_approved",
    )
    after = capture(merchant, "rt-3", order)
    assert after.json()["error-code"] == "6"


def test_void_of_an_unsettled_sale_then_capture_or_return_is_code_6(merchant: Merchant) -> None:
    order = approved_order(merchant, "vd-1", kind="preauth")
    assert final(merchant, capture(merchant, "vd-1", order))["status"] == "approved"
    voided = final(merchant, void(merchant, "vd-1", order))
    assert (voided["status"], voided["transaction-type"]) == ("approved", "void")
    assert capture(merchant, "vd-1", order).json()["error-code"] == "6"
    assert refund(merchant, "vd-1", order).json()["error-code"] == "6"
    assert ledger_check(merchant) == LEDGER_OK


def test_void_after_settlement_is_code_6(merchant: Merchant) -> None:
    order = approved_order(merchant, "vd-2")
    merchant.gateway.cli("settle", "--endpoint", str(merchant.endpoint_id))
    answer = void(merchant, "vd-2", order)
    assert (answer.status_code, answer.json()["error-code"]) == (400, "6")
    assert final(merchant, refund(merchant, "vd-2", order, "1.00"))["status"] == "approved"
    assert ledger_check(merchant) == LEDGER_OK


def test_return_needs_an_approved_order(merchant: Merchant) -> None:
    declined = merchant.sale("rt-4", cvv2="116").json()["paynet-order-id"]
    merchant.wait_final(declined)
    assert refund(merchant, "rt-4", declined).json()["error-code"] == "6"


def test_operations_on_another_merchants_order_are_code_5(make_merchant: Callable[..., Merchant]) -> None:
    owner, other = make_merchant(), make_merchant()
    order = approved_order(owner, "own-1")
    assert refund(other, "own-1", order).json()["error-code"] == "5"


def test_account_verification_is_a_zero_amount_authorization(merchant: Merchant) -> None:
    approved = final(merchant, account_verification(merchant, "av-1"))
    assert (approved["status"], approved["transaction-type"], approved["order-stage"]) == (
        "approved",
        "account-verification",
        "verify_approved",
    )
    assert approved["amount"] == "0.00"
    declined = final(merchant, account_verification(merchant, "av-2", cvv2="119"))
    assert (declined["status"], declined["error-code"]) == ("declined", "119")


def test_ledger_balance_shows_held_captured_and_settled(make_merchant: Callable[..., Merchant]) -> None:
    merchant = make_merchant()
    approved_order(merchant, "lb-1", kind="preauth", amount="50.00")
    approved_order(merchant, "lb-2", amount="20.00")
    [usd] = merchant.gateway.cli("ledger", "balance", "--merchant", merchant.login)
    assert usd == {
        "currency": "USD", "mode": "sandbox", "held": "50.00", "captured_unsettled": "20.00", "settled": "0.00",
        "reserved": "0.00",
    }  # fmt: skip
    merchant.gateway.cli("settle", "--endpoint", str(merchant.endpoint_id))
    [usd] = merchant.gateway.cli("ledger", "balance", "--merchant", merchant.login)
    assert (usd["captured_unsettled"], usd["settled"]) == ("0.00", "20.00")
