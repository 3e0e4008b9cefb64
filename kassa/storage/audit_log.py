"""The audit log of operators' actions: appended to, read and filtered, never changed (the database's
own triggers refuse UPDATE and DELETE)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import Connection, insert, select

from kassa.storage.prepared import Record
from kassa.storage.tables import audit_log

DONE = "done"
REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class Entry:
    actor: str
    action: str
    target: str = ""
    outcome: str = DONE
    before: Any = None
    after: Any = None
    address: str = ""


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def append(conn: Connection, entry: Entry, now_ms: int) -> int:
    values = dict(
        at_ms=now_ms,
        actor=entry.actor,
        action=entry.action,
        target=entry.target[:128],
        outcome=entry.outcome,
        before=_json(entry.before),
        after=_json(entry.after),
        address=entry.address[:64],
    )
    return int(conn.execute(insert(audit_log).values(**values)).inserted_primary_key[0])  # type: ignore[index]


def entries(
    conn: Connection,
    *,
    actor: str | None = None,
    action: str | None = None,
    before_id: int | None = None,
    limit: int = 50,
) -> list[Record]:
    """Newest first; ``before_id`` pages on (keyset)."""
    query = select(audit_log).order_by(audit_log.c.id.desc()).limit(limit)
    if actor:
        query = query.where(audit_log.c.actor == actor.lower())
    if action:
        query = query.where(audit_log.c.action == action)
    if before_id is not None:
        query = query.where(audit_log.c.id < before_id)
    return list(conn.execute(query).mappings())
