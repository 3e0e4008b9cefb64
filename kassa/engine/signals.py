"""Tells this process's idle consumers that another process may have queued work for them, so that they
claim at once rather than at their next due time or idle claim (``engine.polling``).

PostgreSQL: a connection of this process listens on ``kassa_work``, which a trigger notifies in every
transaction that queues a job or callback any claim may take (migration 0021); it reconnects when lost,
and wakes the consumers each time it has (re)connected, for what was written while it was not listening.

SQLite has no notifications. A process that writes appends to the database's ``-wal`` file, so its size
or modification time changes: ``os.stat`` of it each poll interval is a system call, not a statement, and
needs no connection nor the database's threads (``PRAGMA data_version`` would be a statement on a pooled
connection, through the reader threads, each interval). It sees every process's writes, this one's too:
a claim follows each poll interval in which something was written, and none while nothing is."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence

from sqlalchemy import make_url

from kassa.engine.polling import Consumer

log = logging.getLogger("kassa.engine")

CHANNEL = "kassa_work"
_RECONNECT_SECONDS = 1.0


async def watch(database_url: str, poll_interval: float, consumers: Sequence[Consumer]) -> None:
    """Wakes ``consumers`` whenever another process may have queued work, until cancelled."""
    if not consumers:
        return
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        if url.database and url.database != ":memory:":
            await _watch_wal(f"{url.database}-wal", poll_interval, consumers)
        return
    await _listen(url.set(drivername="postgresql").render_as_string(hide_password=False), consumers)


def _wake(consumers: Sequence[Consumer]) -> None:
    for consumer in consumers:
        consumer.wake()


def _wal_state(path: str) -> tuple[int, int, int] | None:
    try:
        found = os.stat(path)
    except FileNotFoundError:  # no connection open, or just checkpointed away
        return None
    return found.st_ino, found.st_size, found.st_mtime_ns


async def _watch_wal(path: str, poll_interval: float, consumers: Sequence[Consumer]) -> None:
    seen = _wal_state(path)
    while True:
        await asyncio.sleep(poll_interval)
        state = _wal_state(path)
        if state != seen:
            seen = state
            _wake(consumers)


async def _listen(conninfo: str, consumers: Sequence[Consumer]) -> None:
    import psycopg  # here: a SQLite deployment's processes never load the driver (a tenth of a second each)

    while True:
        try:
            async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
                await conn.execute(f"LISTEN {CHANNEL}")
                _wake(consumers)
                async for _ in conn.notifies():
                    _wake(consumers)
        except psycopg.Error as lost:
            log.warning("listening for queued work failed; reconnecting", extra={"error": type(lost).__name__})
        await asyncio.sleep(_RECONNECT_SECONDS)
