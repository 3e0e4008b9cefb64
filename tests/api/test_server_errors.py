"""A server failure answers 500 `type=error` with no internal detail, and is logged with its serial."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.support.databases import run_sql
from tests.support.gateway import Gateway, new_merchant


def test_database_failure_answers_500_without_detail_and_logs_the_serial(
    gateway_factory: Callable[..., Gateway],
) -> None:
    gateway = gateway_factory()
    merchant = new_merchant(gateway, "broken")
    # an operator's mistake: the orders table disappears under the gateway
    run_sql(gateway.database_url, "ALTER TABLE orders RENAME TO orders_gone")

    answer = merchant.sale("will-fail")

    assert answer.status_code == 500
    body = answer.json()
    assert body["type"] == "error"
    assert body["error-code"] == "500"
    assert body["error-message"] == "internal error"
    assert "orders" not in answer.text
    failures = [json.loads(line) for line in gateway.log_text().splitlines() if '"request failed"' in line]
    assert [entry["serial"] for entry in failures] == [body["serial-number"]]


@pytest.mark.backends("postgresql")
def test_sales_and_status_go_on_when_postgresql_drops_every_connection(
    gateway_factory: Callable[..., Gateway],
) -> None:
    gateway = gateway_factory()
    merchant = new_merchant(gateway, "dropped")
    first = merchant.wait_final(merchant.sale("before").json()["paynet-order-id"])
    # What a PostgreSQL restart or failover does to the connections the gateway's pools hold.
    run_sql(
        gateway.database_url,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )

    answer = merchant.sale("after")

    assert answer.status_code == 200, answer.text
    assert merchant.wait_final(answer.json()["paynet-order-id"])["status"] == "approved"
    assert merchant.status(orderid=first["paynet-order-id"]).json()["status"] == "approved"
