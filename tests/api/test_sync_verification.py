"""sync/account-verification (CONTRACT §17): an account verification answered with its outcome at once, as
a status-response with the card's fields and, approved, a card reference to charge later."""

from __future__ import annotations

import uuid

from tests.api.test_card_refs import make_rebill, refused
from tests.support.gateway import Merchant, sha1
from tests.support.operations import account_verification, final

SYNC = "sync/account-verification"


def _id() -> str:
    return f"sv-{uuid.uuid4().hex[:10]}"


def test_an_approved_verification_answers_its_card_and_a_reference_to_charge_later(merchant: Merchant) -> None:
    client_orderid = _id()
    answer = account_verification(merchant, client_orderid, operation=SYNC, phone="+447911123456")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    shown = (body["type"], body["status"], body["transaction-type"], body["order-stage"], body["amount"])
    assert shown == ("status-response", "approved", "account-verification", "verify_approved", "0.00")
    assert body["merchant-order-id"] == client_orderid
    card = {name: body[name] for name in ("bin", "last-four-digits", "card-type", "card-exp-month", "card-exp-year")}
    assert card == {
        "bin": "411111",
        "last-four-digits": "1111",
        "card-type": "VISA",
        "card-exp-month": "12",
        "card-exp-year": "2030",
    }
    assert (body["cardholder-name"], body["email"], body["phone"]) == (
        "Jane Doe",
        "cardholder@example.com",
        "+447911123456",
    )
    assert "4111111111111111" not in answer.text
    again = account_verification(merchant, client_orderid, operation=SYNC, phone="+447911123456").json()
    assert (again["paynet-order-id"], again["card-ref-id"]) == (body["paynet-order-id"], body["card-ref-id"])
    assert final(merchant, make_rebill(merchant, _id(), body["card-ref-id"], "3.00"))["status"] == "approved"


def test_a_declined_verification_answers_its_code_and_no_reference(merchant: Merchant) -> None:
    body = account_verification(merchant, _id(), cvv2="119", operation=SYNC).json()
    assert (body["type"], body["status"], body["error-code"]) == ("status-response", "declined", "119")
    assert "card-ref-id" not in body


def test_a_verification_waiting_for_3_d_secure_answers_where_the_cardholder_goes(merchant: Merchant) -> None:
    body = account_verification(merchant, _id(), cvv2="321", operation=SYNC).json()
    assert (body["status"], body["order-stage"]) == ("processing", "verify_3d_validating")
    assert body["redirect-to"].startswith("http") and "card-ref-id" not in body


def test_a_sync_verification_signed_with_the_amount_is_code_2(merchant: Merchant) -> None:
    client_orderid = _id()
    sale_like = sha1(merchant.endpoint_id, client_orderid, "0", "cardholder@example.com", merchant.control_key)
    refused(account_verification(merchant, client_orderid, operation=SYNC, control=sale_like), 2)
