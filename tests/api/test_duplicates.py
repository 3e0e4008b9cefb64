"""Duplicate order-starting requests (CONTRACT §7): a repeat gets the original answer and charges nothing
more; a repeat with other fields is refused with code 4; a burst of identical requests starts one order."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

import httpx
import pytest

from kassa.api.handlers.payments import canonical_values
from kassa.domain import money
from tests.support.gateway import JSON_ACCEPT, TLS, Gateway, Merchant, new_merchant


def _order() -> str:
    return f"o-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def merchant(shared_gateway: Gateway) -> Merchant:
    return new_merchant(shared_gateway, f"m-{uuid.uuid4().hex[:10]}")


@pytest.fixture(scope="module")
def other_merchant(shared_gateway: Gateway) -> Merchant:
    return new_merchant(shared_gateway, f"m-{uuid.uuid4().hex[:10]}")


def orders_of(merchant: Merchant, client_orderid: str) -> list[dict[str, str]]:
    """The merchant's orders with this client_orderid, as ``kassa order list`` shows them to an operator."""
    listed = merchant.gateway.cli("order", "list", "--merchant", merchant.login, "--limit", "1000")
    return [order for order in listed if order["client_orderid"] == client_orderid]


def test_same_sale_sent_twice_gets_the_original_answer_and_one_order(merchant: Merchant) -> None:
    client_orderid = _order()
    first = merchant.sale(client_orderid)
    assert first.status_code == 200, first.text
    order_id = first.json()["paynet-order-id"]
    assert merchant.wait_final(order_id)["status"] == "approved"

    again = merchant.sale(client_orderid)
    assert again.status_code == 200, again.text
    assert again.json() == first.json()

    listed = orders_of(merchant, client_orderid)
    assert [o["id"] for o in listed] == [int(order_id)]
    assert listed[0]["client_orderid"] == client_orderid
    assert listed[0]["status"] == "approved"


@pytest.mark.parametrize(
    "changed",
    [
        {"amount": "11.00"},
        {"credit_card_number": "5555555555554444"},
        {"order_desc": "Another order"},
        {"email": "someone.else@example.com"},
    ],
    ids=lambda changed: next(iter(changed)),
)
def test_same_client_orderid_with_different_fields_is_refused_with_code_4(
    merchant: Merchant, changed: dict[str, str]
) -> None:
    client_orderid = _order()
    first = merchant.sale(client_orderid)
    assert first.status_code == 200, first.text

    repeat = merchant.sale(client_orderid, **changed)
    assert repeat.status_code == 400, repeat.text
    body = repeat.json()
    assert body["type"] == "validation-error"
    assert body["error-code"] == "4"
    assert body["merchant-order-id"] == client_orderid

    listed = orders_of(merchant, client_orderid)
    assert [o["id"] for o in listed] == [int(first.json()["paynet-order-id"])]
    assert listed[0]["amount"] == "10.42"


def _upper_control(data: dict[str, str]) -> dict[str, str]:
    return {**data, "control": data["control"].upper()}


def _alias(data: dict[str, str]) -> dict[str, str]:
    spelled = {k: v for k, v in data.items() if k != "client_orderid"}
    return {"client-order-id": data["client_orderid"], **spelled}


def _padded(data: dict[str, str]) -> dict[str, str]:
    return {k: f" {v} " for k, v in data.items()}


def _extra_field(data: dict[str, str]) -> dict[str, str]:
    return {**data, "favourite_colour": "blue"}


@pytest.mark.parametrize("respell", [_upper_control, _alias, _padded, _extra_field], ids=lambda f: f.__name__[1:])
def test_repeat_that_differs_only_in_spelling_gets_the_original_answer(
    merchant: Merchant, respell: Callable[[dict[str, str]], dict[str, str]]
) -> None:
    data = merchant.sale_fields(_order())
    path = f"/api/v2/sale/{merchant.endpoint_id}"
    first = merchant.gateway.post(path, data)
    assert first.status_code == 200, first.text
    again = merchant.gateway.post(path, respell(data))
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    assert len(orders_of(merchant, data["client_orderid"])) == 1


def test_same_client_orderid_on_another_merchant_is_a_new_order(merchant: Merchant, other_merchant: Merchant) -> None:
    client_orderid = _order()
    first, second = merchant.sale(client_orderid), other_merchant.sale(client_orderid)
    assert first.status_code == second.status_code == 200
    assert first.json()["paynet-order-id"] != second.json()["paynet-order-id"]


def test_twenty_identical_sales_sent_at_once_start_one_order(merchant: Merchant) -> None:
    client_orderid = _order()
    data = merchant.sale_fields(client_orderid)
    url = f"{merchant.gateway.base}/api/v2/sale/{merchant.endpoint_id}"
    start = threading.Barrier(20)
    answers: list[httpx.Response | BaseException] = []
    lock = threading.Lock()

    def send() -> None:
        with httpx.Client(timeout=30, verify=TLS) as client:
            start.wait()
            try:
                answer: httpx.Response | BaseException = client.post(url, data=data, headers=JSON_ACCEPT)
            except httpx.HTTPError as failure:
                answer = failure
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=send) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert len(answers) == 20
    responses = [a for a in answers if isinstance(a, httpx.Response)]
    assert [a for a in answers if not isinstance(a, httpx.Response)] == []
    assert [r.status_code for r in responses] == [200] * 20, [r.text for r in responses if r.status_code != 200]
    assert {r.json()["paynet-order-id"] for r in responses} == {responses[0].json()["paynet-order-id"]}
    assert {r.json()["serial-number"] for r in responses} == {responses[0].json()["serial-number"]}

    listed = orders_of(merchant, client_orderid)
    assert len(listed) == 1
    shown = merchant.gateway.cli("order", "show", str(listed[0]["id"]))
    assert len(shown["transactions"]) == 1
    assert merchant.wait_final(responses[0].json()["paynet-order-id"])["status"] == "approved"


def test_the_fingerprinted_text_of_a_request_keeps_the_form_stored_fingerprints_were_made_with() -> None:
    # Stored with every order: a change to this text would refuse retries of orders made before it.
    values = {"amount": 1042, "currency": money.currency("USD"), "client_orderid": "o-1", "control": "c"}
    assert canonical_values(values) == "amount=1042&client_orderid=o-1&currency=Currency(code='USD', exponent=2)"
