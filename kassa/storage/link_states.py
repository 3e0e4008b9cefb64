"""Each gateway process's view of the ISO 8583 links it opened (``acquirer_link_states``), and what operators
read of them: per connection, the views written within ``STALE_MS`` with the connection's reversals and
advices still pending (``domain.link_status``). A row per process and connection, written by that process
alone (``engine.link_reports``), so no two writers meet on a row."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from kassa.domain.link_status import STALE_MS, LinkReport, LinkStatus, ProcessView
from kassa.storage import acquirer_messages
from kassa.storage.tables import acquirer_link_states as states

_REPORTED = ("sockets", "signed_on", "in_flight", "last_error", "last_error_at_ms")


def report(conn: Connection, process: str, reports: Sequence[tuple[int, LinkReport]], now_ms: int) -> None:
    """Writes ``process``'s view of each connection of ``reports`` (connection id, view), as of ``now_ms``."""
    insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    for connection_id, seen in reports:
        values = {name: getattr(seen, name) for name in _REPORTED} | {"updated_at_ms": now_ms}
        conn.execute(
            insert(states)
            .values(connection_id=connection_id, process=process, **values)
            .on_conflict_do_update(index_elements=[states.c.connection_id, states.c.process], set_=values)
        )


def forget(conn: Connection, process: str) -> int:
    """Deletes ``process``'s views: it stops, and has signed its links off."""
    return int(conn.execute(delete(states).where(states.c.process == process)).rowcount)


def prune(conn: Connection, now_ms: int) -> int:
    """Deletes the views no reader counts any more: those of processes that died without stopping."""
    return int(conn.execute(delete(states).where(states.c.updated_at_ms < now_ms - STALE_MS)).rowcount)


def statuses(conn: Connection, connection_ids: Sequence[int], now_ms: int) -> dict[int, LinkStatus]:
    """Each connection's link as operators see it at ``now_ms``: the views written within ``STALE_MS``
    (none: no live process has opened it) and its reversals and advices pending."""
    if not connection_ids:  # a deployment with the sandbox alone
        return {}
    views: dict[int, list[ProcessView]] = {connection_id: [] for connection_id in connection_ids}
    query = (
        select(states)
        .where(states.c.connection_id.in_(connection_ids), states.c.updated_at_ms >= now_ms - STALE_MS)
        .order_by(states.c.connection_id, states.c.process)
    )
    for row in conn.execute(query).mappings():
        seen = LinkReport(**{name: row[name] for name in _REPORTED})
        views[row["connection_id"]].append(ProcessView(row["process"], seen, row["updated_at_ms"]))
    pending = acquirer_messages.pending_of(conn, connection_ids)
    return {
        connection_id: LinkStatus(tuple(found), *pending.get(connection_id, (0, 0)))
        for connection_id, found in views.items()
    }


def status(conn: Connection, connection_id: int, now_ms: int) -> LinkStatus:
    return statuses(conn, [connection_id], now_ms)[connection_id]
