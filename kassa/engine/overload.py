"""Load shedding: offered more than it can finish, a gateway refuses new work at once instead of accepting
it and letting it starve. A backlog may cost memory and disk, never the latency of what was accepted.

The signals are measured, not predicted. First, how long the oldest due job that no worker holds has waited
(``storage.queue_figures.oldest_waiting_job_age_ms``). A job handed over in memory starts at once (at most
32 in hand per worker); beyond that, jobs wait in the table, so the table is where the waiting line is, for
every process and machine sharing the database. Second, how long the oldest due first attempt of a callback
that the dispatcher could send now has waited (``oldest_waiting_callback_age_ms``): with the workers keeping
up, a gateway short of CPU falls behind on its callbacks instead, and an accepted sale's callback came late
by seconds while no job waited. A destination that is down, or at its limit in flight, holds its callbacks
back by design, and so does a merchant at its limit in flight: their backlogs are not counted, so one merchant's
dead or slow receivers never shed every merchant.
Each server process reads both every quarter second, in one read, on its own task (a request reads one
attribute), and the API refuses the operations that open an order while ``shedding`` (``api.pipeline``; the
operation table's ``opens_order``).

Hysteresis: shedding starts when two samples in a row find either signal above its threshold
(``KASSA_OVERLOAD_JOB_AGE``, ``KASSA_OVERLOAD_CALLBACK_AGE``), since one sample may catch due work a moment
before it is claimed; it stops at the first sample that finds both below half their thresholds, which, as
the waiting lines drain in order, is once the work accepted before the refusals began has started.

The log tells episodes, not samples: a line when shedding starts, and one when the gateway has accepted
again for ``_EPISODE_QUIET_MS`` (with how long it shed and how many requests it refused), so that a waiting
line that fills and drains every few seconds under a long overload is one episode."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from dataclasses import dataclass

from sqlalchemy import Connection

from kassa import metrics
from kassa.clock import now_ms
from kassa.storage import queue_figures
from kassa.storage.callbacks import DeliveryLimits
from kassa.storage.database import Database

log = logging.getLogger("kassa.overload")

_SAMPLE_SECONDS = 0.25
_EPISODE_QUIET_MS = 10_000


@dataclass(slots=True)
class _Episode:
    started_ms: int
    last_shed_ms: int
    oldest_ms: int  # the longest wait seen, of a job or a callback
    refused: int = 0


class LoadShedder:
    """Whether this process refuses new work now (``shedding``), from samples of the signals."""

    def __init__(self, db: Database, job_seconds: float, callback_seconds: float, limits: DeliveryLimits) -> None:
        self._db = db
        self._job_limit_ms = round(job_seconds * 1000)  # 0: not read
        self._callback_limit_ms = round(callback_seconds * 1000)
        self._limits = limits  # the callbacks' limits in flight: what they hold back is not lag
        # About as long as a waiting line of one threshold takes to drain.
        self.retry_after = str(max(1, math.ceil(max(job_seconds, callback_seconds))))
        self.shedding = False
        self._above = False  # whether the last sample was above a threshold
        self._episode: _Episode | None = None
        self._unreadable = False

    async def run(self, stop: asyncio.Event) -> None:
        if not (self._job_limit_ms or self._callback_limit_ms):  # both 0: never sheds, reads nothing
            return
        while not stop.is_set():
            await self.sample()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), _SAMPLE_SECONDS)

    async def sample(self) -> None:
        now = now_ms()
        try:
            ages = await self._db.read_point(lambda conn: self._ages(conn, now))
        except Exception:  # the state stays as it was; requests meet the database's trouble themselves
            if not self._unreadable:
                log.exception("reading the overload signal failed")
            self._unreadable = True
            return
        self._unreadable = False
        self.observe(*ages, now)

    def _ages(self, conn: Connection, now: int) -> tuple[int, int]:
        job = queue_figures.oldest_waiting_job_age_ms(conn, now) if self._job_limit_ms else 0
        if not self._callback_limit_ms:
            return job, 0
        return job, queue_figures.oldest_waiting_callback_age_ms(conn, now, self._limits)

    def observe(self, job_age_ms: int, callback_age_ms: int, now: int) -> None:
        """Takes a sample: how long the oldest waiting job and callback have waited."""
        waits = ((job_age_ms, self._job_limit_ms), (callback_age_ms, self._callback_limit_ms))
        above = any(limit and age > limit for age, limit in waits)
        drained = all(not limit or age < limit // 2 for age, limit in waits)
        self.shedding = not drained if self.shedding else above and self._above
        self._above = above
        metrics.OVERLOAD_JOB_AGE.set(job_age_ms / 1000)
        metrics.OVERLOAD_CALLBACK_AGE.set(callback_age_ms / 1000)
        metrics.OVERLOAD_SHEDDING.set(int(self.shedding))
        self._log_episode(max(job_age_ms, callback_age_ms), job_age_ms, callback_age_ms, now)

    def refused(self) -> None:
        """Told of each request refused for overload."""
        metrics.refused("overload")
        if self._episode is not None:
            self._episode.refused += 1

    def _log_episode(self, age_ms: int, job_age_ms: int, callback_age_ms: int, now: int) -> None:
        episode = self._episode
        if self.shedding and episode is None:
            self._episode = _Episode(now, now, age_ms)
            log.warning(
                "load shedding started: operations that open an order are refused (503, code 11)",
                extra={
                    "oldest_job_wait_seconds": job_age_ms / 1000,
                    "oldest_callback_wait_seconds": callback_age_ms / 1000,
                    "job_threshold_seconds": self._job_limit_ms / 1000,
                    "callback_threshold_seconds": self._callback_limit_ms / 1000,
                },
            )
        elif self.shedding and episode is not None:
            episode.last_shed_ms = now
            episode.oldest_ms = max(episode.oldest_ms, age_ms)
        elif episode is not None and now - episode.last_shed_ms >= _EPISODE_QUIET_MS:
            self._episode = None
            log.warning(
                "load shedding stopped: new work accepted again",
                extra={
                    "lasted_seconds": (episode.last_shed_ms - episode.started_ms) / 1000,
                    "refused": episode.refused,
                    "longest_wait_seconds": episode.oldest_ms / 1000,
                },
            )
