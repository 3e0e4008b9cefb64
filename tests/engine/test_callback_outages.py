"""A receiver that cannot be reached costs one attempt per backoff interval, whatever is queued for it, and
gets its queue, in order, once it answers again (docs/callbacks.md, "Delivery policy")."""

from __future__ import annotations

import time

from tests.support.databases import run_sql
from tests.support.gateway import Gateway, Merchant, free_port
from tests.support.operations import final, preauth, refund
from tests.support.receiver import Receiver, running

# The defaults' delays after 1, 2 and 3 failures; the clock gateway gives a callback 4 attempts, so a
# destination's probes wait the third delay at most.
DELAYS = (15, 21.525, 30.888)


def _attempts(gateway: Gateway, orders: list[str]) -> list[tuple[int, int]]:
    """(attempts recorded, callbacks leased) over the orders' callbacks."""
    ids = ", ".join(str(int(order)) for order in orders)
    query = f"SELECT COALESCE(SUM(attempts), 0), COUNT(lease_owner) FROM callbacks WHERE order_id IN ({ids})"
    return [(int(a), int(b)) for a, b in run_sql(gateway.database_url, query)]


def _settled_at(gateway: Gateway, orders: list[str], attempts: int, timeout: float = 15) -> None:
    """Waits until the orders' callbacks have ``attempts`` attempts recorded and none in flight."""
    deadline = time.monotonic() + timeout
    while _attempts(gateway, orders) != [(attempts, 0)]:
        assert time.monotonic() < deadline, f"not {attempts} attempts: {_attempts(gateway, orders)}"
        time.sleep(0.02)


def test_a_receiver_that_is_down_gets_one_attempt_per_interval_and_its_queue_in_order_once_it_answers(
    clock_merchant: Merchant,
) -> None:
    gateway = clock_merchant.gateway
    receiver = Receiver(free_port())  # not listening yet: every attempt is refused
    first = clock_merchant.sale("down-0", server_callback_url=receiver.url).json()["paynet-order-id"]
    _settled_at(gateway, [first], 1)
    sales = [
        clock_merchant.sale(f"down-{n}", server_callback_url=receiver.url).json()["paynet-order-id"]
        for n in range(1, 13)
    ]
    held = preauth(clock_merchant, "down-held", "50.00", notify_url=receiver.url).json()["paynet-order-id"]
    assert clock_merchant.wait_final(held)["status"] == "approved"
    assert final(clock_merchant, refund(clock_merchant, "down-held", held))["transaction-type"] == "cancel"
    orders = [first, *sales, held]
    for order in sales:
        assert clock_merchant.wait_final(order)["status"] == "approved"
    _settled_at(gateway, orders, 1)  # 14 more callbacks queued, none tried: the destination is down
    for probes, delay in enumerate(DELAYS[:2], start=2):
        gateway.advance(delay)
        _settled_at(gateway, orders, probes)
    with running(receiver):
        gateway.advance(DELAYS[2])
        received = receiver.wait_for(15)
    ids = ", ".join(orders)
    failed = run_sql(
        gateway.database_url,
        "SELECT COUNT(*) FROM callback_attempts a JOIN callbacks c ON c.id = a.callback_id"
        f" WHERE c.order_id IN ({ids}) AND a.http_status IS NULL",
    )
    assert failed == [(3,)]  # the first attempt and two probes, for fifteen callbacks queued
    assert sorted(r.query["client_orderid"] for r in received if r.query["type"] == "sale") == sorted(
        f"down-{n}" for n in range(13)
    )
    assert [r.query["type"] for r in received if r.query["orderid"] == held] == ["preauth", "cancel"]
