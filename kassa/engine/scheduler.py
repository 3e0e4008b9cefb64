"""Time-driven work: settlement at the daily cut-off, expiry of authorizations never captured, forgetting
OAuth nonces whose timestamps the window no longer admits, the console's sign-in addresses whose
allowance is whole again, risk limits' counts out of their windows and the cards of expired Hosted Fields
tickets, and the charges of recurring payments (``core.recurring``), each tick, on the clock it is given."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from collections.abc import Callable
from functools import partial

from sqlalchemy import Connection

from kassa.clock import now_ms
from kassa.core import recurring
from kassa.core.settlement import expire_authorizations, settle
from kassa.domain.recurring import Retries
from kassa.storage import hosted_fields, oauth_nonces, schedule, sign_in_addresses
from kassa.storage import risk as risk_store
from kassa.storage.database import Database

log = logging.getLogger("kassa.scheduler")


def next_cutoff(now_ms: int, cutoff: str) -> int:
    """The first ``HH:MM`` UTC strictly after ``now_ms``, in epoch milliseconds."""
    hours, minutes = (int(part) for part in cutoff.split(":"))
    now = datetime.datetime.fromtimestamp(now_ms / 1000, datetime.UTC)
    candidate = now.replace(hour=hours, minute=minutes, second=0, microsecond=0)
    if candidate <= now:
        candidate += datetime.timedelta(days=1)
    return int(candidate.timestamp() * 1000)


class Scheduler:
    def __init__(
        self,
        db: Database,
        *,
        cutoff: str,
        authorization_ttl_seconds: float,
        interval: float,
        oauth_window_seconds: int,
        retries: Retries,
        clock: Callable[[], int] = now_ms,
        wake: Callable[[], None] = lambda: None,
    ) -> None:
        self.db = db
        self.cutoff = cutoff
        self.ttl_ms = int(authorization_ttl_seconds * 1000)
        self.interval = interval
        self.oauth_window_ms = oauth_window_seconds * 1000
        self.retries = retries
        self.clock = clock  # epoch ms: tests run the real ticks on a clock of their own
        self.wake = wake  # new jobs or callbacks were committed: the process's workers should look

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.tick()
            except Exception:
                log.exception("scheduled work failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.interval)

    async def tick(self) -> None:
        now = self.clock()
        following = next_cutoff(now, self.cutoff)
        if await self.db.write(lambda conn: schedule.claim_due(conn, "settlement", now, following)):
            count = await self.db.write(lambda conn: settle(conn, now))
            log.info("settlement ran", extra={"orders": count})
        await self._expire(now)
        # Every node prunes: one indexed delete of what is there, and a no-op where another node just did.
        await self.db.write(lambda conn: oauth_nonces.prune(conn, (now - self.oauth_window_ms) // 1000))
        await self.db.write(lambda conn: sign_in_addresses.prune(conn, now))
        await self.db.write(lambda conn: risk_store.prune(conn, now))
        await self.db.write(lambda conn: hosted_fields.prune(conn, now))
        await self._recurring(now)

    async def _recurring(self, now: int) -> None:
        """Outcomes first (a failed try's retry may be due already), then retries, then regular charges;
        each step a batch per database transaction until a batch comes back short. Charges go on until none
        is due: a payment some charges behind (the scheduler was stopped) gets one per batch."""
        retries = self.retries
        await self._batches(lambda conn: recurring.observe_outcomes(conn, now, retries), "outcomes")
        made = await self._batches(lambda conn: recurring.retry_due(conn, now), "retries")
        made += await self._batches(lambda conn: recurring.charge_due(conn, now), "charges", short=1)
        if made:
            self.wake()

    async def _batches(self, batch: Callable[[Connection], int], what: str, short: int = recurring.BATCH) -> int:
        """Runs ``batch`` until it returns less than ``short``; returns the sum."""
        total = 0
        while True:
            count = await self.db.write(batch)
            total += count
            if count < short:
                if total:
                    log.info("recurring payments", extra={"step": what, "count": total})
                return total

    async def _expire(self, now: int) -> None:
        """Open authorizations past their lifetime, a batch per database transaction (a long one would
        hold SQLite's single writer, or many order locks on PostgreSQL)."""
        after = 0
        while True:
            batch = partial(expire_authorizations, now_ms=now, ttl_ms=self.ttl_ms, after_tx_id=after)
            expired, after = await self.db.write(batch)
            if expired:
                log.info("authorizations expired", extra={"orders": expired})
            if not after:
                return
