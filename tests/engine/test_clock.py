"""The test clock (KASSA_TEST_CLOCK=1): moved by tests, absent in normal gateways, never with live money."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest

from tests.support.databases import run_sql
from tests.support.gateway import TLS, Gateway, Merchant, free_port, new_merchant
from tests.support.receiver import Receiver, running

CALLBACK_LEASE = 1 + 5  # the clock gateway's KASSA_CALLBACK_TIMEOUT, and the lease's margin beyond it


def test_the_clock_cannot_be_moved_without_the_setting(shared_gateway: Gateway) -> None:
    answer = httpx.post(f"{shared_gateway.base}/_test/clock", data={"advance": "60"}, verify=TLS)
    assert answer.status_code == 404


def test_a_move_answers_the_new_time_and_refuses_going_back_or_garbage(clock_gateway: Gateway) -> None:
    before = time.time_ns() // 1_000_000
    now = clock_gateway.advance(3600)
    assert now >= before + 3_600_000
    assert clock_gateway.advance(0) >= now
    for wrong in ("-1", "soon", "nan", "inf"):
        answer = httpx.post(f"{clock_gateway.base}/_test/clock", data={"advance": wrong}, verify=TLS)
        assert answer.status_code == 400, wrong


@pytest.mark.backends("sqlite")
def test_a_gateway_with_a_movable_clock_serves_no_live_endpoint_and_will_not_start_with_one(
    gateway_factory: Callable[..., Gateway],
) -> None:
    gateway = gateway_factory(KASSA_TEST_CLOCK="1")
    sandbox = new_merchant(gateway, "sandbox")
    live = new_merchant(gateway, "live", live=True)  # as `kassa endpoint create --mode live` while it runs

    answer = live.sale("live-1")
    assert (answer.json()["error-code"], answer.json()["error-message"]) == (
        "3",
        f"unknown or disabled endpoint {live.endpoint_id}",
    )
    assert httpx.post(f"{gateway.base}/_test/clock", data={"advance": "60"}, verify=TLS).status_code == 409
    assert sandbox.wait_final(sandbox.sale("sandbox-1").json()["paynet-order-id"])["status"] == "approved"
    gateway.stop()

    with pytest.raises(RuntimeError, match="the database has a live endpoint"):
        gateway_factory(KASSA_TEST_CLOCK="1")


def test_a_move_past_the_lease_of_a_callback_in_flight_leaves_it_delivered_once(clock_merchant: Merchant) -> None:
    gateway = clock_merchant.gateway
    # Held for less than the clock gateway's callback timeout (1 s): the attempt succeeds once answered.
    with running(Receiver(free_port(), script=["slow"], hang_seconds=0.5)) as receiver:
        order = clock_merchant.sale("held-1", server_callback_url=receiver.url).json()["paynet-order-id"]
        _wait(lambda: receiver.holding == 1, "the callback held in flight")
        gateway.advance(CALLBACK_LEASE + 60)
        _wait(lambda: receiver.holding == 0, "the receiver's answer")
        state = f"SELECT state, attempts FROM callbacks WHERE order_id = {int(order)}"
        _wait(lambda: run_sql(gateway.database_url, state) == [("delivered", 1)], "the delivery recorded")
    assert len(receiver.received) == 1
    logged = (
        "SELECT COUNT(*) FROM callback_attempts"
        f" WHERE callback_id IN (SELECT id FROM callbacks WHERE order_id = {int(order)})"
    )
    assert run_sql(gateway.database_url, logged) == [(1,)]


def _wait(condition: Callable[[], bool], what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited in vain for {what}"
        time.sleep(0.02)
