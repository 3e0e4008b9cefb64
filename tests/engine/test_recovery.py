"""Nothing accepted is lost when the gateway dies, and nothing is processed twice."""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.support.databases import run_sql
from tests.support.gateway import Gateway, Merchant, free_port, new_merchant
from tests.support.operations import LEDGER_OK, ledger_check
from tests.support.receiver import Receiver, running

JOB_LEASE = 30  # KASSA_JOB_LEASE_SECONDS's default
CALLBACK_PER_HOST = 16  # KASSA_CALLBACK_PER_HOST's default
CALLBACK_LEASE = 10 + 5  # KASSA_CALLBACK_TIMEOUT's default, and the margin of the lease beyond it


def captured_once(merchant: Merchant, amount: str) -> bool:
    """The merchant's captured money is one sale of ``amount``: an outcome recorded twice would post twice."""
    [usd] = merchant.gateway.cli("ledger", "balance", "--merchant", merchant.login)
    return bool(usd["captured_unsettled"] == amount and ledger_check(merchant) == LEDGER_OK)


def test_sale_accepted_before_a_crash_is_processed_once_after_restart(
    gateway_factory: Callable[..., Gateway],
) -> None:
    api_only = gateway_factory("--workers", "0")
    merchant = new_merchant(api_only, "crash")
    accepted = merchant.sale("before-crash", amount="10.42").json()
    assert accepted["status"] == "processing"
    api_only.kill()

    merchant.gateway = gateway_factory()
    final = merchant.wait_final(accepted["paynet-order-id"])
    assert final["status"] == "approved"
    assert captured_once(merchant, "10.42")


def test_job_of_a_worker_killed_mid_authorization_runs_again_after_its_lease(
    gateway_factory: Callable[..., Gateway],
) -> None:
    slow = gateway_factory(KASSA_SANDBOX_LATENCY_MS="5000")
    merchant = new_merchant(slow, "lease")
    # Answered once the job is written, leased to a worker of this process that starts on it at once.
    accepted = merchant.sale("mid-flight", amount="10.42").json()
    slow.kill()

    restarted = gateway_factory(KASSA_TEST_CLOCK="1")
    merchant.gateway = restarted
    order = accepted["paynet-order-id"]
    assert merchant.wait_stage(order, leaving="processing", field="status", timeout=0.5)["status"] == "processing"
    restarted.advance(JOB_LEASE)
    assert merchant.wait_final(order)["status"] == "approved"
    assert captured_once(merchant, "10.42")


def test_job_left_for_a_transaction_already_final_is_dropped_without_touching_it(merchant: Merchant) -> None:
    order = merchant.sale("left-1").json()["paynet-order-id"]
    before = merchant.wait_final(order)
    url = merchant.gateway.database_url
    run_sql(  # as if a crash came between recording the outcome and deleting the job
        url,
        "INSERT INTO jobs (kind, transaction_id, run_at_ms, attempts, created_at_ms) "
        f"SELECT 'process', id, 0, 0, 0 FROM transactions WHERE order_id = {int(order)}",
    )
    left = (
        f"SELECT COUNT(*) FROM jobs WHERE transaction_id IN (SELECT id FROM transactions WHERE order_id = {int(order)})"
    )
    deadline = time.monotonic() + 10
    while run_sql(url, left) != [(0,)]:
        assert time.monotonic() < deadline, "the job left behind was not dropped"
        time.sleep(0.05)
    assert merchant.status(orderid=order).json() | {"serial-number": ""} == before | {"serial-number": ""}


def test_callbacks_in_flight_when_the_gateway_is_killed_are_all_delivered_after_restart(
    gateway_factory: Callable[..., Gateway],
) -> None:
    gateway = gateway_factory()
    merchant = new_merchant(gateway, "crash-callbacks")
    # The receiver holds every request it gets until after the kill: the first 16 (KASSA_CALLBACK_PER_HOST;
    # a few more on PostgreSQL if writes raced) are in flight when the gateway dies, the rest wait unleased
    # for room. The dead process's leases hold that room until they end; then every callback goes out.
    receiver = Receiver(free_port(), script=["timeout"] * 30, hang_seconds=60)
    with running(receiver):
        orders = [merchant.sale(f"cb-crash-{n}", server_callback_url=receiver.url).json() for n in range(30)]
        _wait(lambda: len(receiver.script) <= 30 - CALLBACK_PER_HOST, "callbacks in flight")
        gateway.kill()
        receiver.script.clear()  # from now on every request is answered at once

        restarted = gateway_factory(KASSA_TEST_CLOCK="1")
        merchant.gateway = restarted
        restarted.advance(CALLBACK_LEASE)
        received = receiver.wait_for(30)
    assert sorted(r.query["orderid"] for r in received) == sorted(o["paynet-order-id"] for o in orders)
    # The last answers reach the receiver a moment before the gateway records them delivered.
    by_state = "SELECT state, COUNT(*) FROM callbacks GROUP BY state"
    _wait(lambda: "pending" not in dict(run_sql(restarted.database_url, by_state)), "the deliveries recorded")
    assert run_sql(restarted.database_url, by_state) == [("delivered", 30)]  # none left pending, none failed
    assert ledger_check(merchant) == LEDGER_OK


def _wait(condition: Callable[[], bool], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited in vain for {what}"
        time.sleep(0.05)
