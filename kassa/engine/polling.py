"""The loop every queue consumer runs: claim a batch, handle it, or sleep until woken or the next poll."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from sqlalchemy import Connection

from kassa.storage.database import Database

T = TypeVar("T")
log = logging.getLogger("kassa.engine")


class Consumer:
    """Claims work with ``claim`` (a unit of work) and handles each claimed item concurrently."""

    def __init__(self, db: Database, poll_interval: float) -> None:
        self.db = db
        self.poll_interval = poll_interval
        self.wakeup = asyncio.Event()

    def wake(self) -> None:
        """New work was committed in this process: look now rather than at the next poll."""
        self.wakeup.set()

    def found_nothing(self) -> None:
        """Told on the event loop when a claim came back empty, before the loop waits."""

    async def consume(
        self,
        stop: asyncio.Event,
        claim: Callable[[Connection], Sequence[T]],
        handle: Callable[[T], Awaitable[None]],
    ) -> None:
        while not stop.is_set():
            try:
                claimed = await self.db.write(claim)
            except Exception:
                log.exception("claiming work failed")
                claimed = []
            if claimed:
                outcomes = await asyncio.gather(*(handle(item) for item in claimed), return_exceptions=True)
                for failure in (o for o in outcomes if isinstance(o, Exception)):
                    # The item stays leased and runs again when its lease ends; this loop must go on.
                    log.error("handling claimed work failed", exc_info=failure)
                continue
            self.found_nothing()
            self.wakeup.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wakeup.wait(), self.poll_interval)
