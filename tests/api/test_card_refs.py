"""Card references (CONTRACT §13): create-card-ref from an approved order, get-card-info, make-rebill."""

from __future__ import annotations

import datetime
import uuid

import httpx
import pytest

from tests.support.cards import pan_ending
from tests.support.gateway import Gateway, Merchant, minor_units, new_merchant, sha1
from tests.support.operations import LEDGER_OK, approved_order, final, ledger_check, preauth

CARD = "4111111111111111"


def _orderid() -> str:
    return f"cr-{uuid.uuid4().hex[:12]}"


def create_card_ref(m: Merchant, client_orderid: str, orderid: str) -> httpx.Response:
    data = {"login": m.login, "client_orderid": client_orderid, "orderid": orderid}
    data["control"] = sha1(m.login, client_orderid, orderid, m.control_key)
    return m.gateway.post(f"/api/v2/create-card-ref/{m.endpoint_id}", data)


def get_card_info(m: Merchant, cardrefid: str) -> httpx.Response:
    data = {"login": m.login, "cardrefid": cardrefid, "control": sha1(m.login, cardrefid, m.control_key)}
    return m.gateway.post(f"/api/v2/get-card-info/{m.endpoint_id}", data)


def make_rebill(m: Merchant, client_orderid: str, ref: str, amount: str = "5.00", **fields: str) -> httpx.Response:
    return rebill(m, "make-rebill", ref, amount, client_orderid=client_orderid, **fields)


def rebill(m: Merchant, operation: str, ref: str, amount: str = "5.00", **fields: str) -> httpx.Response:
    """``operation`` (make-rebill or one of its §17 names) on the card reference ``ref``, signed as
    make-rebill is."""
    client_orderid = fields.pop("client_orderid", f"rb-{uuid.uuid4().hex[:10]}")
    data = {
        "login": m.login,
        "client_orderid": client_orderid,
        "cardrefid": ref,
        "amount": amount,
        "currency": m.currency,
        "order_desc": "Monthly box",
        "ipaddress": "203.0.113.7",
        **fields,
    }
    signed = (m.login, client_orderid, ref, minor_units(amount), m.currency, m.control_key)
    data.setdefault("control", sha1(*signed))
    return m.gateway.post(f"/api/v2/{operation}/{m.endpoint_id}", data)


def card_ref_of(m: Merchant, client_orderid: str, orderid: str) -> str:
    answer = create_card_ref(m, client_orderid, orderid)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["type"], body["status"]) == ("create-card-ref-response", "approved"), body
    return str(body["card-ref-id"])


def stored_card(m: Merchant, pan: str = CARD, **sale_fields: str) -> str:
    """A card reference made from an approved sale paid with ``pan``."""
    client_orderid = _orderid()
    answer = m.sale(client_orderid, credit_card_number=pan, **sale_fields)
    assert answer.status_code == 200, answer.text
    orderid = answer.json()["paynet-order-id"]
    assert m.wait_final(orderid)["status"] == "approved"
    return card_ref_of(m, client_orderid, orderid)


def refused(response: httpx.Response, code: int) -> dict[str, str]:
    assert response.status_code == 400, response.text
    body = dict(response.json())
    assert (body["type"], body["error-code"]) == ("validation-error", str(code)), body
    return body


@pytest.fixture(scope="module")
def other_shop(shared_gateway: Gateway) -> Merchant:
    return new_merchant(shared_gateway, f"m-{uuid.uuid4().hex[:10]}")


def test_rebill_charges_the_stored_card_as_a_new_sale_order(merchant: Merchant) -> None:
    ref = stored_card(merchant, card_printed_name="Jane Q. Doe")
    assert ref.isdigit()
    answer = make_rebill(merchant, "rebill-1", ref, "7.50")
    body = answer.json()
    assert (body["type"], body["status"], body["merchant-order-id"]) == ("async-response", "processing", "rebill-1")
    charged = final(merchant, answer)
    assert (charged["status"], charged["transaction-type"], charged["amount"]) == ("approved", "sale", "7.50")
    assert (charged["bin"], charged["last-four-digits"], charged["cardholder-name"]) == (
        "411111",
        "1111",
        "Jane Q. Doe",
    )
    assert charged["card-ref-id"] == ref
    assert ledger_check(merchant) == LEDGER_OK


def test_card_ref_of_one_order_is_the_same_each_time_it_is_asked(merchant: Merchant) -> None:
    orderid = approved_order(merchant, "cr-same")
    assert card_ref_of(merchant, "cr-same", orderid) == card_ref_of(merchant, "cr-same", orderid)


def test_card_ref_from_an_approved_preauth(merchant: Merchant) -> None:
    orderid = approved_order(merchant, "cr-auth", kind="preauth")
    assert card_ref_of(merchant, "cr-auth", orderid).isdigit()


def test_card_ref_of_a_declined_sale_is_code_6(merchant: Merchant) -> None:
    answer = merchant.sale("cr-declined", cvv2="999")
    orderid = answer.json()["paynet-order-id"]
    assert merchant.wait_final(orderid)["status"] == "declined"
    refused(create_card_ref(merchant, "cr-declined", orderid), 6)


def test_card_ref_of_an_order_still_processing_is_code_6(merchant: Merchant) -> None:
    answer = preauth(merchant, "cr-3ds", cvv2="321")  # waits for a 3-D Secure challenge nobody answers
    orderid = answer.json()["paynet-order-id"]
    merchant.wait_stage(orderid, leaving="auth_processing")
    refused(create_card_ref(merchant, "cr-3ds", orderid), 6)


def test_card_ref_names_the_order_by_orderid_and_client_orderid(merchant: Merchant) -> None:
    orderid = approved_order(merchant, "cr-named")
    refused(create_card_ref(merchant, "cr-someone-else", orderid), 5)


def test_card_info_shows_bin_and_last_four_only(merchant: Merchant) -> None:
    ref = stored_card(merchant, card_printed_name="Jane Doe", expire_month="03", expire_year="2031")
    answer = get_card_info(merchant, ref)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body.pop("type") == "get-card-info-response"
    uuid.UUID(body.pop("serial-number"))
    assert body == {
        "card-printed-name": "Jane Doe",
        "bin": "411111",
        "last-four-digits": "1111",
        "expire-month": "03",
        "expire-year": "2031",
        "card-type": "VISA",
    }
    assert CARD not in answer.text


def test_card_reference_of_another_merchant_is_code_5(merchant: Merchant, other_shop: Merchant) -> None:
    ref = stored_card(merchant)
    refused(get_card_info(other_shop, ref), 5)
    refused(make_rebill(other_shop, "stolen-ref", ref), 5)


def test_unknown_card_reference_is_code_5(merchant: Merchant) -> None:
    refused(get_card_info(merchant, "99999999999"), 5)
    refused(get_card_info(merchant, "not-a-ref"), 5)
    refused(make_rebill(merchant, "no-such-ref", "99999999999"), 5)


def test_rebill_is_decided_by_the_last_three_digits_of_the_card(merchant: Merchant) -> None:
    ref = stored_card(merchant, pan_ending("116"))
    declined = final(merchant, make_rebill(merchant, "rebill-nsf", ref))
    assert (declined["status"], declined["error-code"]) == ("declined", "116")


def test_rebill_with_a_challenge_cvv_skips_3_d_secure(merchant: Merchant) -> None:
    ref = stored_card(merchant)
    answer = make_rebill(merchant, "rebill-cvv", ref, cvv2="321")
    assert final(merchant, answer)["status"] == "approved"  # no cardholder is there to take a challenge


def test_rebill_with_a_wrong_control_is_code_2(merchant: Merchant) -> None:
    ref = stored_card(merchant)
    signed_in_major_units = sha1(merchant.login, "rebill-sig", ref, "5.00", merchant.currency, merchant.control_key)
    refused(make_rebill(merchant, "rebill-sig", ref, control=signed_in_major_units), 2)


def test_rebill_repeated_with_other_fields_is_code_4(merchant: Merchant) -> None:
    ref = stored_card(merchant)
    first = make_rebill(merchant, "rebill-dup", ref, "5.00")
    assert first.status_code == 200, first.text
    again = make_rebill(merchant, "rebill-dup", ref, "5.00")
    assert again.json()["paynet-order-id"] == first.json()["paynet-order-id"]
    refused(make_rebill(merchant, "rebill-dup", ref, "6.00"), 4)


def test_rebill_in_a_currency_the_endpoint_does_not_serve_is_code_8(merchant: Merchant) -> None:
    ref = stored_card(merchant)
    data = {"currency": "EUR"}
    signed = sha1(merchant.login, "rebill-eur", ref, "500", "EUR", merchant.control_key)
    refused(make_rebill(merchant, "rebill-eur", ref, **data, control=signed), 8)


def test_rebill_of_a_card_expired_by_the_gateways_clock_is_refused_naming_cardrefid(clock_merchant: Merchant) -> None:
    gateway = clock_merchant.gateway
    today = datetime.datetime.fromtimestamp(gateway.advance(0) // 1000, datetime.UTC).date()
    ref = stored_card(clock_merchant, expire_month=f"{today.month:02d}", expire_year=str(today.year))
    gateway.advance(40 * 86_400)  # next month by the gateway's clock; at real time the card is still valid
    body = refused(make_rebill(clock_merchant, _orderid(), ref), 1)
    assert "cardrefid" in body["error-message"] and "expired" in body["error-message"]
