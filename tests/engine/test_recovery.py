"""Nothing accepted is lost when the gateway dies, and nothing is processed twice."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable

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
