"""The callback outbox and its delivery log.

Rows are written in the same transaction as the status change they report. Delivery claims due rows
with a lease (``FOR UPDATE SKIP LOCKED`` on PostgreSQL), and only the oldest undelivered callback of
an order for a given URL: each receiver sees one order's events in transaction order.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson
from sqlalchemy import Connection, and_, exists, insert, select, update

from kassa.domain.callbacks import callback_fields
from kassa.storage.prepared import Record
from kassa.storage.tables import callback_attempts, callbacks, cards, endpoints, orders

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"


def enqueue(conn: Connection, order: Record, tx: Record, now_ms: int, *, starts_order: bool) -> int:
    """Outbox rows for a transaction that reached a final status; returns how many were written."""
    targets = [("notify", order["notify_url"])]
    if starts_order:
        targets.insert(0, ("server_callback", order["server_callback_url"]))
    targets = [(kind, url) for kind, url in targets if url]
    if not targets:
        return 0
    card = None
    if order["card_id"] is not None:
        card = conn.execute(select(cards).where(cards.c.id == order["card_id"])).mappings().one()
    descriptor = conn.execute(select(endpoints.c.descriptor).where(endpoints.c.id == order["endpoint_id"])).scalar()
    fields = orjson.dumps(
        callback_fields(order=dict(order), tx=dict(tx), card=dict(card) if card else None, descriptor=descriptor or "")
    ).decode()
    conn.execute(
        insert(callbacks),
        [
            {
                "order_id": order["id"],
                "transaction_id": tx["id"],
                "kind": kind,
                "url": url,
                "fields": fields,
                "state": PENDING,
                "attempts": 0,
                "next_attempt_at_ms": now_ms,
                "created_at_ms": now_ms,
            }
            for kind, url in targets
        ],
    )
    return len(targets)


@dataclass(frozen=True, slots=True)
class Due:
    id: int
    order_id: int
    url: str
    fields: dict[str, str]
    attempts: int
    merchant_id: int
    live: bool


def claim(conn: Connection, owner: str, now_ms: int, lease_ms: int, limit: int) -> list[Due]:
    earlier = callbacks.alias("earlier")
    blocked = exists().where(
        and_(
            earlier.c.order_id == callbacks.c.order_id,
            earlier.c.url == callbacks.c.url,
            earlier.c.id < callbacks.c.id,
            earlier.c.state == PENDING,
        )
    )
    due = (
        select(callbacks.c.id)
        .where(
            callbacks.c.state == PENDING,
            callbacks.c.next_attempt_at_ms <= now_ms,
            callbacks.c.lease_until_ms.is_(None) | (callbacks.c.lease_until_ms < now_ms),
            ~blocked,
        )
        .order_by(callbacks.c.next_attempt_at_ms, callbacks.c.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    ids = list(conn.execute(due).scalars())
    if not ids:
        return []
    conn.execute(
        update(callbacks).where(callbacks.c.id.in_(ids)).values(lease_owner=owner, lease_until_ms=now_ms + lease_ms)
    )
    rows = conn.execute(
        select(callbacks, orders.c.merchant_id, endpoints.c.mode)
        .join(orders, orders.c.id == callbacks.c.order_id)
        .join(endpoints, endpoints.c.id == orders.c.endpoint_id)
        .where(callbacks.c.id.in_(ids))
        .order_by(callbacks.c.id)
    ).mappings()
    return [
        Due(
            r["id"],
            r["order_id"],
            r["url"],
            orjson.loads(r["fields"]),
            r["attempts"],
            r["merchant_id"],
            r["mode"] == "live",
        )
        for r in rows
    ]


@dataclass(frozen=True, slots=True)
class Attempt:
    url: str
    at_ms: int
    latency_ms: int
    http_status: int | None
    error: str | None

    @property
    def delivered(self) -> bool:
        return self.http_status is not None and 200 <= self.http_status < 300


def record(conn: Connection, due: Due, owner: str, attempt: Attempt, retry_at_ms: int | None) -> bool:
    """Logs the attempt and moves the callback on: delivered, pending again at ``retry_at_ms``, or failed
    (no retry left). False when this worker's lease was lost: nothing is written then."""
    held = conn.execute(
        select(callbacks.c.id).where(callbacks.c.id == due.id, callbacks.c.lease_owner == owner).with_for_update()
    ).first()
    if held is None:
        return False
    conn.execute(
        insert(callback_attempts).values(
            callback_id=due.id,
            at_ms=attempt.at_ms,
            url=attempt.url,
            http_status=attempt.http_status,
            error=attempt.error,
            latency_ms=attempt.latency_ms,
        )
    )
    if attempt.delivered:
        changes = {"state": DELIVERED, "delivered_at_ms": attempt.at_ms}
    elif retry_at_ms is None:
        changes = {"state": FAILED}
    else:
        changes = {"state": PENDING, "next_attempt_at_ms": retry_at_ms}
    conn.execute(
        update(callbacks)
        .where(callbacks.c.id == due.id)
        .values(attempts=callbacks.c.attempts + 1, lease_owner=None, lease_until_ms=None, **changes)
    )
    return True


def listing(conn: Connection, order_id: int | None, state: str | None, limit: int = 100) -> list[Record]:
    query = select(callbacks).order_by(callbacks.c.id.desc()).limit(limit)
    if order_id is not None:
        query = query.where(callbacks.c.order_id == order_id)
    if state is not None:
        query = query.where(callbacks.c.state == state)
    return list(conn.execute(query).mappings())


def attempts_of(conn: Connection, callback_id: int) -> list[Record]:
    return list(
        conn.execute(
            select(callback_attempts)
            .where(callback_attempts.c.callback_id == callback_id)
            .order_by(callback_attempts.c.id)
        ).mappings()
    )


def redeliver(conn: Connection, now_ms: int, callback_id: int | None = None, order_id: int | None = None) -> int:
    """Puts delivered or failed callbacks back in the queue, due now; returns how many."""
    query = update(callbacks).values(state=PENDING, next_attempt_at_ms=now_ms, lease_owner=None, lease_until_ms=None)
    if callback_id is not None:
        query = query.where(callbacks.c.id == callback_id)
    if order_id is not None:
        query = query.where(callbacks.c.order_id == order_id)
    return int(conn.execute(query).rowcount)
