"""The loops queue consumers run: claim a batch, handle it, or sleep until woken or the next poll
(``consume``); or claim as room frees up, each item handled on its own (``consume_as_room_frees``).

Work this process writes for a consumer of its own can skip the claim: it is written already leased to
the consumer (``lease``) and handed to it in memory once committed (``take``). Leases keep that safe: if
the process dies first, the rows are claimed by any consumer once the lease runs out."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TypeVar

from sqlalchemy import Connection

from kassa.clock import now_ms
from kassa.storage.database import Database
from kassa.storage.jobs import Lease

T = TypeVar("T")
log = logging.getLogger("kassa.engine")

_IN_HAND_MAX = 32  # work handed over and not finished; beyond it, new work waits for a claim


class Consumer:
    """Claims work with ``claim`` (a unit of work) and handles each claimed item concurrently; takes work
    handed over by this process while it runs."""

    def __init__(
        self, db: Database, poll_interval: float, kind: str, lease_seconds: float, capacity: int = _IN_HAND_MAX
    ) -> None:
        self.db = db
        self.capacity = capacity
        self.poll_interval = poll_interval
        self.owner = f"{kind}-{uuid.uuid4().hex[:12]}"
        self.lease_ms = int(lease_seconds * 1000)
        self.wakeup = asyncio.Event()
        self._running = False
        self._in_hand: set[asyncio.Task[None]] = set()

    @property
    def in_hand(self) -> int:
        return len(self._in_hand)

    def lease(self) -> Lease | None:
        """A lease for work about to be written for this consumer, or None when it should wait for a claim
        (the consumer is not running, or has enough in hand)."""
        if not self._running or len(self._in_hand) >= self.capacity:
            return None
        return Lease(self.owner, now_ms() + self.lease_ms)

    def _take(self, work: Callable[[], Awaitable[None]]) -> None:
        """Runs work written leased to this consumer, now committed."""
        if not self._running:  # stopping: the lease runs out and the work is claimed again
            return
        task = asyncio.get_running_loop().create_task(self._handled(work))
        self._in_hand.add(task)
        task.add_done_callback(self._in_hand.discard)

    async def _handled(self, work: Callable[[], Awaitable[None]]) -> None:
        try:
            await work()
        except Exception:  # it stays leased and runs again when its lease ends
            log.exception("handling handed-over work failed")

    def wake(self) -> None:
        """New work was committed in this process: look now rather than at the next poll."""
        self.wakeup.set()

    def found_nothing(self) -> None:
        """Told on the event loop when a claim came back empty, before the loop waits."""

    def hand_back(self, conn: Connection) -> int:
        """A unit of work releasing the leases this consumer still holds, once it has stopped: the work
        it was handed and did not start, or was cut off in, goes to another consumer at once."""
        return 0

    async def consume(
        self,
        stop: asyncio.Event,
        claim: Callable[[Connection], Sequence[T]],
        handle: Callable[[T], Awaitable[None]],
    ) -> None:
        self._running = True
        try:
            await self._consume(stop, claim, handle)
        finally:
            self._running = False
            await asyncio.gather(*self._in_hand, return_exceptions=True)

    async def consume_as_room_frees(
        self,
        stop: asyncio.Event,
        claim: Callable[[Connection, int], Sequence[T]],
        handle: Callable[[T], Awaitable[None]],
    ) -> None:
        """Claims with ``claim(conn, room)`` no more than there is room for in hand (``capacity``), and
        handles each claimed item on its own, as handed-over work: one slow item holds up nothing but its
        slot. Claims again when woken (``wake``: new work, or room freed where it was short) or at the
        next poll."""
        self._running = True
        try:
            while not stop.is_set():
                room = self.capacity - len(self._in_hand)
                self.wakeup.clear()  # before the claim: a wake while it runs asks for another
                if room > 0:
                    claimed = await self._claimed(partial(_room_claim, claim, room))
                    for item in claimed:
                        self._take(partial(handle, item))
                    if not claimed:
                        self.found_nothing()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wakeup.wait(), self.poll_interval)
        finally:
            self._running = False
            await asyncio.gather(*self._in_hand, return_exceptions=True)

    async def _claimed(self, claim: Callable[[Connection], Sequence[T]]) -> Sequence[T]:
        try:
            return await self.db.write(claim)
        except Exception:
            log.exception("claiming work failed")
            return []

    async def _consume(
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


def _room_claim(claim: Callable[[Connection, int], Sequence[T]], room: int, conn: Connection) -> Sequence[T]:
    return claim(conn, room)
