"""How much work waits in the queues, for metrics: jobs by kind and pending callbacks, each with the age of
the oldest that is due. The counts read the queues' due indexes (``ix_jobs_run_at``, ``ix_callbacks_due``);
a callback is due from its destination's queue head (``callback_destinations``: not before the next probe
of a destination that is down, whose callbacks wait for it rather than for the dispatcher). And the
overload signals (``engine.overload``): how long the oldest due job no worker holds has waited, and the
oldest due first attempt of a callback the dispatcher could send now."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, func, literal, select

from kassa.storage import acquirer_messages
from kassa.storage import callbacks as callback_queue
from kassa.storage.callbacks import DeliveryLimits
from kassa.storage.jobs import JobKind
from kassa.storage.tables import callback_destinations, callbacks, jobs

# A scrape counts pending callbacks, and the jobs of each kind, up to this many and reads more as this
# many: counting a receiver's week-long outage (a million callbacks) took 0.4-0.9 s of a scrape, every
# 15 s, and the alerts that matter fire on the oldest due age, far below the cap.
COUNTED_UP_TO = 10_000


@dataclass(frozen=True, slots=True)
class Queue:
    waiting: int  # due now or later
    oldest_due_age_ms: int  # how long the oldest due one has been due; 0 when none is due


@dataclass(frozen=True, slots=True)
class QueueFigures:
    jobs: dict[str, Queue]
    callbacks: Queue
    acquirer_pending: dict[str, int]  # by connection: reversals and advices not answered yet


def read(conn: Connection, now_ms: int, *, counted_up_to: int = COUNTED_UP_TO) -> QueueFigures:
    by_kind = {kind: _jobs_of(conn, kind, counted_up_to) for kind in JobKind}
    some_pending = select(literal(1)).where(callbacks.c.state == "pending").limit(counted_up_to).subquery()
    pending = conn.execute(select(func.count()).select_from(some_pending)).scalar_one()
    heads = callback_destinations.c
    first, retry = conn.execute(select(func.min(heads.first_at_ms), func.min(heads.retry_at_ms))).one()
    callback_due = min((at for at in (first, retry) if at is not None), default=None)
    return QueueFigures(
        {kind.value: Queue(count, _age(first_due, now_ms)) for kind, (count, first_due) in by_kind.items() if count},
        Queue(pending, _age(callback_due, now_ms)),
        acquirer_messages.pending(conn),
    )


def _jobs_of(conn: Connection, kind: JobKind, counted_up_to: int) -> tuple[int, int | None]:
    """How many jobs of ``kind`` wait (up to ``counted_up_to``) and the due time of the first, by
    ``ix_jobs_kind_run_at``."""
    some = select(literal(1)).where(jobs.c.kind == kind.value).limit(counted_up_to).subquery()
    count = conn.execute(select(func.count()).select_from(some)).scalar_one()
    first = select(jobs.c.run_at_ms).where(jobs.c.kind == kind.value).order_by(jobs.c.run_at_ms).limit(1)
    return count, conn.execute(first).scalar() if count else None


def _age(first_due_ms: int | None, now_ms: int) -> int:
    return 0 if first_due_ms is None else max(0, now_ms - first_due_ms)


# Walks ``ix_jobs_run_at`` from the oldest due time and stops at the first job no worker holds: what it
# skips are jobs in hand (at most a few dozen per worker) and those of workers that died, until their
# leases run out. A backlog of any size costs the same.
_OLDEST_WAITING = (
    select(jobs.c.run_at_ms)
    .where(
        jobs.c.run_at_ms <= bindparam("now_ms"),
        jobs.c.lease_until_ms.is_(None) | (jobs.c.lease_until_ms < bindparam("now_ms")),
    )
    .order_by(jobs.c.run_at_ms)
    .limit(1)
)


def oldest_waiting_job_age_ms(conn: Connection, now_ms: int) -> int:
    """How long the oldest due job that no worker holds has waited; 0 when none waits."""
    return _age(conn.execute(_OLDEST_WAITING, {"now_ms": now_ms}).scalar(), now_ms)


def oldest_waiting_callback_age_ms(conn: Connection, now_ms: int, limits: DeliveryLimits) -> int:
    """How long the oldest due first attempt of a callback that could go out now has waited
    (``storage.callbacks.oldest_deliverable``); 0 when none waits."""
    return _age(callback_queue.oldest_deliverable(conn, now_ms, limits), now_ms)
