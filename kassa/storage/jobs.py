"""The job queue: rows claimed with a lease, so a job held by a dead worker runs again after the lease.

PostgreSQL claims with ``FOR UPDATE SKIP LOCKED`` so concurrent workers never take the same row; SQLite
has one writer at a time, which gives the same guarantee. A job written by this process for a worker of
this process can be written already leased to it (``Lease``) and handed over in memory after the commit:
no claim, and one durable commit less between a sale and its outcome.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, select, update

from kassa.storage.prepared import Prepared, inserting
from kassa.storage.tables import jobs


class JobKind(StrEnum):
    PROCESS = "process"  # run the transaction at the processor (or start its 3-D Secure authentication)
    RECONCILE = "reconcile"  # ask the processor again for an ``unknown`` outcome
    METHOD_TIMEOUT = "method_timeout"  # the 3-D Secure Method step did not finish in time
    SESSION_TIMEOUT = "session_timeout"  # the customer did not finish the hosted form or 3-D Secure in time


@dataclass(frozen=True, slots=True)
class Lease:
    """Whose a row is from the moment it is written, and until when."""

    owner: str
    until_ms: int


@dataclass(frozen=True, slots=True)
class Job:
    id: int
    kind: JobKind
    transaction_id: int
    attempts: int


_DUE = (
    select(jobs.c.id)
    .where(
        jobs.c.run_at_ms <= bindparam("now_ms"),
        jobs.c.lease_until_ms.is_(None) | (jobs.c.lease_until_ms < bindparam("now_ms")),
    )
    .order_by(jobs.c.run_at_ms, jobs.c.id)
    .limit(bindparam("batch"))
    .with_for_update(skip_locked=True)
)
_CLAIM = Prepared(
    update(jobs)
    .where(jobs.c.id.in_(_DUE.scalar_subquery()))
    .values(lease_owner=bindparam("owner"), lease_until_ms=bindparam("until_ms"), attempts=jobs.c.attempts + 1)
    .returning(jobs.c.id, jobs.c.kind, jobs.c.transaction_id, jobs.c.attempts)
)


def claim(conn: Connection, owner: str, now_ms: int, lease_ms: int, limit: int) -> list[Job]:
    params = {"now_ms": now_ms, "batch": limit, "owner": owner, "until_ms": now_ms + lease_ms}
    claimed = _CLAIM.all(conn, params)
    return [
        Job(r["id"], JobKind(r["kind"]), r["transaction_id"], r["attempts"])
        for r in sorted(claimed, key=lambda r: r["id"])
    ]


# When a claim could next take a job: the earliest free job's run time (along ``ix_jobs_run_at``, past the
# leased ones in hand) and the earliest lease to run out (``ix_jobs_leased``).
_NEXT_DUE = Prepared(
    select(
        select(func.min(jobs.c.run_at_ms)).where(jobs.c.lease_until_ms.is_(None)).scalar_subquery().label("free"),
        select(func.min(jobs.c.lease_until_ms))
        .where(jobs.c.lease_until_ms.is_not(None))
        .scalar_subquery()
        .label("lease_ends"),
    )
)


def earliest_claimable(*due: int | None, lease_ends: int | None) -> int | None:
    """The earliest of the ``due`` times and the moment after the earliest lease runs out (a lease may be
    claimed once past); None when there is none of either."""
    after_lease = None if lease_ends is None else lease_ends + 1
    return min((int(time) for time in (*due, after_lease) if time is not None), default=None)


def next_due(conn: Connection) -> int | None:
    """The earliest time a claim may find a job (a lease is claimable once past), or None when none is queued."""
    found = _NEXT_DUE.one(conn, {})
    return earliest_claimable(found["free"], lease_ends=found["lease_ends"])


# A job the caller (``owner``) still holds the lease on: what fences the writes that follow.
_HELD_BY_OWNER = (jobs.c.id == bindparam("job_id"), jobs.c.lease_owner == bindparam("owner"))
_HELD = Prepared(select(jobs.c.id).where(*_HELD_BY_OWNER).with_for_update())
_FINISH = Prepared(delete(jobs).where(jobs.c.id == bindparam("job_id")))


def still_held(conn: Connection, job: Job, owner: str) -> bool:
    """Locks the job row and tells whether this worker's lease still holds (a fence against a worker
    that stalled past its lease while another took the job over)."""
    return _HELD.first(conn, {"job_id": job.id, "owner": owner}) is not None


def finish(conn: Connection, job: Job) -> None:
    _FINISH.execute(conn, {"job_id": job.id})


def finish_held(conn: Connection, job: Job, owner: str) -> bool:
    """Deletes the job while this worker's lease holds (``still_held`` and ``finish`` in one statement);
    False, and nothing deleted, when another worker took it over. The caller's writes that follow in the
    same transaction are fenced by it."""
    return bool(_FINISH_HELD.execute(conn, {"job_id": job.id, "owner": owner}).rowcount == 1)


# The fence as a statement, also written into other statements (``orders.fenced_outcome_context``).
FINISH_HELD = delete(jobs).where(*_HELD_BY_OWNER)
_FINISH_HELD = Prepared(FINISH_HELD)


def retry_later(conn: Connection, job: Job, owner: str, run_at_ms: int) -> None:
    conn.execute(
        update(jobs)
        .where(jobs.c.id == job.id, jobs.c.lease_owner == owner)
        .values(lease_owner=None, lease_until_ms=None, run_at_ms=run_at_ms)
    )


_INSERT_JOB = inserting(
    jobs.insert().values(
        kind=bindparam("kind"),
        transaction_id=bindparam("tx_id"),
        run_at_ms=bindparam("run_at_ms"),
        attempts=bindparam("attempts"),
        lease_owner=bindparam("lease_owner"),
        lease_until_ms=bindparam("lease_until_ms"),
        created_at_ms=bindparam("now_ms"),
    ),
    jobs.c.id,
)


def add(
    conn: Connection, kind: JobKind, transaction_id: int, run_at_ms: int, now_ms: int, lease: Lease | None = None
) -> Job | None:
    """Queues a job; with a ``lease`` it is written as claimed (one attempt), and returned to hand over."""
    values = {"kind": kind.value, "tx_id": transaction_id, "run_at_ms": run_at_ms, "now_ms": now_ms, **leased(lease)}
    job_id = _INSERT_JOB.inserted_id(conn, values)
    assert job_id is not None, "a job has no unique columns to conflict on"
    return None if lease is None else Job(job_id, kind, transaction_id, 1)


def leased(lease: Lease | None) -> dict[str, Any]:
    """The lease columns of a new job: claimed once by the lease's owner, or free."""
    return {**lease_columns(lease), "attempts": 0 if lease is None else 1}


def lease_columns(lease: Lease | None) -> dict[str, Any]:
    """``lease_owner`` and ``lease_until_ms`` of a row (a job, a callback) written leased, or free."""
    if lease is None:
        return {"lease_owner": None, "lease_until_ms": None}
    return {"lease_owner": lease.owner, "lease_until_ms": lease.until_ms}


def exists(conn: Connection, transaction_id: int, kind: JobKind) -> bool:
    found = conn.execute(
        select(jobs.c.id).where(jobs.c.transaction_id == transaction_id, jobs.c.kind == kind.value).limit(1)
    )
    return found.first() is not None


def release(conn: Connection, owner: str) -> int:
    """Hands back every job ``owner`` holds, for any worker to claim at once: a stopping worker's, rather
    than leaving them until their leases run out."""
    released = conn.execute(
        update(jobs).where(jobs.c.lease_owner == owner).values(lease_owner=None, lease_until_ms=None)
    )
    return int(released.rowcount)


def prolong(conn: Connection, owners: Sequence[str], now_ms: int, by_ms: int) -> int:
    """Moves the leases ``owners`` hold that have not run out at ``now_ms`` ``by_ms`` later; how many. For
    the test clock's move: work its own process has in hand keeps the real time its lease had left."""
    prolonged = conn.execute(
        update(jobs)
        .where(jobs.c.lease_owner.in_(owners), jobs.c.lease_until_ms >= now_ms)
        .values(lease_until_ms=jobs.c.lease_until_ms + by_ms)
    )
    return int(prolonged.rowcount)
