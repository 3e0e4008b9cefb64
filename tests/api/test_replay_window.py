"""An endpoint's replay window (issue 16, item 5): a follow-up whose signed values and control repeat an
earlier one's within the window gets the first answer and moves no money again."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode

import httpx

from tests.api.test_card_refs import make_rebill, stored_card
from tests.support.gateway import JSON_ACCEPT, Merchant
from tests.support.operations import (
    LEDGER_OK,
    approved_order,
    final,
    follow_up_fields,
    ledger_check,
    preauth,
)

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def guarded(m: Merchant, seconds: int) -> Merchant:
    """``m`` once its endpoint has a replay window of ``seconds`` (set as an operator sets it)."""
    m.gateway.cli("endpoint", "update", "--id", str(m.endpoint_id), "--replay-window", str(seconds))
    return m


def _send(m: Merchant, operation: str, body: str, **headers: str) -> httpx.Response:
    return m.gateway.post(f"/api/v2/{operation}/{m.endpoint_id}", body, {**JSON_ACCEPT, **FORM, **headers})


def _body(m: Merchant, client_orderid: str, order: str, amount: str | None = "10.00") -> str:
    return urlencode(follow_up_fields(m, client_orderid, order, amount))


def _amounts(m: Merchant, order: str) -> dict[str, str]:
    m.wait_final(order)
    status = m.status(orderid=order).json()
    return {name: status[name] for name in ("captured-amount", "refunded-amount")}


def test_replayed_return_within_the_window_answers_the_first_answer_and_moves_no_money(
    make_merchant: Callable[..., Merchant],
) -> None:
    m = guarded(make_merchant(), 600)
    order = approved_order(m, "rw-1", amount="100.00")
    body = _body(m, "rw-1", order)
    first = _send(m, "return", body)
    assert final(m, first)["status"] == "approved"
    replays = [_send(m, "return", body) for _ in range(4)]
    assert [(r.status_code, r.content) for r in replays] == [(200, first.content)] * 4
    assert _amounts(m, order)["refunded-amount"] == "10.00"
    assert ledger_check(m) == LEDGER_OK


def test_a_replay_with_unsigned_fields_added_or_another_idempotency_key_is_still_a_replay(
    make_merchant: Callable[..., Merchant],
) -> None:
    m = guarded(make_merchant(), 600)
    order = approved_order(m, "rw-2", amount="100.00")
    body = _body(m, "rw-2", order)
    first = _send(m, "return", body)
    assert first.status_code == 200, first.text
    reordered = urlencode(sorted(follow_up_fields(m, "rw-2", order, "10.0").items()))
    variants = [
        _send(m, "return", body + "&comment=again"),
        _send(m, "return", reordered),
        _send(m, "return", body, **{"Idempotency-Key": str(uuid.uuid4())}),
    ]
    assert [v.content for v in variants] == [first.content] * 3
    assert _amounts(m, order)["refunded-amount"] == "10.00"


def test_concurrent_identical_returns_within_the_window_move_money_once(
    make_merchant: Callable[..., Merchant],
) -> None:
    m = guarded(make_merchant(), 600)
    order = approved_order(m, "rw-3", amount="100.00")
    body = _body(m, "rw-3", order)
    with ThreadPoolExecutor(10) as pool:
        answers = list(pool.map(lambda _: _send(m, "return", body), range(10)))
    assert {a.status_code for a in answers} == {200}
    assert len({a.content for a in answers}) == 1
    assert _amounts(m, order)["refunded-amount"] == "10.00"
    assert ledger_check(m) == LEDGER_OK


def test_the_same_return_after_the_window_is_processed_again(clock_merchant: Merchant) -> None:
    m = guarded(clock_merchant, 60)
    order = approved_order(m, "rw-4", amount="100.00")
    body = _body(m, "rw-4", order)
    first = _send(m, "return", body)
    assert final(m, first)["status"] == "approved"
    m.gateway.advance(59)
    assert _send(m, "return", body).content == first.content
    m.gateway.advance(2)
    again = _send(m, "return", body)
    assert again.json()["serial-number"] != first.json()["serial-number"]
    assert final(m, again)["status"] == "approved"
    assert _amounts(m, order)["refunded-amount"] == "20.00"


def test_without_a_window_an_identical_return_is_processed_again(merchant: Merchant) -> None:
    order = approved_order(merchant, "rw-5", amount="100.00")
    body = _body(merchant, "rw-5", order)
    first, second = _send(merchant, "return", body), _send(merchant, "return", body)
    assert final(merchant, first)["status"] == final(merchant, second)["status"] == "approved"
    assert _amounts(merchant, order)["refunded-amount"] == "20.00"


def test_a_refused_follow_up_is_not_kept_so_it_may_be_sent_again(clock_merchant: Merchant) -> None:
    m = guarded(clock_merchant, 600)
    order = m.sale("rw-6", cvv2="217").json()["paynet-order-id"]
    assert m.wait_final(order)["status"] == "unknown"
    body = _body(m, "rw-6", order)
    assert _send(m, "return", body).json()["error-code"] == "6"
    m.gateway.advance(60)  # reconciliation approves the sale
    assert m.wait_stage(order, leaving="unknown", field="status")["status"] == "approved"
    assert final(m, _send(m, "return", body))["status"] == "approved"
    assert _amounts(m, order)["refunded-amount"] == "10.00"


def test_replayed_capture_within_the_window_captures_once(make_merchant: Callable[..., Merchant]) -> None:
    m = guarded(make_merchant(multi_capture=True), 600)
    order = preauth(m, "rw-7", "100.00").json()["paynet-order-id"]
    assert m.wait_final(order)["status"] == "approved"
    body = _body(m, "rw-7", order)
    first = _send(m, "capture", body)
    assert final(m, first)["status"] == "approved"
    assert _send(m, "capture", body).content == first.content
    assert _amounts(m, order)["captured-amount"] == "10.00"


def test_replayed_void_within_the_window_answers_the_first_answer(make_merchant: Callable[..., Merchant]) -> None:
    m = guarded(make_merchant(), 600)
    order = approved_order(m, "rw-8")
    body = _body(m, "rw-8", order, None)
    first = _send(m, "void", body)
    assert final(m, first)["status"] == "approved"
    assert _send(m, "void", body).content == first.content


def test_replayed_rebill_within_the_window_answers_the_first_answer(make_merchant: Callable[..., Merchant]) -> None:
    m = guarded(make_merchant(), 600)
    ref = stored_card(m)
    first = make_rebill(m, "rw-9", ref)
    assert final(m, first)["status"] == "approved"
    assert make_rebill(m, "rw-9", ref).content == first.content


def test_idempotency_keys_in_the_replay_windows_namespace_are_refused(merchant: Merchant) -> None:
    order = approved_order(merchant, "rw-10")
    answer = _send(merchant, "return", _body(merchant, "rw-10", order), **{"Idempotency-Key": "replay-window:x"})
    assert (answer.status_code, answer.json()["error-code"]) == (400, "1")
    assert "Idempotency-Key" in answer.json()["error-message"]


def test_a_shifted_split_of_the_signed_values_is_the_same_request_within_the_window(
    make_merchant: Callable[..., Merchant],
) -> None:
    m = guarded(make_merchant(), 600)
    order = approved_order(m, "rw-11", amount="100.00")
    first = _send(m, "return", _body(m, "rw-11", order))
    assert first.status_code == 200, first.text
    shifted = follow_up_fields(m, "rw-11", order, "10.00")
    # Signs exactly as the first; the digit moves into orderid, never empties it (an order id of one digit).
    shifted.update(client_orderid="rw-1", orderid="1" + order)
    assert _send(m, "return", urlencode(shifted)).content == first.content
