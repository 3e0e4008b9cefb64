"""Recurring charges are made exactly once by real gateway processes: two schedulers on one PostgreSQL at
once, and a scheduler killed (SIGKILL) between opening a charge and moving its payment on."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from kassa import crashpoints
from tests.support.databases import run_sql
from tests.support.gateway import Gateway, new_merchant
from tests.support.operations import LEDGER_OK, ledger_check
from tests.support.recurring import subscribe_due_now

FAST_TICKS = {"KASSA_SCHEDULER_INTERVAL": "0.05"}


def _approved_charges(url: str) -> int:
    [(count,)] = run_sql(
        url,
        "SELECT COUNT(*) FROM transactions t JOIN orders o ON o.id = t.order_id "
        "WHERE o.recurring_payment_id IS NOT NULL AND t.stage = 'approved'",
    )
    return int(count)


def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited in vain for {what}"
        time.sleep(0.05)


@pytest.mark.backends("postgresql")
def test_two_gateways_charging_one_postgresql_at_once_make_each_charge_once(
    gateway_factory: Callable[..., Gateway],
) -> None:
    first, second = gateway_factory(**FAST_TICKS), gateway_factory(**FAST_TICKS)
    merchant = new_merchant(first, "race")
    subscribe_due_now(merchant, 300)  # both schedulers find them due within a tick of each other
    url = first.database_url
    _wait_for(lambda: _approved_charges(url) >= 300, "300 approved charges")
    assert run_sql(url, "SELECT COUNT(*), COUNT(DISTINCT recurring_payment_id) FROM recurring_charges") == [(300, 300)]
    assert run_sql(url, "SELECT COUNT(*) FROM orders WHERE recurring_payment_id IS NOT NULL") == [(300,)]
    assert run_sql(url, "SELECT DISTINCT charges_made FROM recurring_payments") == [(1,)]
    made_by = [gateway.log_text().count('"step":"charges"') for gateway in (first, second)]
    assert all(made_by), made_by  # both made charges: they raced for the same due payments
    assert ledger_check(merchant) == LEDGER_OK


def test_a_scheduler_killed_between_opening_a_charge_and_moving_the_payment_on_makes_it_once_after_restart(
    gateway_factory: Callable[..., Gateway],
) -> None:
    doomed = gateway_factory(
        KASSA_TEST_CLOCK="1", KASSA_TEST_CRASH_POINT=crashpoints.RECURRING_CHARGE_OPENED, **FAST_TICKS
    )
    merchant = new_merchant(doomed, "crash")
    subscribe_due_now(merchant, 1)
    assert doomed.process is not None
    assert doomed.process.wait(30) == -9  # killed itself inside the charge's transaction
    url = doomed.database_url
    nothing = run_sql(url, "SELECT COUNT(*) FROM recurring_charges UNION ALL SELECT COUNT(*) FROM orders")
    assert nothing == [(0,), (0,)]  # the transaction died with it: no charge half made

    merchant.gateway = gateway_factory(**FAST_TICKS)
    _wait_for(lambda: _approved_charges(url) == 1, "the charge, approved")
    time.sleep(0.3)  # a few more ticks: none may charge again
    assert run_sql(url, "SELECT number, try_number, state FROM recurring_charges") == [(1, 0, "approved")]
    assert run_sql(url, "SELECT client_orderid FROM orders") == [("sub0-1",)]
    assert run_sql(url, "SELECT charges_made, charges_approved FROM recurring_payments") == [(1, 1)]
    assert ledger_check(merchant) == LEDGER_OK
