"""Each process's view of the acquirer links it opened, written to the database (``storage.link_states``)
for operators: ``kassa acquirer show`` and the console run in other processes, on other machines, and
read every process's view from there (``domain.link_status``).

Nothing of it is on a payment's path: a loop of its own reads each link's state once a second (a few sums
in memory) and writes a link's view when it changed, at most every ``REPORT_GAP_MS``, or when the last
write is ``REFRESH_MS`` old; otherwise nothing. When the process stops, its views go with it (``forget``);
a process that dies leaves views that readers stop counting after ``STALE_MS`` and that the next process
to start deletes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping

from kassa.clock import now_ms
from kassa.domain.link_status import MAX_ERROR_LENGTH, REFRESH_MS, REPORT_GAP_MS, LinkReport
from kassa.processors.iso8583.link import LinkState
from kassa.storage import link_states
from kassa.storage.database import Database

log = logging.getLogger("kassa.acquirer")

_TICK_SECONDS = 1.0


class LinkReporter:
    def __init__(
        self,
        db: Database,
        links: Callable[[], Mapping[int, LinkState]],
        process: str,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self._db = db
        self._links = links  # the state of each link this process opened, by connection id
        self.process = process
        self._clock = clock  # epoch ms: tests move it past the gaps instead of waiting
        self._written: dict[int, tuple[LinkReport, int]] = {}  # by connection id: the view written, and when
        self._failing = False

    async def run(self, stop: asyncio.Event) -> None:
        now = self._clock()
        try:
            await self._db.write(lambda conn: link_states.prune(conn, now))
        except Exception:  # left to the next process that starts
            log.exception("deleting stale views of acquirer links failed")
        while not stop.is_set():
            await self.report()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), _TICK_SECONDS)

    async def report(self) -> None:
        """Writes the views that are due (``_due``), in one transaction."""
        now = self._clock()
        due = [
            (connection_id, seen)
            for connection_id, state in self._links().items()
            if _due(self._written.get(connection_id), seen := _view(state), now)
        ]
        if not due:
            return
        try:
            await self._db.write(lambda conn: link_states.report(conn, self.process, due, now))
        except Exception:  # written at the next tick; readers meanwhile see the last view until it is stale
            if not self._failing:
                log.exception("reporting the acquirer links' state failed")
            self._failing = True
            return
        self._failing = False
        self._written.update((connection_id, (seen, now)) for connection_id, seen in due)

    async def forget(self) -> None:
        """Deletes this process's views once its links are signed off: readers no longer count it."""
        try:
            await self._db.write(lambda conn: link_states.forget(conn, self.process))
        except Exception:  # they go stale instead
            log.exception("deleting the acquirer links' state failed")
        self._written.clear()


def _view(state: LinkState) -> LinkReport:
    error = None if state.last_error is None else state.last_error[:MAX_ERROR_LENGTH]
    return LinkReport(state.sockets, state.signed_on, state.in_flight, error, state.last_error_at_ms)


def _due(written: tuple[LinkReport, int] | None, seen: LinkReport, now: int) -> bool:
    """Whether to write ``seen``: never written, changed since and not written in the last
    ``REPORT_GAP_MS``, or its last write ``REFRESH_MS`` old."""
    if written is None:
        return True
    last, at = written
    return now - at >= REFRESH_MS or (seen != last and now - at >= REPORT_GAP_MS)
