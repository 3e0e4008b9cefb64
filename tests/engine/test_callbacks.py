"""Callbacks (CONTRACT §10) delivered to a real HTTP receiver: signed, at least once, in order, retried."""

from __future__ import annotations

import datetime
import itertools
import time
from collections.abc import Callable

import pytest

from tests.support.databases import run_sql
from tests.support.gateway import Gateway, Merchant, free_port, new_merchant, sha1
from tests.support.operations import final, preauth, refund
from tests.support.receiver import Receiver, running

BASE_DELAY, BACKOFF = 15, 1.435  # the defaults of KASSA_CALLBACK_BASE_DELAY and KASSA_CALLBACK_BACKOFF


def _retry_delay(attempts: int) -> float:
    return float(BASE_DELAY * BACKOFF ** (attempts - 1))


def _attempts(gateway: Gateway, order: str) -> list[dict[str, object]]:
    [callback] = gateway.cli("callbacks", "list", "--order", order)
    attempts: list[dict[str, object]] = callback["attempts"]
    return attempts


def wait_attempts(gateway: Gateway, order: str, count: int, timeout: float = 15) -> None:
    """Waits until the order's callbacks have ``count`` attempts recorded: a failed attempt's retry is then
    queued, at a time a move of the clock can pass."""
    query = f"SELECT COALESCE(SUM(attempts), 0) FROM callbacks WHERE order_id = {int(order)}"
    deadline = time.monotonic() + timeout
    while run_sql(gateway.database_url, query) != [(count,)]:
        assert time.monotonic() < deadline, f"no attempt {count} for order {order}"
        time.sleep(0.02)


def test_sale_callback_carries_every_field_signed_and_notify_url_gets_the_return(merchant: Merchant) -> None:
    with running(Receiver(free_port())) as receiver:
        order = merchant.sale(
            "cb-1",
            cvv2="123",
            server_callback_url=receiver.url + "?shop=7",
            notify_url=receiver.url + "/notify",
            merchant_data="cart 42",
        ).json()["paynet-order-id"]
        [sale] = [r for r in receiver.wait_for(2) if r.path == "/callback"]
        assert sale.query == {
            "shop": "7",
            "status": "approved",
            "merchant_order": "cb-1",
            "client_orderid": "cb-1",
            "orderid": order,
            "type": "sale",
            "amount": "10.42",
            "currency": "USD",
            "descriptor": "",
            "error_code": "",
            "error_message": "",
            "name": "Jane Doe",
            "email": "cardholder@example.com",
            "approval-code": sale.query["approval-code"],
            "last-four-digits": "1111",
            "bin": "411111",
            "card-type": "VISA",
            "processor-rrn": sale.query["processor-rrn"],
            "processor-tx-id": f"PNTEST-{order}",
            "merchantdata": "cart 42",
            "control": sha1("approved", order, "cb-1", merchant.control_key),
        }
        assert final(merchant, refund(merchant, "cb-1", order, "2.00"))["status"] == "approved"
        received = receiver.wait_for(3)
    notified = [r.query["type"] for r in received if r.path == "/callback/notify"]
    assert notified == ["sale", "reversal"]
    assert [r.query["type"] for r in received if r.path == "/callback"] == ["sale"]


def test_callbacks_carry_no_cookie_a_receiver_set_before(merchant: Merchant) -> None:
    # Receivers of different merchants may share a host: the gateway keeps no state between callbacks.
    with running(Receiver(free_port(), host="localhost", set_cookie="session=merchant-a; Path=/")) as receiver:
        merchant.sale("ck-1", server_callback_url=receiver.url)
        receiver.wait_for(1)
        merchant.sale("ck-2", server_callback_url=receiver.url)
        received = receiver.wait_for(2)
    assert [(r.query["client_orderid"], r.cookie) for r in received] == [("ck-1", None), ("ck-2", None)]


def test_receiver_failing_three_times_gets_the_callback_on_the_fourth_attempt(clock_merchant: Merchant) -> None:
    gateway = clock_merchant.gateway
    receiver = Receiver(free_port(), script=["500", "timeout"])
    # First attempt: nobody listens yet (connection refused); then 500, then a timeout, then success.
    order = clock_merchant.sale("rt-1", server_callback_url=receiver.url).json()["paynet-order-id"]
    wait_attempts(gateway, order, 1)
    with running(receiver):
        for attempts in (1, 2):
            gateway.advance(_retry_delay(attempts))
            wait_attempts(gateway, order, attempts + 1)
        gateway.advance(_retry_delay(3))
        assert len(receiver.wait_for(1)) == 1
    attempts = _attempts(gateway, order)
    assert [(a["http_status"], a["error"]) for a in attempts] == [
        (None, "ConnectError"),
        (500, None),
        (None, "timeout"),
        (200, None),
    ]
    [callback] = gateway.cli("callbacks", "list", "--order", order, "--status", "delivered")
    assert callback["kind"] == "server_callback"


def test_retries_follow_the_configured_schedule_and_stop_after_the_last_attempt(clock_merchant: Merchant) -> None:
    gateway = clock_merchant.gateway  # four attempts at most (tests/conftest.py CLOCK_ENV)
    receiver = Receiver(free_port(), script=["500"] * 5)
    with running(receiver):
        order = clock_merchant.sale("sch-1", server_callback_url=receiver.url).json()["paynet-order-id"]
        for attempts in (1, 2, 3):
            wait_attempts(gateway, order, attempts)
            gateway.advance(_retry_delay(attempts))
        wait_attempts(gateway, order, 4)
        gateway.advance(30 * 86_400)
    [callback] = gateway.cli("callbacks", "list", "--order", order)
    assert callback["status"] == "failed"
    at = [datetime.datetime.fromisoformat(str(a["at"])) for a in callback["attempts"]]
    gaps = [(later - earlier).total_seconds() for earlier, later in itertools.pairwise(at)]
    assert len(gaps) == 3  # no fifth attempt, even a month on
    for gap, planned in zip(gaps, (15, 21.525, 30.888), strict=True):
        assert planned <= gap < planned + 1.0


def test_callback_pending_when_the_server_dies_is_delivered_once_after_restart(
    gateway_factory: Callable[..., Gateway],
) -> None:
    gateway = gateway_factory(KASSA_TEST_CLOCK="1")
    merchant = new_merchant(gateway, "restart")
    receiver = Receiver(free_port())
    order = merchant.sale("rs-1", server_callback_url=receiver.url).json()["paynet-order-id"]
    wait_attempts(gateway, order, 1)  # the status changed and the first attempt failed: nobody listened
    gateway.kill()
    with running(receiver):
        restarted = gateway_factory(KASSA_TEST_CLOCK="1")
        restarted.advance(BASE_DELAY)
        assert len(receiver.wait_for(1)) == 1
        restarted.advance(86_400)  # a second delivery, if any were due, would start now
        assert restarted.cli("callbacks", "list", "--order", order)[0]["status"] == "delivered"
        assert len(receiver.received) == 1
    assert [r.query["orderid"] for r in receiver.received] == [order]


def test_callbacks_of_one_order_arrive_in_transaction_order_even_when_the_first_fails(
    clock_merchant: Merchant,
) -> None:
    with running(Receiver(free_port(), script=["500"])) as receiver:
        order = preauth(clock_merchant, "ord-1", "50.00", notify_url=receiver.url).json()["paynet-order-id"]
        assert clock_merchant.wait_final(order)["status"] == "approved"
        cancel = final(clock_merchant, refund(clock_merchant, "ord-1", order))  # approved while the first waits
        assert cancel["transaction-type"] == "cancel"
        wait_attempts(clock_merchant.gateway, order, 1)
        assert receiver.received == []  # the cancel's callback waits for the preauth's
        clock_merchant.gateway.advance(BASE_DELAY)
        received = receiver.wait_for(2)
    assert [r.query["type"] for r in received] == ["preauth", "cancel"]


def test_a_callback_waiting_on_one_in_flight_goes_out_as_soon_as_that_one_is_delivered(
    gateway_factory: Callable[..., Gateway],
) -> None:
    # Polls 10 s apart: the cancel's callback, queued while the preauth's is still in flight, must not wait
    # for the next poll once the preauth's is delivered.
    gateway = gateway_factory(KASSA_POLL_INTERVAL="10")
    merchant = new_merchant(gateway, "in-flight")
    with running(Receiver(free_port(), script=["slow"], hang_seconds=2.0)) as receiver:
        order = preauth(merchant, "fl-1", "50.00", notify_url=receiver.url).json()["paynet-order-id"]
        assert merchant.wait_final(order)["status"] == "approved"
        cancel = final(merchant, refund(merchant, "fl-1", order))
        assert cancel["transaction-type"] == "cancel"
        received = receiver.wait_for(2, timeout=8)
    assert [r.query["type"] for r in received] == ["preauth", "cancel"]
    assert received[1].at - received[0].at < 2


def test_live_endpoint_refuses_private_callback_targets(make_merchant: Callable[..., Merchant]) -> None:
    merchant = make_merchant(live=True)
    for url in ("http://127.0.0.1/cb", "http://10.0.0.1/cb", "http://[::1]:8080/cb", "http://169.254.169.254/"):
        answer = merchant.sale("live-1", server_callback_url=url)
        assert (answer.status_code, answer.json()["error-code"]) == (400, "1"), url
        assert "server_callback_url" in answer.json()["error-message"]
    answer = merchant.sale("live-2", notify_url="http://192.168.1.1:9999/cb")
    assert "notify_url" in answer.json()["error-message"]


def test_operator_redelivers_a_delivered_callback(merchant: Merchant) -> None:
    gateway = merchant.gateway
    with running(Receiver(free_port())) as receiver:
        merchant.sale("rd-2", server_callback_url=receiver.url)
        receiver.wait_for(1)
        order = receiver.received[0].query["orderid"]
        assert gateway.cli("callbacks", "redeliver", "--order", order) == {"requeued": 1}
        assert len(receiver.wait_for(2)) == 2


@pytest.mark.backends("postgresql")
def test_two_gateways_on_one_database_deliver_each_callback_once(gateway_factory: Callable[..., Gateway]) -> None:
    first, second = gateway_factory(), gateway_factory()
    merchant = new_merchant(first, "two-dispatchers")
    with running(Receiver(free_port())) as receiver:
        orders = [
            merchant.sale(f"once-{n}", server_callback_url=receiver.url).json()["paynet-order-id"] for n in range(40)
        ]
        received = receiver.wait_for(40)
        listed = second.cli("callbacks", "list")
        assert len(receiver.received) == 40  # a second delivery, if any, would have come while the list was read
    assert sorted(r.query["orderid"] for r in received) == sorted(orders)
    assert sorted(str(c["order"]) for c in listed) == sorted(orders)
    assert [len(c["attempts"]) for c in listed] == [1] * 40
