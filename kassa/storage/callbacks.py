"""The callback outbox and its delivery log.

Rows are written in the same transaction as the status change they report. Delivery claims due rows
with a lease (``FOR UPDATE SKIP LOCKED`` on PostgreSQL), and only the oldest undelivered callback of
an order for a given URL: each receiver sees one order's events in transaction order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import (
    Case,
    Column,
    ColumnElement,
    Connection,
    Exists,
    bindparam,
    case,
    exists,
    insert,
    null,
    select,
    update,
)

from kassa.storage.jobs import Lease, lease_columns
from kassa.storage.prepared import Prepared, Record
from kassa.storage.tables import callback_attempts, callbacks, cards, endpoints, merchants, orders

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"


@dataclass(frozen=True, slots=True)
class Due:
    id: int
    order_id: int
    url: str
    fields: dict[str, str]
    attempts: int
    merchant_id: int
    live: bool
    control_key_sealed: bytes  # opened by the dispatcher as it signs (``control_key_context(merchant_id)``)


@dataclass(frozen=True, slots=True)
class Sender:
    """What an order's callbacks carry and are signed with, besides the order and transaction."""

    card: Record | None
    descriptor: str
    mode: str
    control_key_sealed: bytes

    @classmethod
    def of(cls, card: Record | None, signer: Record) -> Sender:
        """From the card and a row with the endpoint's ``descriptor`` and ``mode`` and the merchant's
        ``control_key_sealed``."""
        return cls(card, signer["descriptor"], signer["mode"], bytes(signer["control_key_sealed"]))


def sender_of(conn: Connection, order: Record) -> Sender:
    card = None if order["card_id"] is None else _CARD.one(conn, {"card_id": order["card_id"]})
    return Sender.of(card, _ENDPOINT_SIGNER.one(conn, {"endpoint_id": order["endpoint_id"]}))


def add(
    conn: Connection, order: Record, tx_id: int, kind: str, url: str, fields: str, now_ms: int, lease: Lease | None
) -> tuple[int, bool]:
    """An outbox row (``fields``: the callback's fields as JSON). With a ``lease`` it is written leased,
    unless it waits for an earlier callback (``_pending_earlier``); returns its id and whether it was."""
    row = {"order_id": order["id"], "tx_id": tx_id, "kind": kind, "url": url, "fields": fields}
    written = _INSERT.one(conn, {**row, "now_ms": now_ms, **lease_columns(lease)})
    return written["id"], written["lease_owner"] is not None


def _pending_earlier(
    order_id: ColumnElement[Any], url: ColumnElement[Any], before_id: ColumnElement[Any] | None = None
) -> Exists:
    """The ordering rule, for the claim and for the hand-over as callbacks are written alike: a callback
    waits while an earlier one of its order to its URL is pending, so each receiver sees one order's events
    in order. A callback being written (no ``before_id``) comes after every row there is."""
    earlier = callbacks.alias("earlier")
    conditions = [earlier.c.order_id == order_id, earlier.c.url == url, earlier.c.state == PENDING]
    if before_id is not None:
        conditions.append(earlier.c.id < before_id)
    return exists().where(*conditions)


def _unless_waiting(lease: Column[Any]) -> Case[Any]:
    """A lease column of a callback being written: the value given, or none when the callback has to wait."""
    waits = _pending_earlier(bindparam("order_id"), bindparam("url"))
    return case((waits, null()), else_=bindparam(lease.name, type_=lease.type))


_CARD = Prepared(select(cards).where(cards.c.id == bindparam("card_id")))
_ENDPOINT_SIGNER = Prepared(
    select(endpoints.c.descriptor, endpoints.c.mode, merchants.c.control_key_sealed)
    .join(merchants, merchants.c.id == endpoints.c.merchant_id)
    .where(endpoints.c.id == bindparam("endpoint_id"))
)
_INSERT = Prepared(
    insert(callbacks)
    .values(
        order_id=bindparam("order_id"),
        transaction_id=bindparam("tx_id"),
        kind=bindparam("kind"),
        url=bindparam("url"),
        fields=bindparam("fields"),
        state=PENDING,
        attempts=0,
        next_attempt_at_ms=bindparam("now_ms"),
        lease_owner=_unless_waiting(callbacks.c.lease_owner),
        lease_until_ms=_unless_waiting(callbacks.c.lease_until_ms),
        created_at_ms=bindparam("now_ms"),
    )
    .returning(callbacks.c.id, callbacks.c.lease_owner)
)


def _claim_statement() -> Prepared:
    """Leases the due callbacks, oldest first, skipping any that waits for an earlier one."""
    due = (
        select(callbacks.c.id)
        .where(
            callbacks.c.state == PENDING,
            callbacks.c.next_attempt_at_ms <= bindparam("now_ms"),
            callbacks.c.lease_until_ms.is_(None) | (callbacks.c.lease_until_ms < bindparam("now_ms")),
            ~_pending_earlier(callbacks.c.order_id, callbacks.c.url, callbacks.c.id),
        )
        .order_by(callbacks.c.next_attempt_at_ms, callbacks.c.id)
        .limit(bindparam("limit"))
        .with_for_update(skip_locked=True)
    )
    return Prepared(
        update(callbacks)
        .where(callbacks.c.id.in_(due.scalar_subquery()))
        .values(lease_owner=bindparam("owner"), lease_until_ms=bindparam("until_ms"))
        .returning(callbacks.c.id, callbacks.c.order_id, callbacks.c.url, callbacks.c.fields, callbacks.c.attempts)
    )


_CLAIM = _claim_statement()
_SIGNER = Prepared(
    select(orders.c.merchant_id, endpoints.c.mode, merchants.c.control_key_sealed)
    .join(endpoints, endpoints.c.id == orders.c.endpoint_id)
    .join(merchants, merchants.c.id == orders.c.merchant_id)
    .where(orders.c.id == bindparam("order_id"))
)


def claim(conn: Connection, owner: str, now_ms: int, lease_ms: int, limit: int) -> list[Due]:
    """Due callbacks, leased to ``owner``, each with the control key that signs it (read in the same
    transaction, so a key changed by an operator applies to the next attempt)."""
    leased = _CLAIM.all(conn, {"now_ms": now_ms, "limit": limit, "owner": owner, "until_ms": now_ms + lease_ms})
    claimed = []
    for row in sorted(leased, key=lambda r: r["id"]):
        signer = _SIGNER.one(conn, {"order_id": row["order_id"]})
        fields = orjson.loads(row["fields"])
        live = signer["mode"] == "live"
        claimed.append(
            Due(
                row["id"],
                row["order_id"],
                row["url"],
                fields,
                row["attempts"],
                signer["merchant_id"],
                live,
                bytes(signer["control_key_sealed"]),
            )
        )
    return claimed


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
    held = {"id": due.id, "owner": owner}
    if attempt.delivered:
        moved = _DELIVERED.execute(conn, {**held, "at_ms": attempt.at_ms})
    elif retry_at_ms is None:
        moved = _FAILED.execute(conn, held)
    else:
        moved = _RETRY.execute(conn, {**held, "retry_at_ms": retry_at_ms})
    if moved.rowcount != 1:
        return False
    logged = {"id": due.id, "at_ms": attempt.at_ms, "url": attempt.url, "http_status": attempt.http_status}
    _LOG_ATTEMPT.execute(conn, {**logged, "error": attempt.error, "latency_ms": attempt.latency_ms})
    return True


_LOG_ATTEMPT = Prepared(
    insert(callback_attempts).values(
        callback_id=bindparam("id"),
        at_ms=bindparam("at_ms"),
        url=bindparam("url"),
        http_status=bindparam("http_status"),
        error=bindparam("error"),
        latency_ms=bindparam("latency_ms"),
    )
)


def _moved_on(state: str, **changes: Any) -> Prepared:
    """The callback after an attempt: one more attempt counted, the lease released, ``state`` set; only
    while the lease is the caller's (``owner``)."""
    statement = (
        update(callbacks)
        .where(callbacks.c.id == bindparam("id"), callbacks.c.lease_owner == bindparam("owner"))
        .values(
            attempts=callbacks.c.attempts + 1,
            lease_owner=None,
            lease_until_ms=None,
            state=state,
            **changes,
        )
    )
    return Prepared(statement)


_DELIVERED = _moved_on(DELIVERED, delivered_at_ms=bindparam("at_ms"))
_FAILED = _moved_on(FAILED)
_RETRY = _moved_on(PENDING, next_attempt_at_ms=bindparam("retry_at_ms"))


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
