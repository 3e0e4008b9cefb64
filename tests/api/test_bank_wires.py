"""bank-wire-transfer (CONTRACT §17): a payout to a bank account named by its number (or IBAN) and its
bank's BIC, control-signed over the payer, the recipient, the amount and its VAT; it draws on the balance as
any payout does, and every refusal of the account's fields names the field as the merchant sent it."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import httpx
import pytest

from tests.support.balances import available, credit
from tests.support.gateway import Merchant, classic_fields, minor_units, sha1
from tests.support.operations import LEDGER_OK, ledger_check

WIRE = {
    "payer-fullname": "Ann Lee",
    "recipient-name": "Jane Doe",
    "recipient-account-number": "40817810099910004312",
    "recipient-bank-bic": "DEUTDEFF",
}


@pytest.fixture
def payer(make_merchant: Callable[..., Merchant]) -> Merchant:
    merchant = make_merchant()
    credit(merchant, "100.00")
    return merchant


def wire(
    m: Merchant, amount: str = "25.00", vat: str = "", headers: dict[str, str] | None = None, **fields: str
) -> httpx.Response:
    return m.gateway.post(f"/api/v2/bank-wire-transfer/{m.endpoint_id}", wire_fields(m, amount, vat, **fields), headers)


def wire_fields(m: Merchant, amount: str, vat: str, **fields: str) -> dict[str, str]:
    """A signed bank wire: sha1(endpointid + client_orderid + payer-fullname + recipient-name +
    recipient-account-number + recipient-bank-bic + amount + vat-amount (minor units) + currency + key)."""
    data = {"client_orderid": f"bw-{uuid.uuid4().hex[:8]}", "amount": amount, "currency": m.currency, **WIRE}
    if vat:
        data["vat-amount"] = vat
    data.update(fields)
    signed = [data[name] for name in ("client_orderid", *WIRE)]
    vat_minor = minor_units(vat) if vat else ""
    data.setdefault("control", sha1(m.endpoint_id, *signed, minor_units(amount), vat_minor, m.currency, m.control_key))
    return data


def test_a_bank_wire_pays_the_account_from_the_balance_as_a_payout(payer: Merchant) -> None:
    answer = wire(payer, "25.00", vat="4.17")
    body = answer.json()
    assert (answer.status_code, body["type"]) == (200, "async-response"), body
    status = payer.wait_final(body["paynet-order-id"])
    shown = (status["status"], status["transaction-type"], status["destination-type"], status["destination-account"])
    assert shown == ("approved", "payout", "bank", "****4312")
    assert available(payer) == "75.00"
    assert ledger_check(payer) == LEDGER_OK


def test_a_bank_wire_to_an_iban_checks_it_and_shows_it_masked(payer: Merchant) -> None:
    answer = wire(payer, **{"recipient-account-number": "GB82 WEST 1234 5698 7654 32"})
    assert payer.wait_final(answer.json()["paynet-order-id"])["destination-account"] == "****5432"
    refused = wire(payer, **{"recipient-account-number": "GB82WEST12345698765433"})
    assert refused.json()["error-message"] == "recipient-account-number fails its check digits"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("recipient-bank-bic", "DEUT", "recipient-bank-bic must be 8 or 11 characters"),
        ("recipient-bank-bic", "DEUTXXFF", "recipient-bank-bic names no known country"),
        ("recipient-account-number", "4081-7810!", "recipient-account-number must be 1 to 34 letters and digits"),
        ("recipient-name", "", "recipient-name is required"),
    ],
)
def test_a_bank_wire_whose_account_is_not_right_is_code_1_naming_the_field(
    payer: Merchant, field: str, value: str, message: str
) -> None:
    answer = wire(payer, **{field: value})
    body = answer.json()
    assert (answer.status_code, body["error-code"], body["error-message"]) == (400, "1", message)
    assert available(payer) == "100.00"


def test_a_bank_wire_whose_vat_exceeds_its_amount_is_code_1(payer: Merchant) -> None:
    answer = wire(payer, "10.00", vat="10.01")
    assert (answer.status_code, answer.json()["error-message"]) == (400, "vat-amount must not exceed amount")


def test_a_bank_wire_signed_without_its_vat_is_code_2(payer: Merchant) -> None:
    data = wire_fields(payer, "10.00", "")
    data["vat-amount"] = "1.00"  # sent, but not signed
    answer = payer.gateway.post(f"/api/v2/bank-wire-transfer/{payer.endpoint_id}", data)
    assert (answer.status_code, answer.json()["error-code"]) == (400, "2")
    assert "amount + vat-amount + currency" in answer.json()["error-message"]
    assert available(payer) == "100.00"


def test_a_bank_wire_beyond_the_balance_is_declined_with_116(payer: Merchant) -> None:
    status = payer.wait_final(wire(payer, "100.01").json()["paynet-order-id"])
    assert (status["status"], status["error-code"]) == ("declined", "116")
    assert available(payer) == "100.00"


def test_a_bank_wire_answers_a_classic_client_in_the_classic_format(make_merchant: Callable[..., Merchant]) -> None:
    shop = make_merchant(classic=True)
    credit(shop, "10.00")
    answer = wire(shop, "5.00", headers={})
    assert (answer.status_code, answer.headers["content-type"]) == (200, "text/html; charset=utf-8")
    fields = dict(classic_fields(answer.content))
    assert (fields["type"], fields["status"]) == ("async-response", "processing")
    assert shop.wait_final(fields["paynet-order-id"])["status"] == "approved"
