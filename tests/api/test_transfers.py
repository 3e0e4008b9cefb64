"""Transfers from the merchant's balance to a card (transfer-by-ref, and transfer with deposit2card=true),
between cards (transfer, v2 transfer-by-ref, transfer-form) and pan-eligibility checks (CONTRACT §13 and
§17), signed as merchants sign them (oauthlib's client, or the control formula): a transfer from the
balance moves money as a payout does and is reported as a transfer; a card-to-card transfer leaves nothing
on the balance; an eligibility check moves none."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import httpx
import pytest

from tests.api.test_card_refs import card_ref_of, stored_card
from tests.api.test_payouts import available, credit
from tests.support.cards import pan_ending
from tests.support.gateway import Merchant, classic_fields, minor_units, sha1
from tests.support.oauth import key_pair, register_key, signed_post
from tests.support.operations import LEDGER_OK, approved_order, ledger_check

DESTINATION = "5555555555554444"


@pytest.fixture
def payer(make_merchant: Callable[..., Merchant]) -> Merchant:
    """A sandbox merchant with 100.00 USD available and an RSA key for v4."""
    merchant = make_merchant()
    credit(merchant, "100.00")
    register_key(merchant.gateway, merchant.login, key_pair()[1])
    return merchant


def v4(m: Merchant, operation: str, fields: list[tuple[str, str]]) -> httpx.Response:
    url = f"{m.gateway.base}/api/v4/{operation}/{m.endpoint_id}"
    return signed_post(url, fields, login=m.login, private_key_pem=key_pair()[0], headers={})


def money(m: Merchant, amount: str) -> list[tuple[str, str]]:
    return [
        ("client-order-id", f"tr-{uuid.uuid4().hex[:8]}"),
        ("amount", amount),
        ("currency", m.currency),
        ("order_desc", "Transfer"),
    ]


def final(m: Merchant, answer: httpx.Response) -> dict[str, str]:
    assert answer.status_code == 200, answer.text
    return m.wait_final(answer.json()["paynet-order-id"])


def test_a_transfer_by_ref_to_a_card_number_pays_from_the_balance_and_names_its_transaction(payer: Merchant) -> None:
    answer = v4(payer, "transfer-by-ref", [*money(payer, "12.34"), ("destination-card-no", DESTINATION)])
    body = answer.json()
    assert body["transaction-id"] == body["paynet-order-id"]
    status = final(payer, answer)
    shown = (status["status"], status["transaction-type"], status["order-stage"], status["destination-account"])
    assert shown == ("approved", "transfer", "transfer_approved", "555555******4444")
    assert available(payer) == "87.66"
    assert ledger_check(payer) == LEDGER_OK


def test_a_transfer_by_ref_to_a_card_reference_pays_its_card(payer: Merchant) -> None:
    order = approved_order(payer, f"src-{uuid.uuid4().hex[:6]}", amount="1.00")
    ref = card_ref_of(payer, payer.status(orderid=order).json()["merchant-order-id"], order)
    status = final(payer, v4(payer, "transfer-by-ref", [*money(payer, "10.00"), ("destination-card-ref-id", ref)]))
    assert (status["status"], status["last-four-digits"]) == ("approved", "1111")
    assert available(payer) == "90.00"


def test_a_transfer_beyond_the_balance_is_declined_with_116(payer: Merchant) -> None:
    status = final(payer, v4(payer, "transfer-by-ref", [*money(payer, "100.01"), ("destination-card-no", DESTINATION)]))
    assert (status["status"], status["error-code"]) == ("declined", "116")
    assert available(payer) == "100.00"


def test_a_transfer_by_ref_without_a_destination_names_destination_card_no(payer: Merchant) -> None:
    answer = v4(payer, "transfer-by-ref", money(payer, "1.00"))
    assert (answer.status_code, answer.json()["error-code"]) == (400, "1")
    assert "destination-card-no" in answer.json()["error-message"]


def test_a_transfer_from_the_deposit_pays_a_card_number_or_a_recurring_payments_card(payer: Merchant) -> None:
    fields = [*money(payer, "5.00"), ("deposit2card", "true"), ("destination-card-no", DESTINATION)]
    assert final(payer, v4(payer, "transfer", fields))["status"] == "approved"
    order = approved_order(payer, f"src-{uuid.uuid4().hex[:6]}", amount="1.00")
    client_orderid = payer.status(orderid=order).json()["merchant-order-id"]
    tokenised = v4(payer, "create-card-ref", [("client_orderid", client_orderid), ("orderid", order)]).json()
    fields = [
        *money(payer, "7.00"),
        ("deposit2card", "true"),
        ("destination_card_recurring_payment_id", tokenised["recurring-payment-id"]),
    ]
    status = final(payer, v4(payer, "transfer", fields))
    assert (status["status"], status["transaction-type"], status["last-four-digits"]) == (
        "approved",
        "transfer",
        "1111",
    )
    assert available(payer) == "88.00"
    assert ledger_check(payer) == LEDGER_OK


SOURCE = [("credit_card_number", "4111111111111111"), ("expire_month", "12"), ("expire_year", "2030")]


@pytest.mark.parametrize(("cvv2", "outcome"), [("123", "approved"), ("111", "approved"), ("209", "declined")])
def test_a_card_to_card_transfer_is_decided_as_a_sale_and_leaves_nothing_on_the_balance(
    payer: Merchant, cvv2: str, outcome: str
) -> None:
    fields = [*money(payer, "40.00"), *SOURCE, ("cvv2", cvv2), ("destination-card-no", DESTINATION)]
    status = final(payer, v4(payer, "transfer", fields))
    shown = (status["status"], status["transaction-type"], status["last-four-digits"], status["destination-account"])
    assert shown == (outcome, "transfer", "1111", "555555******4444")
    assert available(payer) == "100.00"
    assert ledger_check(payer) == LEDGER_OK


def test_a_card_to_card_transfer_between_stored_cards(payer: Merchant) -> None:
    order = approved_order(payer, f"src-{uuid.uuid4().hex[:6]}", amount="1.00")
    client_orderid = payer.status(orderid=order).json()["merchant-order-id"]
    payment = v4(payer, "create-card-ref", [("client_orderid", client_orderid), ("orderid", order)]).json()
    payment_id = payment["recurring-payment-id"]
    fields = [
        *money(payer, "3.00"),
        ("card_recurring_payment_id", payment_id),
        ("destination_card_recurring_payment_id", payment_id),
    ]
    status = final(payer, v4(payer, "transfer", fields))
    assert (status["status"], status["destination-account"]) == ("approved", "411111******1111")


def test_a_card_to_card_transfer_needs_its_source_and_destination(payer: Merchant) -> None:
    for fields, named in (
        ([*money(payer, "1.00"), ("destination-card-no", DESTINATION)], "credit_card_number"),
        ([*money(payer, "1.00"), *SOURCE, ("cvv2", "123")], "destination-card-no"),
    ):
        answer = v4(payer, "transfer", fields)
        assert (answer.status_code, answer.json()["error-code"]) == (400, "1"), answer.text
        assert answer.json()["error-message"].startswith(named)


# --- v2 transfer-by-ref (CONTRACT §17) ------------------------------------------------------------------------


def v2_transfer_by_ref(
    m: Merchant, client_orderid: str, destination: str, amount: str = "10.00", source: str = "", **fields: str
) -> httpx.Response:
    """As the original gateway's PHP client sends it; ``control`` in ``fields`` replaces the right one."""
    data = {
        "login": m.login,
        "client_orderid": client_orderid,
        "destination-card-ref-id": destination,
        "amount": amount,
        "currency": m.currency,
        "ipaddress": "203.0.113.7",
        **({"source-card-ref-id": source} if source else {}),
        **fields,
    }
    signed = (m.login, client_orderid, source, destination, minor_units(amount), m.currency, m.control_key)
    data.setdefault("control", sha1(*signed))
    return m.gateway.post(f"/api/v2/transfer-by-ref/{m.endpoint_id}", data)


def _new_id() -> str:
    return f"tr2-{uuid.uuid4().hex[:8]}"


def test_a_v2_transfer_by_ref_between_two_stored_cards_leaves_the_balance_alone(payer: Merchant) -> None:
    source, destination = stored_card(payer), stored_card(payer, DESTINATION)
    answer = v2_transfer_by_ref(payer, _new_id(), destination, "40.00", source)
    assert answer.json()["type"] == "async-response"
    status = final(payer, answer)
    shown = (status["status"], status["transaction-type"], status["last-four-digits"], status["destination-account"])
    assert shown == ("approved", "transfer", "1111", "555555******4444")
    assert available(payer) == "100.00"


def test_a_v2_transfer_by_ref_without_a_source_pays_from_the_balance(payer: Merchant) -> None:
    status = final(payer, v2_transfer_by_ref(payer, _new_id(), stored_card(payer, DESTINATION), "12.34"))
    assert (status["status"], status["transaction-type"], status["last-four-digits"]) == (
        "approved",
        "transfer",
        "4444",
    )
    assert available(payer) == "87.66"
    assert ledger_check(payer) == LEDGER_OK


def test_a_v2_transfer_by_ref_is_decided_by_the_cvv2_its_holder_typed(payer: Merchant) -> None:
    source, destination = stored_card(payer), stored_card(payer, DESTINATION)
    status = final(payer, v2_transfer_by_ref(payer, _new_id(), destination, "5.00", source, cvv2="209"))
    assert (status["status"], status["error-code"]) == ("declined", "209")
    challenged = v2_transfer_by_ref(payer, _new_id(), destination, "5.00", source, cvv2="321")
    step = payer.wait_stage(challenged.json()["paynet-order-id"], leaving="transfer_processing")
    assert (step["order-stage"], step["redirect-to"] != "") == ("transfer_3d_validating", True)


def test_a_v2_transfer_by_ref_signed_wrong_is_code_2_and_opens_nothing(payer: Merchant) -> None:
    destination, client_orderid = stored_card(payer, DESTINATION), _new_id()
    answer = v2_transfer_by_ref(payer, client_orderid, destination, control=sha1("wrong"))
    assert (answer.status_code, answer.json()["error-code"]) == (400, "2")
    assert "source-card-ref-id + destination-card-ref-id" in answer.json()["error-message"]
    assert payer.status(client_orderid=client_orderid).json()["error-code"] == "5"
    assert available(payer) == "100.00"


def test_a_v2_transfer_by_ref_to_an_unknown_reference_is_code_5(payer: Merchant) -> None:
    answer = v2_transfer_by_ref(payer, _new_id(), "999999999")
    assert (answer.status_code, answer.json()["error-code"]) == (400, "5")


def test_a_v2_transfer_by_ref_answers_a_classic_client_in_the_classic_format(
    make_merchant: Callable[..., Merchant],
) -> None:
    shop = make_merchant(classic=True)
    source, destination = stored_card(shop), stored_card(shop, DESTINATION)
    data = {
        "login": shop.login, "client_orderid": "classic-tr", "destination-card-ref-id": destination,
        "source-card-ref-id": source, "amount": "3.00", "currency": shop.currency,
        "control": sha1(shop.login, "classic-tr", source, destination, "300", shop.currency, shop.control_key),
    }  # fmt: skip
    answer = shop.gateway.post(f"/api/v2/transfer-by-ref/{shop.endpoint_id}", data, headers={})
    assert (answer.status_code, answer.headers["content-type"]) == (200, "text/html; charset=utf-8")
    fields = dict(classic_fields(answer.content))
    assert (fields["type"], fields["status"], fields["merchant-order-id"]) == (
        "async-response",
        "processing",
        "classic-tr",
    )
    assert shop.wait_final(fields["paynet-order-id"])["status"] == "approved"


# --- transfer-form: the page itself is tests/pages/test_transfer_form.py ---------------------------------------


def transfer_form(m: Merchant, client_orderid: str, amount: str = "10.00", **fields: str) -> httpx.Response:
    data = {"client_orderid": client_orderid, "amount": amount, "currency": m.currency, **fields}
    data.setdefault("control", sha1(m.endpoint_id, client_orderid, minor_units(amount), "", m.control_key))
    return m.gateway.post(f"/api/v2/transfer-form/{m.endpoint_id}", data)


def test_a_transfer_form_answers_its_page_signed_as_a_sale_form_in_v2_and_as_v4(payer: Merchant) -> None:
    v2 = transfer_form(payer, _new_id(), **{"destination-card-no": DESTINATION})
    fields = [*money(payer, "10.00"), ("destination-card-ref-id", stored_card(payer, DESTINATION))]
    for answer in (v2, v4(payer, "transfer-form", fields)):
        body = answer.json()
        assert (answer.status_code, body["type"], body["status"]) == (200, "async-form-response", "processing"), body
        assert "/paynet/form/" in body["redirect-url"]
        status = payer.status(orderid=body["paynet-order-id"]).json()
        assert (status["transaction-type"], status["status"]) == ("transfer", "processing")
        assert status["destination-account"] == "555555******4444"


def test_a_transfer_form_signed_wrong_or_naming_an_unknown_card_is_refused(payer: Merchant) -> None:
    wrong = transfer_form(payer, _new_id(), control=sha1("wrong"))
    assert (wrong.status_code, wrong.json()["error-code"]) == (400, "2")
    unknown = transfer_form(payer, _new_id(), **{"destination-card-ref-id": "999999999"})
    assert (unknown.status_code, unknown.json()["error-code"]) == (400, "5")
    unsigned = payer.gateway.post(f"/api/v4/transfer-form/{payer.endpoint_id}", dict(money(payer, "1.00")), {})
    assert (unsigned.status_code, unsigned.json()["error-code"]) == (401, "2")


# --- pan-eligibility -----------------------------------------------------------------------------------------


def eligibility(m: Merchant, direction: str = "send", control_key: str = "", **fields: str) -> httpx.Response:
    url = f"{m.gateway.base}/api/v2/pan-eligibility/{direction}/{m.endpoint_id}"
    body = {"client-order-id": f"pe-{uuid.uuid4().hex[:8]}", **fields}
    return signed_post(url, body, login=m.login, method="HMAC-SHA1", control_key=control_key or m.control_key)


@pytest.mark.parametrize(("ending", "outcome"), [("000", "approved"), ("119", "declined"), ("209", "declined")])
def test_pan_eligibility_of_a_card_number_follows_the_sandbox_table(payer: Merchant, ending: str, outcome: str) -> None:
    status = final(payer, eligibility(payer, credit_card_number=pan_ending(ending)))
    assert (status["status"], status["transaction-type"]) == (outcome, "pan-eligibility")
    assert available(payer) == "100.00"


def test_pan_eligibility_of_a_card_reference(payer: Merchant) -> None:
    order = approved_order(payer, f"src-{uuid.uuid4().hex[:6]}", amount="1.00")
    ref = card_ref_of(payer, payer.status(orderid=order).json()["merchant-order-id"], order)
    assert final(payer, eligibility(payer, **{"sending-card-ref-id": ref}))["status"] == "approved"


def test_pan_eligibility_without_a_card_names_credit_card_number(payer: Merchant) -> None:
    answer = eligibility(payer)
    assert (answer.status_code, answer.json()["error-code"]) == (400, "1")
    assert "credit_card_number" in answer.json()["error-message"]


def test_the_card_of_a_cancelled_recurring_payment_is_refused_by_every_transfer_with_code_6(payer: Merchant) -> None:
    subscribed = v4(
        payer,
        "create-recurring-payment",
        [
            *money(payer, "9.90"),
            ("credit_card_number", "4111111111111111"),
            ("expire_month", "12"),
            ("expire_year", "2030"),
        ],
    )
    payment_id = subscribed.json()["recurring-payment-id"]
    assert payer.gateway.cli("recurring", "cancel", payment_id)["status"] == "cancelled"
    source, to = "card_recurring_payment_id", "destination_card_recurring_payment_id"
    for fields, named in (
        ([(source, payment_id), ("destination-card-no", DESTINATION)], source),
        ([*SOURCE, ("cvv2", "123"), (to, payment_id)], to),
        ([("deposit2card", "true"), (to, payment_id)], to),
    ):
        answer = v4(payer, "transfer", [*money(payer, "25.00"), *fields])
        body = answer.json()
        assert (answer.status_code, body["type"], body["error-code"]) == (400, "validation-error", "6"), answer.text
        assert body["error-message"] == f"{named} names a recurring payment that is cancelled: its card is not used"
    assert available(payer) == "100.00"
    assert ledger_check(payer) == LEDGER_OK


def test_a_transfer_repeated_after_its_payment_was_cancelled_gets_its_first_answer(payer: Merchant) -> None:
    card = [("credit_card_number", "4111111111111111"), ("expire_month", "12"), ("expire_year", "2030")]
    subscribed = v4(payer, "create-recurring-payment", [*money(payer, "9.90"), *card])
    payment_id = subscribed.json()["recurring-payment-id"]
    fields = [*money(payer, "25.00"), ("card_recurring_payment_id", payment_id), ("destination-card-no", DESTINATION)]
    first = v4(payer, "transfer", fields)
    assert first.status_code == 200, first.text
    payer.gateway.cli("recurring", "cancel", payment_id)
    again = v4(payer, "transfer", fields)
    assert again.status_code == 200, again.text
    assert again.json()["paynet-order-id"] == first.json()["paynet-order-id"]


@pytest.mark.parametrize("direction", ["receive", "both"])
def test_pan_eligibility_to_receive_or_both_follows_the_sandbox_table(payer: Merchant, direction: str) -> None:
    approved = final(payer, eligibility(payer, direction, credit_card_number=pan_ending("000")))
    assert (approved["status"], approved["transaction-type"]) == ("approved", "pan-eligibility")
    declined = final(payer, eligibility(payer, direction, credit_card_number=pan_ending("119")))
    assert (declined["status"], declined["error-code"]) == ("declined", "119")
    assert available(payer) == "100.00"


def test_pan_eligibility_to_receive_or_both_takes_the_card_reference_of_its_direction(payer: Merchant) -> None:
    ref = stored_card(payer)
    for direction, field in (("receive", "receiving-card-ref-id"), ("both", "sending-card-ref-id")):
        status = final(payer, eligibility(payer, direction, **{field: ref}))
        assert (status["status"], status["last-four-digits"]) == ("approved", "1111"), direction
    both = eligibility(payer, "both", **{"sending-card-ref-id": ref, "receiving-card-ref-id": stored_card(payer)})
    assert (both.status_code, both.json()["error-code"]) == (400, "1")
    assert both.json()["error-message"].startswith("receiving-card-ref-id names another card")
    missing = eligibility(payer, "receive")
    assert missing.json()["error-message"] == "credit_card_number or receiving-card-ref-id is required"


@pytest.mark.parametrize("direction", ["receive", "both"])
def test_pan_eligibility_to_receive_or_both_signed_with_another_key_is_refused(payer: Merchant, direction: str) -> None:
    answer = eligibility(payer, direction, control_key="not-the-key", credit_card_number=pan_ending("000"))
    assert (answer.status_code, answer.json()["error-code"]) == (401, "2")
    assert answer.headers["www-authenticate"].startswith("OAuth realm=")
