"""Status signed as v4 (CONTRACT §17, /api/v4/status): OAuth RSA-SHA256 instead of control, the same
answer as v2 status, in JSON without an Accept header, as the original gateway's v4 examples read it."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import httpx
import pytest

from tests.support.gateway import TLS, Merchant
from tests.support.oauth import key_pair, register_key, signed_post
from tests.support.operations import approved_order


@pytest.fixture
def shop(make_merchant: Callable[..., Merchant]) -> Merchant:
    merchant = make_merchant()
    register_key(merchant.gateway, merchant.login, key_pair()[1])
    return merchant


def status_v4(m: Merchant, fields: list[tuple[str, str]], private_key_pem: str | None = None) -> httpx.Response:
    url = f"{m.gateway.base}/api/v4/status/{m.endpoint_id}"
    return signed_post(url, fields, login=m.login, private_key_pem=private_key_pem or key_pair()[0], headers={})


def _order() -> str:
    return f"s4-{uuid.uuid4().hex[:10]}"


def test_v4_status_reports_an_approved_sale_with_its_card_in_json(shop: Merchant) -> None:
    client_orderid = _order()
    order = approved_order(shop, client_orderid, amount="10.42")
    answer = status_v4(shop, [("login", shop.login), ("client_orderid", client_orderid), ("orderid", order)])
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/vnd.pay+json; charset=utf-8"
    body = answer.json()
    assert (body["type"], body["status"], body["paynet-order-id"]) == ("status-response", "approved", order)
    assert (body["merchant-order-id"], body["amount"], body["transaction-type"]) == (client_orderid, "10.42", "sale")
    card = (body["cardholder-name"], body["card-type"], body["last-four-digits"])
    assert card == ("Jane Doe", "VISA", "1111")
    assert body["approval-code"] and body["processor-rrn"]
    assert "control" not in body and "error-message" not in body


def test_v4_status_finds_the_order_by_client_orderid_alone(shop: Merchant) -> None:
    client_orderid = _order()
    order = approved_order(shop, client_orderid)
    body = status_v4(shop, [("client-order-id", client_orderid)]).json()
    assert (body["paynet-order-id"], body["status"]) == (order, "approved")


def test_v4_status_of_a_declined_sale_carries_its_error_message(shop: Merchant) -> None:
    client_orderid = _order()
    order = shop.sale(client_orderid, cvv2="116").json()["paynet-order-id"]
    shop.wait_final(order)
    body = status_v4(shop, [("login", shop.login), ("client_orderid", client_orderid), ("orderid", order)]).json()
    assert (body["status"], body["error-code"]) == ("declined", "116")
    assert body["error-message"]


def test_v4_status_while_3_d_secure_waits_gives_an_absolute_redirect_to(shop: Merchant) -> None:
    client_orderid = _order()
    order = shop.sale(client_orderid, cvv2="321").json()["paynet-order-id"]
    shop.wait_stage(order, leaving="sale_processing")
    body = status_v4(shop, [("login", shop.login), ("client_orderid", client_orderid), ("orderid", order)]).json()
    assert (body["status"], body["order-stage"]) == ("processing", "sale_3d_validating")
    assert body["redirect-to"].startswith(f"{shop.gateway.base}/checkout/")
    assert httpx.get(body["redirect-to"], verify=TLS).status_code == 200


def test_v4_status_signed_with_a_key_the_merchant_did_not_register_is_refused_with_401(shop: Merchant) -> None:
    order = approved_order(shop, client_orderid := _order())
    other_key = key_pair(which=1)[0]
    answer = status_v4(shop, [("client_orderid", client_orderid), ("orderid", order)], private_key_pem=other_key)
    assert (answer.status_code, answer.json()["error-code"]) == (401, "2")
    assert "status" not in answer.json()


def test_v4_status_with_a_control_instead_of_a_signature_is_refused_with_401(shop: Merchant) -> None:
    order = approved_order(shop, client_orderid := _order())
    answer = shop.gateway.post(
        f"/api/v4/status/{shop.endpoint_id}", {"client_orderid": client_orderid, "orderid": order, "control": "0" * 40}
    )
    assert (answer.status_code, answer.json()["error-code"]) == (401, "2")


def test_v4_status_naming_another_merchants_login_is_code_3(shop: Merchant) -> None:
    order = approved_order(shop, client_orderid := _order())
    answer = status_v4(shop, [("login", "someone-else"), ("client_orderid", client_orderid), ("orderid", order)])
    assert (answer.status_code, answer.json()["error-code"]) == (400, "3")


def test_v4_status_of_an_unknown_order_is_code_5(shop: Merchant) -> None:
    answer = status_v4(shop, [("client_orderid", _order())])
    assert (answer.status_code, answer.json()["error-code"]) == (400, "5")
