"""Time-driven work: expiry of authorizations, reconciliation of `unknown`, settlement at the cut-off."""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import Callable

from kassa.engine.scheduler import Scheduler, next_cutoff
from kassa.storage.database import open_database
from kassa.storage.tables import schedule as schedule_table
from tests.support.databases import run_sql
from tests.support.gateway import Gateway, new_merchant
from tests.support.operations import LEDGER_OK, approved_order, ledger_check


def _wait_for(check: Callable[[], bool], timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


def test_authorization_never_captured_expires_into_an_approved_cancel(gateway_factory: Callable[..., Gateway]) -> None:
    gateway = gateway_factory(KASSA_AUTHORIZATION_TTL_SECONDS="1", KASSA_SCHEDULER_INTERVAL="0.2")
    merchant = new_merchant(gateway, "expiry")
    order = approved_order(merchant, "exp-1", kind="preauth", amount="30.00")
    assert _wait_for(lambda: merchant.status(orderid=order).json()["transaction-type"] == "cancel")
    status = merchant.status(orderid=order).json()
    assert (status["status"], status["order-stage"]) == ("approved", "cancel_approved")
    [usd] = gateway.cli("ledger", "balance", "--merchant", merchant.login)
    assert usd["held"] == "0.00"
    assert ledger_check(merchant) == LEDGER_OK


def test_unknown_sale_becomes_approved_by_reconciliation(gateway_factory: Callable[..., Gateway]) -> None:
    gateway = gateway_factory(KASSA_RECONCILE_DELAY_SECONDS="1")
    merchant = new_merchant(gateway, "reconcile")
    order = merchant.sale("unk-1", cvv2="217").json()["paynet-order-id"]
    assert merchant.wait_final(order)["status"] == "unknown"
    assert _wait_for(lambda: merchant.status(orderid=order).json()["status"] == "approved")
    assert merchant.status(orderid=order).json()["approval-code"]
    assert ledger_check(merchant) == LEDGER_OK


def test_ledger_check_fails_on_a_hand_corrupted_entry(gateway_factory: Callable[..., Gateway]) -> None:
    gateway = gateway_factory()
    merchant = new_merchant(gateway, "corrupt")
    approved_order(merchant, "cor-1", amount="10.00")
    assert ledger_check(merchant) == LEDGER_OK
    run_sql(gateway.database_url, "UPDATE ledger_entries SET amount = amount + 1 WHERE account = 'captured'")
    report = ledger_check(merchant)
    assert report["exit"] == 1
    assert report["ok"] is False
    assert any("does not sum to zero" in p for p in report["problems"])  # type: ignore[attr-defined]


def test_next_cutoff_is_the_next_occurrence_in_utc() -> None:
    at = int(datetime.datetime(2026, 11, 22, 10, 30, tzinfo=datetime.UTC).timestamp() * 1000)
    assert next_cutoff(at, "00:00") == int(datetime.datetime(2026, 11, 23, tzinfo=datetime.UTC).timestamp() * 1000)
    assert next_cutoff(at, "12:00") == int(datetime.datetime(2026, 11, 22, 12, tzinfo=datetime.UTC).timestamp() * 1000)


def test_settlement_runs_once_when_the_cutoff_has_passed(gateway_factory: Callable[..., Gateway]) -> None:
    gateway = gateway_factory(KASSA_SCHEDULER_INTERVAL="3600")  # its scheduler ticks once, at start
    merchant = new_merchant(gateway, "cutoff")
    approved_order(merchant, "cut-1", amount="12.00")
    db = open_database(gateway.database_url)
    now = time.time_ns() // 1_000_000
    try:
        db.write_sync(lambda conn: conn.execute(schedule_table.update().values(next_run_at_ms=now - 1)))
        scheduler = Scheduler(db, cutoff="00:00", authorization_ttl_seconds=3600, interval=1)
        asyncio.run(scheduler.tick())
        asyncio.run(scheduler.tick())  # not due again until the next cut-off
        next_run = db.read_sync(lambda conn: conn.execute(schedule_table.select()).one().next_run_at_ms)
    finally:
        db.close()
    [usd] = gateway.cli("ledger", "balance", "--merchant", merchant.login)
    assert (usd["captured_unsettled"], usd["settled"]) == ("0.00", "12.00")
    assert next_run == next_cutoff(now, "00:00")
    assert ledger_check(merchant) == LEDGER_OK
