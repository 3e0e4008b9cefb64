"""The rebills of CONTRACT §17 over HTTP: make-rebill-sale as make-rebill, make-rebill-preauth as a preauth
on the stored card (captured, cancelled as any preauth), and on all three ``enumerate_amounts`` (lower
amounts tried in turn after a decline, until one is approved) and ``recurrent_scenario``. The sandbox
declines a card payment whose amount ends in 116 minor units for insufficient funds (docs/api.md)."""

from __future__ import annotations

import uuid

import pytest

from tests.api.test_card_refs import rebill, refused, stored_card
from tests.support.gateway import Gateway, Merchant, new_merchant, sha1
from tests.support.operations import LEDGER_OK, capture, final, ledger_check, refund

REBILLS = ("make-rebill", "make-rebill-sale", "make-rebill-preauth")


@pytest.fixture(scope="module")
def shop(shared_gateway: Gateway) -> Merchant:
    return new_merchant(shared_gateway, f"m-{uuid.uuid4().hex[:10]}")


@pytest.fixture(scope="module")
def ref(shop: Merchant) -> str:
    """A card reference of ``shop``'s, its card approved by the sandbox whatever the amount."""
    return stored_card(shop, card_printed_name="Jane Doe")


def _id() -> str:
    return f"rb-{uuid.uuid4().hex[:10]}"


def test_make_rebill_sale_charges_the_stored_card_as_make_rebill_does(shop: Merchant, ref: str) -> None:
    charged = final(shop, rebill(shop, "make-rebill-sale", ref, "7.50"))
    shown = (charged["status"], charged["transaction-type"], charged["amount"], charged["card-ref-id"])
    assert shown == ("approved", "sale", "7.50", ref)
    assert (charged["last-four-digits"], charged["cardholder-name"]) == ("1111", "Jane Doe")


def test_a_rebill_preauth_holds_on_the_stored_card_and_is_captured_as_any_preauth(shop: Merchant, ref: str) -> None:
    client_orderid = _id()
    held = final(shop, rebill(shop, "make-rebill-preauth", ref, "20.00", client_orderid=client_orderid))
    assert (held["status"], held["transaction-type"], held["order-stage"]) == ("approved", "preauth", "auth_approved")
    order = held["paynet-order-id"]
    assert final(shop, capture(shop, client_orderid, order, "15.00"))["status"] == "approved"
    status = shop.status(orderid=order).json()
    assert (status["initial-amount"], status["captured-amount"]) == ("20.00", "15.00")
    assert ledger_check(shop) == LEDGER_OK


def test_a_rebill_preauth_is_cancelled_whole_by_a_return(shop: Merchant, ref: str) -> None:
    client_orderid = _id()
    held = final(shop, rebill(shop, "make-rebill-preauth", ref, "9.00", client_orderid=client_orderid))
    cancelled = final(shop, refund(shop, client_orderid, held["paynet-order-id"]))
    assert (cancelled["status"], cancelled["transaction-type"], cancelled["amount"]) == ("approved", "cancel", "9.00")


@pytest.mark.parametrize("operation", REBILLS[1:])
def test_a_rebill_signed_with_the_amount_in_major_units_is_code_2(shop: Merchant, ref: str, operation: str) -> None:
    client_orderid = _id()
    major = sha1(shop.login, client_orderid, ref, "5.00", shop.currency, shop.control_key)
    refused(rebill(shop, operation, ref, client_orderid=client_orderid, control=major), 2)


@pytest.mark.parametrize("operation", REBILLS)
def test_enumerated_amounts_are_tried_highest_first_and_the_first_approved_is_the_orders(
    shop: Merchant, ref: str, operation: str
) -> None:
    # 21.16 and 11.16 lack the funds in the sandbox; 10.00 passes, so 5.00 is never tried.
    charged = final(shop, rebill(shop, operation, ref, "21.16", enumerate_amounts="5.00, 11.16,10.00"))
    assert (charged["status"], charged["amount"], charged["initial-amount"]) == ("approved", "10.00", "10.00")
    assert ledger_check(shop) == LEDGER_OK


def test_a_rebill_whose_every_amount_is_declined_ends_declined_at_the_last_one(shop: Merchant, ref: str) -> None:
    declined = final(shop, rebill(shop, "make-rebill", ref, "11.16", enumerate_amounts="1.16,11.16"))
    assert (declined["status"], declined["error-code"], declined["amount"]) == ("declined", "116", "1.16")


def test_a_captured_enumerated_preauth_takes_the_amount_approved(shop: Merchant, ref: str) -> None:
    client_orderid = _id()
    answer = rebill(shop, "make-rebill-preauth", ref, "31.16", client_orderid=client_orderid, enumerate_amounts="8")
    held = final(shop, answer)
    assert (held["status"], held["amount"]) == ("approved", "8.00")
    assert final(shop, capture(shop, client_orderid, held["paynet-order-id"]))["amount"] == "8.00"


@pytest.mark.parametrize(
    ("amounts", "problem"),
    [
        ("5.00,6.00", "lists an amount greater than amount"),
        (",".join(["1.00"] * 11), "lists more than 10 amounts"),
        ("1.00,abc", "has 'abc', which must be a decimal number like 10.42"),
        ("1.001", "has '1.001', which allows at most 2 fraction digits for USD"),
        ("0.00", "has '0.00', which must be greater than zero"),
    ],
)
def test_enumerate_amounts_that_cannot_be_tried_are_refused_naming_the_field(
    shop: Merchant, ref: str, amounts: str, problem: str
) -> None:
    body = refused(rebill(shop, "make-rebill", ref, "5.50", enumerate_amounts=amounts), 1)
    assert body["error-message"] == f"enumerate_amounts {problem}"


def test_an_enumerated_amount_below_the_endpoints_minimum_is_code_7(shop: Merchant, ref: str) -> None:
    made = shop.gateway.cli(
        "endpoint", "create", "--merchant", shop.login, "--currency", shop.currency, "--min-amount", "2.00"
    )
    bounded = Merchant(shop.gateway, shop.login, shop.control_key, made["id"], shop.currency)
    body = refused(rebill(bounded, "make-rebill", ref, "5.00", enumerate_amounts="3.00,1.00"), 7)
    assert body["error-message"].startswith("enumerate_amounts")


def test_recurrent_scenario_is_regular_or_irregular(shop: Merchant, ref: str) -> None:
    assert final(shop, rebill(shop, "make-rebill", ref, recurrent_scenario="IRREGULAR"))["status"] == "approved"
    body = refused(rebill(shop, "make-rebill", ref, recurrent_scenario="MONTHLY"), 1)
    assert body["error-message"] == "recurrent_scenario must be one of REGULAR, IRREGULAR"
