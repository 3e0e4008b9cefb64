"""Nothing accepted is lost when the gateway dies, and nothing is processed twice."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable

from tests.support.databases import run_sql
from tests.support.gateway import Gateway, new_merchant


def processed_orders(*logs: str) -> Counter[int]:
    """How many times each order's transaction was recorded as processed, over every log given."""
    seen: Counter[int] = Counter()
    for log in logs:
        for line in log.splitlines():
            entry = json.loads(line) if line.startswith("{") else {}
            if entry.get("msg") == "transaction processed":
                seen[entry["order"]] += 1
    return seen


def test_sale_accepted_before_a_crash_is_processed_once_after_restart(
    gateway_factory: Callable[..., Gateway],
) -> None:
    api_only = gateway_factory("--workers", "0")
    merchant = new_merchant(api_only, "crash")
    accepted = merchant.sale("before-crash").json()
    assert accepted["status"] == "processing"
    api_only.kill()

    restarted = gateway_factory()
    merchant.gateway = restarted
    final = merchant.wait_final(accepted["paynet-order-id"])
    assert final["status"] == "approved"
    assert processed_orders(api_only.log_text(), restarted.log_text()) == Counter({int(accepted["paynet-order-id"]): 1})


def test_job_of_a_worker_killed_mid_authorization_runs_again_after_its_lease(
    gateway_factory: Callable[..., Gateway],
) -> None:
    slow = gateway_factory(KASSA_SANDBOX_LATENCY_MS="5000", KASSA_JOB_LEASE_SECONDS="1")
    merchant = new_merchant(slow, "lease")
    accepted = merchant.sale("mid-flight").json()
    time.sleep(0.5)  # the worker has claimed the job and is waiting on the acquirer
    slow.kill()

    restarted = gateway_factory(KASSA_JOB_LEASE_SECONDS="1")
    merchant.gateway = restarted
    final = merchant.wait_final(accepted["paynet-order-id"])
    assert final["status"] == "approved"
    assert processed_orders(slow.log_text(), restarted.log_text()) == Counter({int(accepted["paynet-order-id"]): 1})


def test_job_left_for_a_transaction_already_final_is_dropped_without_touching_it(
    gateway_factory: Callable[..., Gateway],
) -> None:
    gateway = gateway_factory()
    merchant = new_merchant(gateway, "leftover")
    order = merchant.sale("left-1").json()["paynet-order-id"]
    before = merchant.wait_final(order)
    run_sql(  # as if a crash came between recording the outcome and deleting the job
        gateway.database_url,
        "INSERT INTO jobs (kind, transaction_id, run_at_ms, attempts, created_at_ms) "
        f"SELECT 'process', id, 0, 0, 0 FROM transactions WHERE order_id = {int(order)}",
    )
    deadline = time.monotonic() + 10
    remaining = 1
    while remaining and time.monotonic() < deadline:
        [(remaining,)] = run_sql(gateway.database_url, "SELECT COUNT(*) FROM jobs")
        time.sleep(0.05)
    assert remaining == 0
    assert merchant.status(orderid=order).json() | {"serial-number": ""} == before | {"serial-number": ""}
