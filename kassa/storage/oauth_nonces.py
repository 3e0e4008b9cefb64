"""The OAuth nonces seen (RFC 5849 §3.3): each (merchant, oauth_timestamp, oauth_nonce) is accepted once,
in every process sharing the database."""

from __future__ import annotations

from collections.abc import Sequence

import orjson
from sqlalchemy import Connection, delete, text

from kassa.storage.prepared import Prepared
from kassa.storage.tables import oauth_nonces

Seen = tuple[int, int, str]  # merchant id, timestamp, nonce
Spend = tuple[int, int, str, int | None]  # and the id of the key that verified it (None: HMAC-SHA1)


def record(conn: Connection, merchant_id: int, timestamp_s: int, nonce: str, key_id: int | None = None) -> bool:
    """Whether the nonce was new and is now recorded; False for a replay, or when ``key_id`` has been
    revoked (``merchant_keys.is_revoked`` tells which). Two processes recording the same nonce at once:
    PostgreSQL makes the second wait for the first's commit, then finds it."""
    return bool(record_many(conn, [(merchant_id, timestamp_s, nonce, key_id)]))


# One statement, so that it is atomic without a transaction of its own (``Database.write_point``): each
# nonce is inserted unless it is there already, or unless the key that verified its request (none for
# HMAC-SHA1) has been revoked since. A conflict is an answer, not an error: no savepoint, and SQLite's
# group commit never reruns a batch for it. The rows come as one JSON array of [merchant id, timestamp,
# nonce, key id]: one statement text whatever their number, so the driver parses it once and PostgreSQL
# prepares it once (a placeholder per value made a text per count, which psycopg parsed again on every
# call once it passed 4 KiB: most of a 50-nonce write's cost).
_MANY = (
    " INSERT INTO oauth_nonces (merchant_id, timestamp_s, nonce)"
    " SELECT merchant_id, timestamp_s, nonce FROM v WHERE NOT EXISTS (SELECT 1 FROM merchant_keys k"
    " WHERE k.id = v.key_id AND k.revoked_at_ms IS NOT NULL)"
    " ON CONFLICT DO NOTHING RETURNING merchant_id, timestamp_s, nonce"
)
_RECORD_MANY = Prepared(
    text(
        "WITH v (merchant_id, timestamp_s, nonce, key_id) AS (SELECT json_extract(value, '$[0]'),"
        " json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]')"
        " FROM json_each(:rows))" + _MANY
    ),
    postgresql=text(
        "WITH v (merchant_id, timestamp_s, nonce, key_id) AS (SELECT CAST(e ->> 0 AS BIGINT),"
        " CAST(e ->> 1 AS BIGINT), e ->> 2, CAST(e ->> 3 AS BIGINT)"
        " FROM jsonb_array_elements(CAST(:rows AS JSONB)) AS e)" + _MANY
    ),
)


def record_many(conn: Connection, spends: Sequence[Spend]) -> set[Seen]:
    """``record`` of many (merchant id, timestamp, nonce, key id) in one statement: those recorded now.
    Several spends of one nonce in it record it once, and it is in the set."""
    rows = _RECORD_MANY.execute(conn, {"rows": orjson.dumps(spends).decode()}).fetchall()
    return {(merchant_id, timestamp_s, nonce) for merchant_id, timestamp_s, nonce in rows}


def prune(conn: Connection, before_s: int) -> int:
    """Forgets nonces whose timestamp is before ``before_s``: their requests are refused for their time."""
    return int(conn.execute(delete(oauth_nonces).where(oauth_nonces.c.timestamp_s < before_s)).rowcount)
