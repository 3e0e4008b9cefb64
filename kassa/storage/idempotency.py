"""Stored answers of requests that carried an ``Idempotency-Key`` (per merchant, kept 24 hours), and of
follow-ups within their endpoint's replay window (``kassa.api.idempotency.replay_key``)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, Connection, and_, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from kassa.clock import now_ms
from kassa.storage.tables import idempotency_keys

TTL_MS = 24 * 3600 * 1000


@dataclass(frozen=True, slots=True)
class StoredAnswer:
    status_code: int
    content_type: str
    body: bytes


@dataclass(frozen=True, slots=True)
class Claim:
    """What a request with a key should do: run (``fresh``), replay ``answer``, wait (``running``), or
    refuse (``conflict``: the key came with another body)."""

    fresh: bool = False
    running: bool = False
    conflict: bool = False
    answer: StoredAnswer | None = None


def claim(conn: Connection, *, merchant_id: int, key: str, request_hash: str, ttl_ms: int = TTL_MS) -> Claim:
    """``ttl_ms``: how long a stored answer is replayed (24 hours; an endpoint's replay window)."""
    now = now_ms()
    row = conn.execute(select(idempotency_keys).where(_this(merchant_id, key))).mappings().first()
    if row is not None and row["created_at_ms"] < now - ttl_ms:
        conn.execute(delete(idempotency_keys).where(_this(merchant_id, key)))
        row = None
    if row is None:
        try:
            with conn.begin_nested():
                conn.execute(
                    insert(idempotency_keys).values(
                        merchant_id=merchant_id, key=key, request_hash=request_hash, created_at_ms=now
                    )
                )
        except IntegrityError:  # a concurrent request with this key claimed it first
            return Claim(running=True)
        return Claim(fresh=True)
    if row["request_hash"] != request_hash:
        return Claim(conflict=True)
    if row["status_code"] is None:
        return Claim(running=True)
    return Claim(answer=StoredAnswer(row["status_code"], row["content_type"], row["body"]))


def complete(conn: Connection, merchant_id: int, key: str, answer: StoredAnswer) -> None:
    conn.execute(
        update(idempotency_keys)
        .where(_this(merchant_id, key))
        .values(status_code=answer.status_code, content_type=answer.content_type, body=answer.body)
    )


def release(conn: Connection, merchant_id: int, key: str) -> None:
    """Forgets a key whose request failed on the server side, so a retry runs again."""
    conn.execute(delete(idempotency_keys).where(_this(merchant_id, key)))


def _this(merchant_id: int, key: str) -> ColumnElement[bool]:
    return and_(idempotency_keys.c.merchant_id == merchant_id, idempotency_keys.c.key == key)
