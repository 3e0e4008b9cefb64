"""What each client address may still try at the console's sign-in: a GCRA (``kassa/ratelimit.py``) kept in
the database, so that every process of a deployment counts against the same allowance. Each statement
decides in the database (an upsert whose condition is the limit), so attempts sent at once cannot all
read room that only one of them has."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, case, delete, literal, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from kassa.storage.tables import sign_in_addresses as addresses


@dataclass(frozen=True, slots=True)
class Refused:
    wait_ms: int  # until the address may try again
    first: bool  # the first refusal of a run of them: the one the audit log keeps


def take(conn: Connection, address: str, now_ms: int, interval_ms: int, burst: int) -> Refused | None:
    """Counts one attempt from ``address``, which may make ``burst`` at once and then one every
    ``interval_ms``; None when it had room. A refused attempt is not counted, and keeps the row locked
    (PostgreSQL) for the rest of the transaction."""
    tolerance = interval_ms * burst
    start = case((addresses.c.tat_ms > now_ms, addresses.c.tat_ms), else_=literal(now_ms))
    insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    counted = conn.execute(
        insert(addresses)
        .values(address=address, tat_ms=now_ms + interval_ms)
        .on_conflict_do_update(
            index_elements=[addresses.c.address],
            set_={"tat_ms": start + interval_ms},
            where=start + interval_ms - now_ms <= tolerance,
        )
        .returning(addresses.c.tat_ms)
    ).first()
    if counted is not None:
        return None
    row = conn.execute(select(addresses).where(addresses.c.address == address)).mappings().one()
    first = row["noted_until_ms"] is None or row["noted_until_ms"] <= now_ms
    if first:
        noted = update(addresses).where(addresses.c.address == address).values(noted_until_ms=row["tat_ms"])
        conn.execute(noted)
    return Refused(max(1, row["tat_ms"] + interval_ms - tolerance - now_ms), first)


def hold(conn: Connection, address: str) -> None:
    """Locks the address's row (PostgreSQL) before an operator's: the order every transaction that touches
    both keeps, so that two sign-ins cannot deadlock."""
    conn.execute(select(addresses.c.address).where(addresses.c.address == address).with_for_update())


def give_back(conn: Connection, address: str, interval_ms: int) -> None:
    """Returns an attempt ``take`` counted (a sign-in that succeeded)."""
    changed = addresses.c.tat_ms - interval_ms
    conn.execute(update(addresses).where(addresses.c.address == address).values(tat_ms=changed))


def prune(conn: Connection, now_ms: int) -> int:
    """Forgets addresses whose allowance is whole again (the same as never seen). Rows that sign-ins hold
    are skipped, not waited for: a prune never waits on a sign-in."""
    whole = select(addresses.c.address).where(addresses.c.tat_ms < now_ms).with_for_update(skip_locked=True)
    return int(conn.execute(delete(addresses).where(addresses.c.address.in_(whole))).rowcount)
