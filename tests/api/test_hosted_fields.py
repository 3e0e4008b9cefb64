"""Hosted Fields on the server side (CONTRACT §18): the ephemeral ticket, the tokenization the iframes
post, and the v4 sale paid with the token; each signed as the original gateway's integrations sign them."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.support.gateway import TLS, Gateway, Merchant, new_merchant
from tests.support.hosted_fields import (
    TEST_CARD,
    ephemeral_ticket,
    sale,
    sale_fields,
    status,
    token_for,
    tokenize,
    v4_merchant,
    v4_post,
)
from tests.support.oauth import key_pair, signed_post


@pytest.fixture
def shop(make_merchant: Callable[..., Merchant]) -> Merchant:
    return v4_merchant(make_merchant())


def final_status(m: Merchant, order_id: str) -> dict[str, str]:
    deadline = time.monotonic() + 15
    while (found := status(m, order_id))["status"] == "processing" and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def test_the_test_card_tokenized_with_cvv_123_pays_a_v4_sale_that_is_approved(shop: Merchant) -> None:
    ticket = ephemeral_ticket(shop)
    tokenized = tokenize(shop, ticket)
    assert tokenized.status_code == 200, tokenized.text
    client_orderid = f"hf-{uuid.uuid4().hex[:8]}"
    answer = sale(shop, tokenized.json()["token"], client_orderid)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert isinstance(body["paynet-order-id"], int) and body["paynet-order-id"] < 2**53
    assert body["merchant-order-id"] == client_orderid
    uuid.UUID(body["serial-number"])
    found = final_status(shop, str(body["paynet-order-id"]))
    assert found["status"] == "approved"
    card = (found["cardholder-name"], found["card-type"], found["last-four-digits"], found["bin"])
    assert card == ("Jane Doe", "VISA", "4448", "444444")
    assert found["approval-code"] and found["processor-rrn"]


def test_a_ticket_is_200_json_with_only_its_ticket_beside_type_and_serial(shop: Merchant) -> None:
    answer = v4_post(shop, "tokenize/create-ephemeral-ticket", [])
    assert answer.status_code == 200
    assert set(answer.json()) == {"ephemeralTicket", "type", "serial-number"}
    assert len(answer.json()["ephemeralTicket"]) >= 40


def test_a_ticket_signed_with_a_key_the_merchant_did_not_register_is_refused(shop: Merchant) -> None:
    answer = v4_post(shop, "tokenize/create-ephemeral-ticket", [], key=key_pair(which=1)[0])
    assert (answer.status_code, answer.json()["error-code"]) == (401, "2")
    assert "ephemeralTicket" not in answer.json()


def test_a_v4_sale_signed_with_a_wrong_key_is_401_with_a_numeric_error_code(shop: Merchant) -> None:
    token = token_for(shop)
    answer = v4_post(shop, "sale", sale_fields(token), key=key_pair(which=1)[0])
    assert answer.status_code == 401
    assert answer.json()["error-code"] == 2 and answer.json()["error-message"]
    assert sale(shop, token).status_code == 200  # the token was not spent by the refused request


def test_a_token_pays_one_sale_and_a_repeat_of_that_sale_gets_its_answer(shop: Merchant) -> None:
    token = token_for(shop)
    first = sale(shop, token, client_orderid := f"hf-{uuid.uuid4().hex[:8]}")
    assert first.status_code == 200, first.text
    repeat = sale(shop, token, client_orderid)
    assert (repeat.status_code, repeat.json()["paynet-order-id"]) == (200, first.json()["paynet-order-id"])
    again = sale(shop, token)
    assert again.status_code == 400
    assert again.json()["error-code"] == 1
    assert "hosted_fields_token was used already" in again.json()["error-message"]


def test_of_concurrent_sales_with_one_token_exactly_one_is_opened(shop: Merchant) -> None:
    token = token_for(shop)
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: sale(shop, token), range(8)))
    assert sorted(a.status_code for a in answers) == [200] + [400] * 7
    assert {a.json()["error-code"] for a in answers if a.status_code == 400} == {1}


def test_a_v4_sale_with_both_a_token_and_card_fields_is_code_1(shop: Merchant) -> None:
    token = token_for(shop)
    answer = sale(shop, token, credit_card_number="4111111111111111", expire_month="12", expire_year="2030")
    assert (answer.status_code, answer.json()["error-code"]) == (400, 1)
    assert "hosted_fields_token cannot be sent with card fields" in answer.json()["error-message"]
    assert sale(shop, token).status_code == 200


def test_a_v4_sale_with_neither_token_nor_card_names_credit_card_number(shop: Merchant) -> None:
    fields = [(k, v) for k, v in sale_fields("x") if k != "hosted_fields_token"]
    answer = v4_post(shop, "sale", fields)
    assert (answer.status_code, answer.json()["error-code"]) == (400, 1)
    assert answer.json()["error-message"].startswith("credit_card_number is required")


def test_a_v4_sale_with_the_card_fields_is_a_sale(shop: Merchant) -> None:
    fields = [(k, v) for k, v in sale_fields("x") if k != "hosted_fields_token"]
    card = [("credit_card_number", TEST_CARD), ("expire_month", "12"), ("expire_year", "2030"), ("cvv2", "123")]
    answer = v4_post(shop, "sale", [*fields, *card])
    assert answer.status_code == 200, answer.text
    assert final_status(shop, str(answer.json()["paynet-order-id"]))["status"] == "approved"


def test_another_merchants_token_is_refused(shop: Merchant, make_merchant: Callable[..., Merchant]) -> None:
    other = v4_merchant(make_merchant())
    answer = sale(other, token_for(shop))
    assert (answer.status_code, answer.json()["error-code"]) == (400, 1)
    assert "unknown or has expired" in answer.json()["error-message"]


def test_a_token_pays_only_at_the_endpoint_its_ticket_was_made_for(shop: Merchant) -> None:
    """The SDK was initialised with the ticket's endpoint: its token is refused at the merchant's others."""
    created = shop.gateway.cli("endpoint", "create", "--merchant", shop.login, "--currency", "USD")
    elsewhere = Merchant(shop.gateway, shop.login, shop.control_key, created["id"], "USD")
    answer = sale(elsewhere, token_for(shop))
    assert (answer.status_code, answer.json()["error-code"]) == (400, 1)
    assert "unknown or has expired" in answer.json()["error-message"]


def test_a_token_pays_through_a_group_only_at_the_member_its_ticket_was_made_for(shop: Merchant) -> None:
    """A group holding the ticket's endpoint opens a sale in another currency at another member: refused."""
    eur = shop.gateway.cli("endpoint", "create", "--merchant", shop.login, "--currency", "EUR")
    members = f"{shop.endpoint_id},{eur['id']}"
    group = shop.gateway.cli("group", "create", "--merchant", shop.login, "--endpoints", members)
    url = f"{shop.gateway.base}/api/v4/sale/group/{group['id']}"
    for currency, refused in (("EUR", True), ("USD", False)):
        fields = [(k, currency if k == "currency" else v) for k, v in sale_fields(token_for(shop))]
        answer = signed_post(url, fields, login=shop.login, private_key_pem=key_pair()[0], headers={})
        assert (answer.status_code == 400, currency) == (refused, currency), answer.text


def test_a_ticket_tokenizes_once(shop: Merchant) -> None:
    ticket = ephemeral_ticket(shop)
    assert tokenize(shop, ticket).status_code == 200
    again = tokenize(shop, ticket)
    assert (again.status_code, again.json()["code"]) == (400, 4003)


def test_a_refused_card_number_spends_the_ticket_and_a_bad_cvv_does_not(shop: Merchant) -> None:
    ticket = ephemeral_ticket(shop)
    short_cvv = tokenize(shop, ticket, cvv="12")
    assert (short_cvv.status_code, short_cvv.json()["code"], short_cvv.json()["field"]) == (400, 2202, "cvv")
    past = tokenize(shop, ticket, exp="01/20")
    assert past.json()["code"] == 2103
    refused = tokenize(shop, ticket, pan="4444 4444 4444 4444")  # fails Luhn
    assert (refused.json()["code"], refused.json()["field"]) == (4004, "pan")
    assert tokenize(shop, ticket).json()["code"] == 4003


def test_a_ticket_of_another_endpoint_or_an_unknown_one_is_4001(shop: Merchant) -> None:
    other = v4_merchant(new_merchant(shop.gateway, f"m-{uuid.uuid4().hex[:10]}"))
    assert tokenize(other, ephemeral_ticket(shop)).json()["code"] == 4001
    assert tokenize(shop, "not-a-ticket").json()["code"] == 4001


def test_tokenize_takes_json_only(shop: Merchant) -> None:
    """A form post from another site's page (no CORS preflight) cannot reach it."""
    url = f"{shop.gateway.base}/hosted-fields/v1/tokenize"
    answer = httpx.post(url, data={"ticket": ephemeral_ticket(shop), "pan": TEST_CARD}, timeout=30, verify=TLS)
    assert answer.status_code == 415


def test_the_card_number_never_reaches_the_gateways_log(shop: Merchant) -> None:
    token = token_for(shop)
    sale(shop, token)
    text = shop.gateway.log_text()
    assert "4444444444444448" not in text and TEST_CARD not in text


def test_cvv_321_on_a_token_gives_a_3_d_secure_challenge_through_redirect_to(shop: Merchant) -> None:
    answer = sale(shop, token_for(shop, cvv="321"), redirect_url="https://shop.example/back")
    order_id = str(answer.json()["paynet-order-id"])
    deadline = time.monotonic() + 15
    while (found := status(shop, order_id))["order-stage"] == "sale_processing" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (found["status"], found["order-stage"]) == ("processing", "sale_3d_validating")
    assert found["redirect-to"].startswith(f"{shop.gateway.base}/checkout/")


def test_an_expired_ticket_tokenizes_nothing_and_a_token_expires_with_its_ticket(
    clock_gateway: Gateway, clock_merchant: Merchant
) -> None:
    shop = v4_merchant(clock_merchant)
    late_ticket = ephemeral_ticket(shop)
    token = token_for(shop)
    clock_gateway.advance(15 * 60 + 1)
    assert tokenize(shop, late_ticket).json()["code"] == 4002
    answer = sale(shop, token)
    assert (answer.status_code, answer.json()["error-code"]) == (400, 1)
    assert "unknown or has expired" in answer.json()["error-message"]
    assert kept_card_secrets(clock_gateway, shop) == 0  # the unused card's number and CVV are gone


def kept_card_secrets(gateway: Gateway, m: Merchant) -> int:
    """How many of the merchant's tickets still keep a card number or a CVV."""
    from sqlalchemy import func, or_, select

    from kassa.storage.database import open_database
    from kassa.storage.tables import hosted_fields_tickets as tickets
    from kassa.storage.tables import merchants

    db = open_database(gateway.database_url, threads=1)
    try:
        query = (
            select(func.count())
            .select_from(tickets.join(merchants, merchants.c.id == tickets.c.merchant_id))
            .where(merchants.c.login == m.login)
            .where(or_(tickets.c.pan_ciphertext.is_not(None), tickets.c.cvv_ciphertext.is_not(None)))
        )
        return int(db.read_sync(lambda conn: conn.execute(query).scalar_one()))
    finally:
        db.close()


def test_a_sale_leaves_its_ticket_neither_the_card_number_nor_the_cvv(shop: Merchant) -> None:
    token = token_for(shop)
    assert kept_card_secrets(shop.gateway, shop) == 1
    assert sale(shop, token).status_code == 200
    assert kept_card_secrets(shop.gateway, shop) == 0


def test_a_ticket_within_its_15_minutes_still_tokenizes(clock_gateway: Gateway, clock_merchant: Merchant) -> None:
    shop = v4_merchant(clock_merchant)
    ticket = ephemeral_ticket(shop)
    clock_gateway.advance(14 * 60)
    assert tokenize(shop, ticket).status_code == 200
