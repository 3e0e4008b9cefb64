"""The recurring scheduler on a clock of the test's own: the real ticks over a real database (both backends),
the charges processed by a real worker and the sandbox acquirer, day after day from January 2026."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlalchemy import func, select

from kassa.core import recurring
from kassa.domain.recurring import Retries, Status, date_of, midnight_ms
from kassa.engine.scheduler import Scheduler
from kassa.engine.worker import Worker, WorkerConfig
from kassa.processors.connectors import Connectors
from kassa.sandbox.acquirer import SandboxProcessor
from kassa.sandbox.issuer import SandboxIssuer
from kassa.storage import recurring as recurring_store
from kassa.storage.database import Database
from kassa.storage.tables import callbacks, jobs, orders, recurring_charges
from tests.support.cards import pan_ending
from tests.support.databases import TEST_VAULT, shop_endpoint
from tests.support.recurring import subscribe

DAY_MS = 86_400_000
RETRIES = Retries(count=3, delay_ms=DAY_MS)  # the settings' defaults


@dataclass
class Calendar:
    """The scheduler's clock, moved a day at a time (each tick at 00:00 UTC, when charges are due)."""

    db: Database
    now_ms: int
    made: list[tuple[str, str]] = field(default_factory=list)  # (client_orderid, date it was made)

    def run_until(self, last: datetime.date) -> list[tuple[str, str]]:
        """Ticks every day through ``last``, each charge processed before the next day; the charges made."""
        scheduler = Scheduler(
            self.db, cutoff="00:00", authorization_ttl_seconds=7 * 86400, interval=1, oauth_window_seconds=300,
            retries=RETRIES, clock=lambda: self.now_ms,
        )  # fmt: skip
        while date_of(self.now_ms) <= last:
            asyncio.run(_tick_and_process(self.db, scheduler))
            self.now_ms += DAY_MS
        self.made = self.db.read_sync(_charges_made)
        return self.made


async def _tick_and_process(db: Database, scheduler: Scheduler) -> None:
    await scheduler.tick()
    sandbox = Connectors(db, TEST_VAULT, SandboxProcessor())
    worker = Worker(db, TEST_VAULT, sandbox, SandboxIssuer(), WorkerConfig(0.01, 30, 60, 1800, 3, 1))
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    while await db.read(lambda conn: conn.execute(select(func.count()).select_from(jobs)).scalar_one()):
        await asyncio.sleep(0.01)
    stop.set()
    await running
    await scheduler.tick()  # the outcomes seen at once, as the next tick would


def _charges_made(conn: object) -> list[tuple[str, str]]:
    rows = conn.execute(  # type: ignore[attr-defined]
        select(orders.c.client_orderid, orders.c.created_at_ms).order_by(orders.c.id)
    )
    return [(row.client_orderid, date_of(row.created_at_ms).isoformat()) for row in rows]


def _date_ms(text: str) -> int:
    return midnight_ms(datetime.date.fromisoformat(text))


@pytest.fixture
def shop(db: Database) -> Iterator[tuple[int, int]]:
    yield db.write_sync(shop_endpoint)


def _subscribe(db: Database, shop: tuple[int, int], *, start: str = "2026-01-31", **fields: Any) -> int:
    return subscribe(db, *shop, start=datetime.date.fromisoformat(start), **fields)


def _payment(db: Database, payment_id: int) -> dict[str, object]:
    found = db.read_sync(lambda conn: recurring_store.payment(conn, payment_id))
    assert found is not None
    return dict(found)


def test_month_steps_from_january_31st_charge_on_each_months_last_day_then_stop(
    db: Database, shop: tuple[int, int]
) -> None:
    payment_id = _subscribe(db, shop, max_count=4)
    made = Calendar(db, _date_ms("2026-01-30")).run_until(datetime.date(2026, 7, 1))
    assert made == [
        ("sub-1", "2026-01-31"),
        ("sub-2", "2026-02-28"),
        ("sub-3", "2026-03-31"),
        ("sub-4", "2026-04-30"),
    ]
    payment = _payment(db, payment_id)
    assert (payment["status"], payment["charges_made"], payment["charges_approved"]) == (Status.FINISHED, 4, 4)
    assert payment["next_charge_at_ms"] is None


def test_a_declined_charge_is_tried_three_more_times_a_day_apart_and_the_schedule_goes_on(
    db: Database, shop: tuple[int, int]
) -> None:
    payment_id = _subscribe(db, shop, period="week", start="2026-01-05", pan=pan_ending("116"), max_count=2)
    made = Calendar(db, _date_ms("2026-01-05")).run_until(datetime.date(2026, 1, 31))
    assert made == [
        ("sub-1", "2026-01-05"),
        ("sub-1-r1", "2026-01-06"),
        ("sub-1-r2", "2026-01-07"),
        ("sub-1-r3", "2026-01-08"),
        ("sub-2", "2026-01-12"),
        ("sub-2-r1", "2026-01-13"),
        ("sub-2-r2", "2026-01-14"),
        ("sub-2-r3", "2026-01-15"),
    ]
    payment = _payment(db, payment_id)
    assert (payment["status"], payment["charges_approved"], payment["charges_declined"]) == (Status.FINISHED, 0, 2)


def test_retries_of_one_charge_overlap_the_next_regular_charge_of_a_daily_schedule(
    db: Database, shop: tuple[int, int]
) -> None:
    _subscribe(db, shop, period="day", start="2026-01-05", pan=pan_ending("116"), max_count=2)
    made = Calendar(db, _date_ms("2026-01-05")).run_until(datetime.date(2026, 1, 12))
    assert made == [
        ("sub-1", "2026-01-05"),
        ("sub-1-r1", "2026-01-06"),
        ("sub-2", "2026-01-06"),
        ("sub-1-r2", "2026-01-07"),
        ("sub-2-r1", "2026-01-07"),
        ("sub-1-r3", "2026-01-08"),
        ("sub-2-r2", "2026-01-08"),
        ("sub-2-r3", "2026-01-09"),
    ]


def test_finish_date_ends_the_schedule(db: Database, shop: tuple[int, int]) -> None:
    payment_id = _subscribe(db, shop, period="day", start="2026-01-30", finish_date="2026-02-02")
    made = Calendar(db, _date_ms("2026-01-29")).run_until(datetime.date(2026, 2, 10))
    assert [date for _, date in made] == ["2026-01-30", "2026-01-31", "2026-02-01", "2026-02-02"]
    assert _payment(db, payment_id)["status"] == Status.FINISHED


def test_a_card_expired_by_the_due_date_stops_the_payment_with_a_declined_charge_and_its_callback(
    db: Database, shop: tuple[int, int]
) -> None:
    payment_id = _subscribe(db, shop, expires=(3, 2026))
    made = Calendar(db, _date_ms("2026-01-31")).run_until(datetime.date(2026, 8, 1))
    assert made == [("sub-1", "2026-01-31"), ("sub-2", "2026-02-28"), ("sub-3", "2026-03-31"), ("sub-4", "2026-04-30")]
    payment = _payment(db, payment_id)
    assert (payment["status"], payment["charges_approved"], payment["charges_declined"]) == (Status.EXPIRED, 3, 1)
    last_callback = db.read_sync(
        lambda conn: conn.execute(select(callbacks.c.fields).order_by(callbacks.c.id.desc()).limit(1)).scalar_one()
    )
    assert '"client_orderid":"sub-4"' in last_callback and '"status":"declined"' in last_callback
    assert '"error_code":"101"' in last_callback and "Expired card" in last_callback


def test_a_cancelled_payment_is_charged_no_more(db: Database, shop: tuple[int, int]) -> None:
    payment_id = _subscribe(db, shop, period="day", start="2026-01-30")
    calendar = Calendar(db, _date_ms("2026-01-30"))
    calendar.run_until(datetime.date(2026, 1, 31))
    cancelled = db.write_sync(lambda conn: recurring.cancel(conn, payment_id, calendar.now_ms))
    again = db.write_sync(lambda conn: recurring.cancel(conn, payment_id, calendar.now_ms))
    assert cancelled is not None and again is not None
    assert (cancelled["status"], again["status"], again["next_charge_at_ms"]) == (Status.CANCELLED,) * 2 + (None,)
    assert [name for name, _ in calendar.run_until(datetime.date(2026, 2, 5))] == ["sub-1", "sub-2"]


def test_a_cancelled_payment_makes_no_retry_of_a_declined_charge(db: Database, shop: tuple[int, int]) -> None:
    payment_id = _subscribe(db, shop, period="week", start="2026-01-05", pan=pan_ending("116"))
    calendar = Calendar(db, _date_ms("2026-01-05"))
    calendar.run_until(datetime.date(2026, 1, 5))
    db.write_sync(lambda conn: recurring.cancel(conn, payment_id, calendar.now_ms))
    assert calendar.run_until(datetime.date(2026, 1, 20)) == [("sub-1", "2026-01-05")]
    tries = db.read_sync(lambda conn: conn.execute(select(recurring_charges.c.state)).scalars().all())
    assert tries == ["declined"]
    assert _payment(db, payment_id)["charges_declined"] == 1


def test_a_scheduler_stopped_for_months_makes_each_missed_charge_once(db: Database, shop: tuple[int, int]) -> None:
    _subscribe(db, shop, max_count=4)
    calendar = Calendar(db, _date_ms("2026-05-15"))  # its first tick: every charge is due
    assert [name for name, _ in calendar.run_until(datetime.date(2026, 5, 16))] == ["sub-1", "sub-2", "sub-3", "sub-4"]
