"""Time-driven work: expiry of authorizations, reconciliation of `unknown`, settlement at the cut-off."""

from __future__ import annotations

import datetime
from collections.abc import Callable

from kassa.engine.scheduler import next_cutoff
from tests.support.databases import run_sql
from tests.support.gateway import Gateway, Merchant, new_merchant
from tests.support.operations import LEDGER_OK, approved_order, ledger_check

DAY = 86_400
AUTHORIZATION_TTL = 7 * DAY  # KASSA_AUTHORIZATION_TTL_SECONDS's default
RECONCILE_DELAY = 60  # KASSA_RECONCILE_DELAY_SECONDS's default


def _balance(merchant: Merchant) -> tuple[str, str, str]:
    [usd] = merchant.gateway.cli("ledger", "balance", "--merchant", merchant.login)
    return usd["held"], usd["captured_unsettled"], usd["settled"]


def test_authorization_never_captured_expires_into_an_approved_cancel(clock_merchant: Merchant) -> None:
    order = approved_order(clock_merchant, "exp-1", kind="preauth", amount="30.00")
    clock_merchant.gateway.advance(AUTHORIZATION_TTL - 60)
    assert clock_merchant.status(orderid=order).json()["transaction-type"] == "preauth"
    assert _balance(clock_merchant)[0] == "30.00"

    clock_merchant.gateway.advance(60)
    status = clock_merchant.status(orderid=order).json()
    assert (status["transaction-type"], status["status"], status["order-stage"]) == (
        "cancel",
        "approved",
        "cancel_approved",
    )
    assert _balance(clock_merchant)[0] == "0.00"
    assert ledger_check(clock_merchant) == LEDGER_OK


def test_unknown_sale_becomes_approved_by_reconciliation_once_the_delay_has_passed(clock_merchant: Merchant) -> None:
    order = clock_merchant.sale("unk-1", cvv2="217").json()["paynet-order-id"]
    assert clock_merchant.wait_final(order)["status"] == "unknown"
    clock_merchant.gateway.advance(RECONCILE_DELAY - 5)
    # Workers woke with the move: a due reconciliation would have run within a poll.
    assert clock_merchant.wait_stage(order, leaving="unknown", field="status", timeout=0.5)["status"] == "unknown"

    clock_merchant.gateway.advance(5)
    reconciled = clock_merchant.wait_stage(order, leaving="unknown", field="status")
    assert reconciled["status"] == "approved"
    assert reconciled["approval-code"]
    assert ledger_check(clock_merchant) == LEDGER_OK


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


def test_settlement_runs_at_the_cutoff_and_not_again_until_the_next(clock_merchant: Merchant) -> None:
    gateway = clock_merchant.gateway
    approved_order(clock_merchant, "cut-1", amount="12.00")
    now = gateway.advance(0)
    gateway.advance((next_cutoff(now, "00:00") - now) / 1000 - 60)
    assert _balance(clock_merchant) == ("0.00", "12.00", "0.00")

    gateway.advance(61)
    assert _balance(clock_merchant) == ("0.00", "0.00", "12.00")

    approved_order(clock_merchant, "cut-2", amount="5.00")
    gateway.advance(3600)
    assert _balance(clock_merchant) == ("0.00", "5.00", "12.00")
    gateway.advance(DAY)
    assert _balance(clock_merchant) == ("0.00", "0.00", "17.00")
    assert ledger_check(clock_merchant) == LEDGER_OK
