"""The Idempotency-Key header (CONTRACT §7): the first answer, byte for byte, for 24 hours."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

from tests.support.gateway import JSON_ACCEPT, Merchant
from tests.support.operations import approved_order, refund


def _sale_with_key(merchant: Merchant, key: str, client_orderid: str, amount: str = "10.00") -> tuple[int, bytes]:
    data = merchant.sale_fields(client_orderid, amount=amount)
    answer = merchant.gateway.post(
        f"/api/v2/sale/{merchant.endpoint_id}", data, {**JSON_ACCEPT, "Idempotency-Key": key}
    )
    return answer.status_code, answer.content


def test_repeat_with_the_same_key_and_body_gets_the_first_answer_byte_for_byte(merchant: Merchant) -> None:
    key = str(uuid.uuid4())
    first = _sale_with_key(merchant, key, "ik-1")
    assert first[0] == 200
    assert _sale_with_key(merchant, key, "ik-1") == first


def test_same_key_with_another_body_is_code_4(merchant: Merchant) -> None:
    key = str(uuid.uuid4())
    _sale_with_key(merchant, key, "ik-2")
    status, body = _sale_with_key(merchant, key, "ik-2", amount="11.00")
    assert status == 400
    assert b'"error-code":"4"' in body


def test_concurrent_repeats_of_a_return_with_one_key_run_it_once(merchant: Merchant) -> None:
    order = approved_order(merchant, "ik-3", amount="50.00")
    key = str(uuid.uuid4())
    with ThreadPoolExecutor(10) as pool:
        answers = list(
            pool.map(lambda _: refund(merchant, "ik-3", order, "10.00", **{"Idempotency-Key": key}), range(10))
        )
    assert {a.status_code for a in answers} == {200}
    assert len({a.content for a in answers}) == 1
    merchant.wait_final(order)
    assert merchant.status(orderid=order).json()["refunded-amount"] == "10.00"


def test_refusals_are_replayed_too(merchant: Merchant) -> None:
    order = approved_order(merchant, "ik-4", amount="5.00")
    key = str(uuid.uuid4())
    first = refund(merchant, "ik-4", order, "6.00", **{"Idempotency-Key": key})
    assert first.json()["error-code"] == "7"
    assert refund(merchant, "ik-4", order, "6.00", **{"Idempotency-Key": key}).content == first.content


def test_key_longer_than_255_characters_is_code_1(merchant: Merchant) -> None:
    status, body = _sale_with_key(merchant, "k" * 256, "ik-5")
    assert status == 400
    assert b"Idempotency-Key" in body
