"""Duplicate order-starting requests (CONTRACT §7): a repeat gets the original answer and charges nothing
more; a repeat with other fields is refused with code 4; a burst of identical requests starts one order."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

import httpx
import pytest

from tests.support.gateway import JSON_ACCEPT, Merchant


def _order() -> str:
    return f"o-{uuid.uuid4().hex[:10]}"


def orders_of(merchant: Merchant) -> list[dict[str, str]]:
    return list(merchant.gateway.cli("order", "list", "--merchant", merchant.login))


def test_same_sale_sent_twice_gets_the_original_answer_and_one_order(merchant: Merchant) -> None:
    client_orderid = _order()
    first = merchant.sale(client_orderid)
    assert first.status_code == 200, first.text
    order_id = first.json()["paynet-order-id"]
    assert merchant.wait_final(order_id)["status"] == "approved"

    again = merchant.sale(client_orderid)
    assert again.status_code == 200, again.text
    assert again.json() == first.json()

    listed = orders_of(merchant)
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

    listed = orders_of(merchant)
    assert [o["id"] for o in listed] == [int(first.json()["paynet-order-id"])]
    assert listed[0]["amount"] == "10.42"


def test_same_client_orderid_on_another_merchant_is_a_new_order(make_merchant: Callable[..., Merchant]) -> None:
    one, two = make_merchant(), make_merchant()
    client_orderid = _order()
    first, second = one.sale(client_orderid), two.sale(client_orderid)
    assert first.status_code == second.status_code == 200
    assert first.json()["paynet-order-id"] != second.json()["paynet-order-id"]


def test_twenty_identical_sales_sent_at_once_start_one_order(merchant: Merchant) -> None:
    data = merchant.sale_fields(_order())
    url = f"{merchant.gateway.base}/api/v2/sale/{merchant.endpoint_id}"
    start = threading.Barrier(20)
    answers: list[httpx.Response | BaseException] = []
    lock = threading.Lock()

    def send() -> None:
        with httpx.Client(timeout=30) as client:
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

    listed = orders_of(merchant)
    assert len(listed) == 1
    shown = merchant.gateway.cli("order", "show", str(listed[0]["id"]))
    assert len(shown["transactions"]) == 1
    assert merchant.wait_final(responses[0].json()["paynet-order-id"])["status"] == "approved"
