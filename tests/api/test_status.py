"""Status (CONTRACT §4 formula, §5 status-response fields): how a merchant names an order, and what it reads
back about an approved sale."""

from __future__ import annotations

import dataclasses
import datetime
import uuid

import httpx
import pytest

from tests.support.gateway import Gateway, Merchant, new_merchant, sha1

CARD = "4111111111111111"
DESCRIPTOR = "KASSA*TESTSHOP"


@dataclasses.dataclass(frozen=True)
class Sale:
    client_orderid: str
    order_id: str
    serial: str


@pytest.fixture(scope="module")
def shop(shared_gateway: Gateway) -> Merchant:
    return new_merchant(shared_gateway, f"m-{uuid.uuid4().hex[:10]}", descriptor=DESCRIPTOR)


@pytest.fixture(scope="module")
def other_shop(shared_gateway: Gateway) -> Merchant:
    return new_merchant(shared_gateway, f"m-{uuid.uuid4().hex[:10]}")


@pytest.fixture(scope="module")
def approved(shop: Merchant) -> Sale:
    """One approved sale the tests of this module read back."""
    client_orderid = f"o-{uuid.uuid4().hex[:10]}"
    answer = shop.sale(client_orderid, expire_month="03", card_printed_name="Jane Q. Doe")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    final = shop.wait_final(body["paynet-order-id"])
    assert final["status"] == "approved", final
    return Sale(client_orderid, body["paynet-order-id"], body["serial-number"])


def status_answer(response: httpx.Response) -> dict[str, str]:
    assert response.status_code == 200, response.text
    body = dict(response.json())
    assert body["type"] == "status-response", body
    uuid.UUID(body["serial-number"])
    return body


def refused(response: httpx.Response, code: int) -> dict[str, str]:
    assert response.status_code == 400, response.text
    body = dict(response.json())
    assert body["type"] == "validation-error", body
    assert body["error-code"] == str(code), body
    return body


def test_status_by_orderid_reports_the_order(shop: Merchant, approved: Sale) -> None:
    body = status_answer(shop.status(orderid=approved.order_id))
    assert body["status"] == "approved"
    assert body["paynet-order-id"] == approved.order_id
    assert body["merchant-order-id"] == approved.client_orderid


def test_status_by_orderid_and_client_orderid_reports_the_order(shop: Merchant, approved: Sale) -> None:
    body = status_answer(shop.status(orderid=approved.order_id, client_orderid=approved.client_orderid))
    assert body["paynet-order-id"] == approved.order_id


def test_status_by_client_orderid_alone_signs_an_empty_orderid(shop: Merchant, approved: Sale) -> None:
    data = {
        "login": shop.login,
        "client_orderid": approved.client_orderid,
        "control": sha1(shop.login, approved.client_orderid, "", shop.control_key),
    }
    body = status_answer(shop.gateway.post(f"/api/v2/status/{shop.endpoint_id}", data))
    assert body["paynet-order-id"] == approved.order_id
    assert body["status"] == "approved"


def test_status_by_client_orderid_with_an_empty_orderid_field_is_the_same(shop: Merchant, approved: Sale) -> None:
    data = {
        "login": shop.login,
        "client_orderid": approved.client_orderid,
        "orderid": "",
        "control": sha1(shop.login, approved.client_orderid, "", shop.control_key),
    }
    body = status_answer(shop.gateway.post(f"/api/v2/status/{shop.endpoint_id}", data))
    assert body["paynet-order-id"] == approved.order_id


def test_status_by_request_sn_reports_that_transaction_and_echoes_it(shop: Merchant, approved: Sale) -> None:
    body = status_answer(shop.status(orderid=approved.order_id, **{"by-request-sn": approved.serial}))
    assert body["by-request-sn"] == approved.serial
    assert body["transaction-type"] == "sale"
    assert body["status"] == "approved"
    assert body["serial-number"] != approved.serial  # the status request's own serial


def test_status_without_by_request_sn_does_not_echo_it(shop: Merchant, approved: Sale) -> None:
    assert "by-request-sn" not in status_answer(shop.status(orderid=approved.order_id))


def test_status_by_unknown_request_sn_is_refused_with_code_5(shop: Merchant, approved: Sale) -> None:
    refused(shop.status(orderid=approved.order_id, **{"by-request-sn": str(uuid.uuid4())}), 5)


def test_status_of_an_unknown_orderid_is_refused_with_code_5(shop: Merchant) -> None:
    refused(shop.status(orderid="987654321987654"), 5)


def test_status_of_an_unknown_client_orderid_is_refused_with_code_5(shop: Merchant) -> None:
    refused(shop.status(client_orderid=f"never-{uuid.uuid4().hex}"), 5)


def test_status_with_a_client_orderid_of_another_order_is_refused_with_code_5(shop: Merchant, approved: Sale) -> None:
    refused(shop.status(orderid=approved.order_id, client_orderid=f"other-{uuid.uuid4().hex}"), 5)


def test_status_of_another_merchants_order_is_refused_with_code_5(other_shop: Merchant, approved: Sale) -> None:
    body = refused(other_shop.status(orderid=approved.order_id), 5)
    assert approved.client_orderid not in body["error-message"]


def test_status_naming_no_order_is_refused_with_code_1(shop: Merchant) -> None:
    body = refused(shop.status(), 1)
    assert "orderid" in body["error-message"]


def test_status_with_wrong_control_is_refused_with_code_2(shop: Merchant, approved: Sale) -> None:
    data = {"login": shop.login, "orderid": approved.order_id, "control": sha1(shop.login, approved.order_id)}
    refused(shop.gateway.post(f"/api/v2/status/{shop.endpoint_id}", data), 2)


def test_status_of_an_approved_sale_has_every_field_of_a_sale(shop: Merchant, approved: Sale) -> None:
    body = status_answer(shop.status(orderid=approved.order_id))
    assert body["status"] == "approved"
    assert body["merchant-order-id"] == approved.client_orderid
    assert body["paynet-order-id"] == approved.order_id
    assert body["transaction-type"] == "sale"
    assert body["order-stage"] == "sale_approved"
    assert body["amount"] == "10.42"
    assert body["currency"] == "USD"
    assert body["end-point-id"] == str(shop.endpoint_id)
    assert body["bin"] == "411111"
    assert body["last-four-digits"] == "1111"
    assert body["card-type"] == "VISA"
    assert body["card-exp-month"] == "03"
    assert body["card-exp-year"] == "2030"
    assert body["cardholder-name"] == "Jane Q. Doe"
    assert body["email"] == "cardholder@example.com"
    assert body["approval-code"]
    assert body["processor-rrn"]
    assert body["processor-tx-id"] == f"PNTEST-{approved.order_id}"
    assert body["descriptor"] == DESCRIPTOR
    processed = datetime.datetime.fromisoformat(body["paynet-processing-date"])
    assert processed.tzinfo is not None
    assert abs(processed - datetime.datetime.now(datetime.UTC)) < datetime.timedelta(hours=1)
    assert "error-code" not in body
    assert "error-message" not in body
    assert all(isinstance(value, str) for value in body.values())


def test_status_never_shows_the_full_card_number(shop: Merchant, approved: Sale) -> None:
    response = shop.status(orderid=approved.order_id)
    assert CARD not in response.text
    by_sn = shop.status(orderid=approved.order_id, **{"by-request-sn": approved.serial})
    assert CARD not in by_sn.text


def test_status_of_a_declined_sale_carries_its_error_code(shop: Merchant) -> None:
    answer = shop.sale(f"o-{uuid.uuid4().hex[:10]}", cvv2="116")
    final = shop.wait_final(answer.json()["paynet-order-id"])
    assert final["status"] == "declined"
    assert final["order-stage"] == "sale_declined"
    assert final["error-code"] == "116"
    assert final["error-message"]
    assert final["processor-tx-id"] == f"PNTEST-{answer.json()['paynet-order-id']}"
