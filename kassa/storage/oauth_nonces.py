"""The OAuth nonces seen (RFC 5849 §3.3): each (merchant, oauth_timestamp, oauth_nonce) is accepted once,
in every process sharing the database."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BindParameter, Connection, bindparam, delete
from sqlalchemy.dialects import postgresql, sqlite

from kassa.storage.prepared import Prepared
from kassa.storage.tables import oauth_nonces

_VALUES: dict[str, BindParameter[Any]] = {name: bindparam(name) for name in ("merchant_id", "timestamp_s", "nonce")}
# A conflict is an answer here, not an error: no savepoint, and SQLite's group commit never reruns a batch.
_RECORD = Prepared(
    sqlite.insert(oauth_nonces).values(_VALUES).on_conflict_do_nothing(),
    postgresql=postgresql.insert(oauth_nonces).values(_VALUES).on_conflict_do_nothing(),
)


def record(conn: Connection, merchant_id: int, timestamp_s: int, nonce: str) -> bool:
    """Whether this nonce is new (and now recorded); False for a replay. Two processes recording the same
    nonce at once: PostgreSQL makes the second wait for the first's commit, then finds it."""
    cursor = _RECORD.execute(conn, {"merchant_id": merchant_id, "timestamp_s": timestamp_s, "nonce": nonce})
    return bool(cursor.rowcount == 1)


def prune(conn: Connection, before_s: int) -> int:
    """Forgets nonces whose timestamp is before ``before_s``: their requests are refused for their time."""
    return int(conn.execute(delete(oauth_nonces).where(oauth_nonces.c.timestamp_s < before_s)).rowcount)
