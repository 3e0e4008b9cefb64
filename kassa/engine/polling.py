"""The loops queue consumers run: claim a batch, handle it, or sleep until woken or the next due time
(``consume``); or claim as room frees up, each item handled on its own (``consume_as_room_frees``).

Work this process writes for a consumer of its own can skip the claim: it is written already leased to
the consumer (``lease``) and handed to it in memory once committed (``take``). Leases keep that safe: if
the process dies first, the rows are claimed by any consumer once the lease runs out.

An idle consumer runs no claim: a claim that leaves room learns, in its transaction, when the next queued
work falls due (``next_due``: a retry, a scheduled job, a lease running out), and the loop sleeps until
then. It claims sooner when woken: by work of this process (``wake``), by work another process wrote
(``engine.signals``), or by the test clock moving; and at the latest every ``idle_claim_interval``, in
case a signal was missed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TypeVar

from sqlalchemy import Connection

from kassa import clock, metrics
from kassa.clock import now_ms
from kassa.storage.database import Database
from kassa.storage.jobs import Lease

T = TypeVar("T")
log = logging.getLogger("kassa.engine")

_IN_HAND_MAX = 32  # work handed over and not finished; beyond it, new work waits for a claim

Claim = Callable[[Connection, int], Sequence[T]]  # claims at most the room it is given


class Consumer:
    """Claims work with ``claim`` (a unit of work) and handles each claimed item concurrently; takes work
    handed over by this process while it runs."""

    def __init__(
        self,
        db: Database,
        intervals: tuple[float, float],
        kind: str,
        lease_seconds: float,
        capacity: int = _IN_HAND_MAX,
    ) -> None:
        self.db = db
        self.capacity = capacity
        # The poll interval: the least time between claims when work is due and was not taken (locked by
        # another claim, or over a delivery limit). The idle claim interval: the most, whatever is due.
        self.poll_interval, self.idle_claim_interval = intervals
        self.kind = kind
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

    def next_due(self, conn: Connection) -> int | None:
        """When a claim could next find work that the one just made in this transaction did not take (epoch
        ms, now or past when some was due and left), read by index; None when nothing is queued."""
        return None

    def hand_back(self, conn: Connection) -> int:
        """A unit of work releasing the leases this consumer still holds, once it has stopped: the work
        it was handed and did not start, or was cut off in, goes to another consumer at once."""
        return 0

    async def consume(
        self, stop: asyncio.Event, claim: Claim[T], handle: Callable[[T], Awaitable[None]], batch: int
    ) -> None:
        """Claims up to ``batch`` and handles them together, until a claim finds nothing; then sleeps."""
        self._running = True
        stop_waking = self._woken_by(stop)
        try:
            while not stop.is_set():
                self.wakeup.clear()  # before the claim: a wake while it runs asks for another
                claimed, due = await self._claimed(claim, batch)
                if claimed:
                    outcomes = await asyncio.gather(*(handle(item) for item in claimed), return_exceptions=True)
                    for failure in (o for o in outcomes if isinstance(o, Exception)):
                        # The item stays leased and runs again when its lease ends; this loop must go on.
                        log.error("handling claimed work failed", exc_info=failure)
                    continue  # the batch may have queued more (a retry): claim again to learn it
                self.found_nothing()
                await self._sleep(due)
        finally:
            stop_waking()
            self._running = False
            await asyncio.gather(*self._in_hand, return_exceptions=True)

    async def consume_as_room_frees(
        self, stop: asyncio.Event, claim: Claim[T], handle: Callable[[T], Awaitable[None]]
    ) -> None:
        """Claims with ``claim(conn, room)`` no more than there is room for in hand (``capacity``), and
        handles each claimed item on its own, as handed-over work: one slow item holds up nothing but its
        slot. Claims again when woken (``wake``: new work, or room freed where it was short) or once the
        next queued work is due."""
        self._running = True
        stop_waking = self._woken_by(stop)
        try:
            while not stop.is_set():
                room = self.capacity - len(self._in_hand)
                self.wakeup.clear()  # before the claim: a wake while it runs asks for another
                due = None
                if room > 0:
                    claimed, due = await self._claimed(claim, room)
                    for item in claimed:
                        self._take(partial(handle, item))
                    if not claimed:
                        self.found_nothing()
                await self._sleep(due)
        finally:
            stop_waking()
            self._running = False
            await asyncio.gather(*self._in_hand, return_exceptions=True)

    def _woken_by(self, stop: asyncio.Event) -> Callable[[], None]:
        """Wakes this consumer's sleep when the clock moves or ``stop`` is set; returns what ends that."""
        stop_on_move = clock.wake_on_move(self.wake)
        stopped = asyncio.get_running_loop().create_task(stop.wait())
        stopped.add_done_callback(lambda _: self.wake())

        def end() -> None:
            stop_on_move()
            stopped.cancel()

        return end

    async def _claimed(self, claim: Claim[T], room: int) -> tuple[Sequence[T], int | None]:
        """What a claim took, and when the next work is due if it left room."""
        metrics.claimed(self.kind)
        try:
            return await self.db.write(partial(self._claim_and_next_due, claim, room))
        except Exception:
            log.exception("claiming work failed")
            return [], now_ms()  # try again at the next poll

    def _claim_and_next_due(self, claim: Claim[T], room: int, conn: Connection) -> tuple[Sequence[T], int | None]:
        claimed = claim(conn, room)
        return claimed, now_ms() if len(claimed) >= room else self.next_due(conn)

    async def _sleep(self, due_ms: int | None) -> None:
        """Until woken or ``due_ms`` (on ``kassa.clock``, which wakes this when moved), but no less than a
        poll interval (work due and not taken waits on another consumer) and no more than the idle claim
        interval (the net under a signal that was missed)."""
        wait = self.idle_claim_interval
        if due_ms is not None:
            wait = min(wait, max(self.poll_interval, (due_ms - now_ms()) / 1000))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.wakeup.wait(), wait)
