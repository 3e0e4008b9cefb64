"""A transaction becomes the typed request of its flow, carrying what an acquirer needs besides the money."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from kassa.domain.transactions import Flow, TxType, rule
from kassa.engine.requests import NotProcessable, authenticable, request_of
from kassa.processors.interface import (
    Authorize,
    Capture,
    Credit,
    Initiator,
    Original,
    Refund,
    Reverse,
    ThreeDSResult,
    Transfer,
    Verify,
)
from kassa.storage.orders import AuthorizationWork
from kassa.vault.keys import cvv_context, destination_context, pan_context
from tests.support.databases import TEST_VAULT

PAN, MERCHANT = "4111111111111111", 7


def _work(
    tx_type: TxType, *, cvv: str | None = "123", order: dict[str, Any] | None = None, **extra: Any
) -> AuthorizationWork:
    transaction = {"stage": "processing", "serial_number": "s-1", "tx_type": tx_type.value, "amount": 1042}
    transaction["currency"] = "USD"
    placed = {"id": 9, "merchant_id": MERCHANT, "endpoint_id": 3, "card_ref_id": None, "recurring_payment_id": None}
    placed.update(recurrent_scenario=None, enumerate_amounts=None)
    card = {"id": 1, "brand": "VISA", "exp_month": 12, "exp_year": 2030, "holder_name": "Jane Doe"}
    card["pan_ciphertext"] = TEST_VAULT.encrypt(PAN, pan_context(MERCHANT))
    sealed_cvv = TEST_VAULT.encrypt(cvv, cvv_context("s-1")) if cvv else None
    placed.update(order or {}, descriptor="SHOP.EXAMPLE")
    return AuthorizationWork(transaction, placed, card, sealed_cvv, **extra)


_PREAUTH = {"serial_number": "s-0", "amount": 1042, "approval_code": "654321", "processor_rrn": "000000123456"}


def test_a_sale_is_an_authorization_that_captures_with_the_card_its_cvv_and_the_descriptor() -> None:
    request = request_of(_work(TxType.SALE), TEST_VAULT)
    assert isinstance(request, Authorize) and request.capture
    assert (request.card.pan, request.card.cvv, request.card.brand) == (PAN, "123", "VISA")
    assert (request.amount, request.currency, request.descriptor) == (1042, "USD", "SHOP.EXAMPLE")
    assert request.initiator is Initiator.CARDHOLDER and authenticable(request) is request


def test_a_preauth_holds_and_an_account_verification_only_verifies() -> None:
    preauth = request_of(_work(TxType.PREAUTH), TEST_VAULT)
    assert isinstance(preauth, Authorize) and not preauth.capture
    assert isinstance(request_of(_work(TxType.ACCOUNT_VERIFICATION), TEST_VAULT), Verify)


@pytest.mark.parametrize(
    ("tx_type", "kind"),
    [(TxType.CAPTURE, Capture), (TxType.VOID, Reverse), (TxType.CANCEL, Reverse), (TxType.REVERSAL, Refund)],
)
def test_a_follow_up_names_the_authorization_it_acts_on(tx_type: TxType, kind: type) -> None:
    request = request_of(_work(tx_type, cvv=None, original=_PREAUTH), TEST_VAULT)
    assert isinstance(request, Capture | Reverse | Refund)
    assert isinstance(request, kind)
    assert request.original == Original("s-0", 1042, "654321", "000000123456")
    assert request.card is not None and request.card.pan == PAN and request.card.cvv is None
    assert authenticable(request) is None


def test_a_follow_up_without_its_authorization_is_a_fault_not_a_decline() -> None:
    with pytest.raises(NotProcessable):
        request_of(_work(TxType.CAPTURE, cvv=None), TEST_VAULT)


@pytest.mark.parametrize(
    ("order", "initiator"),
    [
        ({"card_ref_id": 4}, Initiator.UNSCHEDULED),
        ({"card_ref_id": 4, "recurrent_scenario": "REGULAR"}, Initiator.RECURRING),
        ({"card_ref_id": 4, "recurrent_scenario": "IRREGULAR"}, Initiator.UNSCHEDULED),
        ({"recurring_payment_id": 5}, Initiator.RECURRING),
    ],
)
def test_a_charge_nobody_is_present_for_is_merchant_initiated_and_never_authenticated(
    order: dict[str, Any], initiator: Initiator
) -> None:
    request = request_of(_work(TxType.SALE, cvv=None, order=order), TEST_VAULT)
    assert isinstance(request, Authorize) and request.initiator is initiator and request.card.cvv is None
    assert authenticable(request) is None


def test_an_authenticated_sale_carries_the_issuers_eci_and_cavv_and_the_directory_servers_id() -> None:
    ds = "9f1c2b7e-3a4d-4e5f-8a6b-7c8d9e0f1a2b"
    record = {"version": "2.2.0", "trans_status": "Y", "eci": "05", "authentication_value": "AAAB", "ds_trans_id": ds}
    request = request_of(_work(TxType.SALE, authentication=record), TEST_VAULT)
    assert isinstance(request, Authorize)
    assert request.three_ds == ThreeDSResult("2.2.0", "Y", "05", "AAAB", ds)


def test_a_failed_authentication_passes_nothing_on() -> None:
    record = {"version": "2.2.0", "trans_status": "N", "eci": None, "authentication_value": None}
    request = request_of(_work(TxType.SALE, authentication=record), TEST_VAULT)
    assert isinstance(request, Authorize) and request.three_ds is None


def _sealed_destination(kind: str, fields: dict[str, str]) -> dict[str, Any]:
    sealed = TEST_VAULT.encrypt(orjson.dumps(fields).decode(), destination_context(MERCHANT))
    return {"kind": kind, "details_ciphertext": sealed}


def test_a_payout_check_and_a_pan_eligibility_check_are_credits_that_move_nothing() -> None:
    phone = _sealed_destination("phone", {"number": "+447911123456", "bank_id": "B1", "receiver_name": "Jane"})
    check = _work(TxType.PAYOUT_CHECK, cvv=None, destination=phone)
    request = request_of(AuthorizationWork(check.transaction, check.order, None, None, destination=phone), TEST_VAULT)
    assert isinstance(request, Credit) and request.check_only
    eligibility = request_of(_work(TxType.PAN_ELIGIBILITY, cvv=None), TEST_VAULT)
    assert isinstance(eligibility, Credit) and eligibility.check_only


def test_a_transfer_charges_one_card_and_credits_the_other() -> None:
    receiving = _sealed_destination("card", {"number": "5555555555554444"})
    request = request_of(_work(TxType.TRANSFER, destination=receiving), TEST_VAULT)
    assert isinstance(request, Transfer)
    assert (request.card.pan, request.destination.number) == (PAN, "5555555555554444")


def test_every_type_sent_to_an_acquirer_has_a_request_and_a_chargeback_none() -> None:
    sent = {t for t in TxType if rule(t).flow is not Flow.NONE}
    assert sent == set(TxType) - {TxType.CHARGEBACK}
    with pytest.raises(NotProcessable):
        request_of(_work(TxType.CHARGEBACK), TEST_VAULT)
