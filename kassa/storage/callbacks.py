"""The callback outbox and its delivery log.

Rows are written in the same transaction as the status change they report. Delivery claims due rows
with a lease (``FOR UPDATE SKIP LOCKED`` on PostgreSQL), and only the oldest undelivered callback of
an order for a given URL: each receiver sees one order's events in transaction order. A lease is given
(by a claim, or as a row is written) only to a callback that can start at once: within the limits of
callbacks in flight per destination and per merchant (``DeliveryLimits``), counted from the leases there are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import (
    ColumnElement,
    Connection,
    Exists,
    ScalarSelect,
    bindparam,
    case,
    exists,
    func,
    insert,
    literal,
    null,
    or_,
    select,
    update,
)

from kassa.domain.callbacks import destination
from kassa.storage.jobs import Lease
from kassa.storage.prepared import Prepared, Record
from kassa.storage.tables import callback_attempts, callbacks, cards, endpoints, merchants, orders

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"


@dataclass(frozen=True, slots=True)
class DeliveryLimits:
    """Callbacks in flight (leased) at once, at most, to one destination and of one merchant."""

    per_destination: int
    per_merchant: int


@dataclass(frozen=True, slots=True)
class CallbackLease(Lease):
    """A lease for callbacks about to be written, given to those that can start at once within ``limits``."""

    limits: DeliveryLimits


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
    destination: str


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
    conn: Connection,
    order: Record,
    tx_id: int,
    kind: str,
    url: str,
    fields: str,
    now_ms: int,
    lease: CallbackLease | None,
) -> tuple[int, bool]:
    """An outbox row (``fields``: the callback's fields as JSON). With a ``lease`` it is written leased,
    unless it has to wait (``_held_back``); returns its id and whether it was."""
    row = {"order_id": order["id"], "tx_id": tx_id, "kind": kind, "url": url, "fields": fields}
    target = {"destination": destination(url), "merchant_id": order["merchant_id"], "now_ms": now_ms}
    if lease is None:
        written = _INSERT_FREE.one(conn, {**row, **target})
        return written["id"], False
    limits = {"per_destination": lease.limits.per_destination, "per_merchant": lease.limits.per_merchant}
    leased = {"owner": lease.owner, "until_ms": lease.until_ms, **limits}
    written = _INSERT_LEASED.one(conn, {**row, **target, **leased})
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


def _in_flight(column: str, value: ColumnElement[Any]) -> ScalarSelect[Any]:
    """Callbacks leased now whose ``column`` is ``value``: in flight, or about to be, in any process. Along
    the index that ``column`` leads with the lease, so it reads only the rows in flight."""
    busy = callbacks.alias(f"busy_{column}")
    count = select(func.count()).where(busy.c[column] == value, busy.c.lease_until_ms >= bindparam("now_ms"))
    return count.scalar_subquery()


def _held_back() -> ColumnElement[bool]:
    """Whether a callback being written has to wait rather than go out with the status change: an earlier
    one of its order to its URL is pending, or its destination or merchant has its limit in flight. The
    claim takes it later, when a slot is free."""
    return or_(
        _pending_earlier(bindparam("order_id"), bindparam("url")),
        _in_flight("destination", bindparam("destination")) >= bindparam("per_destination"),
        _in_flight("merchant_id", bindparam("merchant_id")) >= bindparam("per_merchant"),
    )


def _insert(*, leased: bool) -> Prepared:
    """A pending callback due now; ``leased``: to ``owner`` until ``until_ms`` unless it is held back. An
    INSERT ... SELECT from the one evaluation of ``_held_back`` that both lease columns read."""
    lease: dict[str, ColumnElement[Any]] = {"lease_owner": null(), "lease_until_ms": null()}
    decision = select(_held_back().label("held")).subquery("decision")
    if leased:
        for name in lease:
            given = bindparam("owner" if name == "lease_owner" else "until_ms", type_=callbacks.c[name].type)
            lease[name] = case((decision.c.held, null()), else_=given)
    values: dict[str, ColumnElement[Any]] = {
        "order_id": bindparam("order_id"),
        "transaction_id": bindparam("tx_id"),
        "kind": bindparam("kind"),
        "url": bindparam("url"),
        "fields": bindparam("fields"),
        "state": literal(PENDING),
        "attempts": literal(0),
        "next_attempt_at_ms": bindparam("now_ms"),
        "created_at_ms": bindparam("now_ms"),
        "destination": bindparam("destination"),
        "merchant_id": bindparam("merchant_id"),
        **lease,
    }
    row = select(*(value.label(name) for name, value in values.items()))
    if leased:
        row = row.select_from(decision)
    return Prepared(insert(callbacks).from_select(list(values), row).returning(callbacks.c.id, callbacks.c.lease_owner))


_CARD = Prepared(select(cards).where(cards.c.id == bindparam("card_id")))
_ENDPOINT_SIGNER = Prepared(
    select(endpoints.c.descriptor, endpoints.c.mode, merchants.c.control_key_sealed)
    .join(merchants, merchants.c.id == endpoints.c.merchant_id)
    .where(endpoints.c.id == bindparam("endpoint_id"))
)
_INSERT_FREE = _insert(leased=False)
_INSERT_LEASED = _insert(leased=True)


def _claim_statement() -> Prepared:
    """Leases up to ``room`` due callbacks that can start now: none that waits for an earlier one of its
    order to its URL, and per destination and per merchant no more than their limits leave room for
    beside those in flight. First attempts come before retries (a lane each), then the longest due.

    The ranking reads every due row; window functions and row locks do not mix on PostgreSQL, so the rows
    chosen are locked (``SKIP LOCKED``) in a query of their own, which checks them free again."""
    c = callbacks.c
    lane = case((c.attempts == 0, 0), else_=1)
    due = (
        select(c.id, c.destination, c.merchant_id, lane.label("lane"), c.next_attempt_at_ms)
        .where(
            c.state == PENDING,
            c.next_attempt_at_ms <= bindparam("now_ms"),
            c.lease_until_ms.is_(None) | (c.lease_until_ms < bindparam("now_ms")),
            ~_pending_earlier(c.order_id, c.url, c.id),
        )
        .subquery("due")
    )
    order = (due.c.lane, due.c.next_attempt_at_ms, due.c.id)
    rank = func.row_number().over(partition_by=due.c.destination, order_by=order)
    by_destination = select(due, rank.label("rank")).subquery("by_destination")
    room: ColumnElement[Any] = bindparam("per_destination") - _in_flight("destination", by_destination.c.destination)
    fits_destination = (
        select(*(by_destination.c[column.key] for column in due.c))
        .where(by_destination.c.rank <= bindparam("per_destination"), by_destination.c.rank <= room)
        .subquery("fits_destination")
    )
    fit = fits_destination.c
    rank = func.row_number().over(partition_by=fit.merchant_id, order_by=(fit.lane, fit.next_attempt_at_ms, fit.id))
    by_merchant = select(fits_destination, rank.label("rank")).subquery("by_merchant")
    room = bindparam("per_merchant") - _in_flight("merchant_id", by_merchant.c.merchant_id)
    chosen = (
        select(by_merchant.c.id)
        .where(by_merchant.c.rank <= bindparam("per_merchant"), by_merchant.c.rank <= room)
        .order_by(by_merchant.c.lane, by_merchant.c.next_attempt_at_ms, by_merchant.c.id)
        .limit(bindparam("room"))
    )
    locked = (
        select(c.id)
        .where(
            c.id.in_(chosen),
            c.state == PENDING,
            c.lease_until_ms.is_(None) | (c.lease_until_ms < bindparam("now_ms")),
        )
        .with_for_update(skip_locked=True)
    )
    return Prepared(
        update(callbacks)
        .where(c.id.in_(locked.scalar_subquery()))
        .values(lease_owner=bindparam("owner"), lease_until_ms=bindparam("until_ms"))
        .returning(c.id, c.order_id, c.url, c.fields, c.attempts, c.destination)
    )


_CLAIM = _claim_statement()
_SIGNER = Prepared(
    select(orders.c.merchant_id, endpoints.c.mode, merchants.c.control_key_sealed)
    .join(endpoints, endpoints.c.id == orders.c.endpoint_id)
    .join(merchants, merchants.c.id == orders.c.merchant_id)
    .where(orders.c.id == bindparam("order_id"))
)


def claim(conn: Connection, owner: str, now_ms: int, lease_ms: int, room: int, limits: DeliveryLimits) -> list[Due]:
    """Due callbacks that can start now, at most ``room``, leased to ``owner``; each with the control key
    that signs it (read in the same transaction, so a key changed by an operator applies to the next
    attempt)."""
    leased = _CLAIM.all(
        conn,
        {
            "now_ms": now_ms,
            "room": room,
            "owner": owner,
            "until_ms": now_ms + lease_ms,
            "per_destination": limits.per_destination,
            "per_merchant": limits.per_merchant,
        },
    )
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
                row["destination"],
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
    response_excerpt: str | None = None  # the start of the receiver's answer, for operators

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
    outcome = {"error": attempt.error, "latency_ms": attempt.latency_ms, "excerpt": attempt.response_excerpt}
    _LOG_ATTEMPT.execute(conn, {**logged, **outcome})
    return True


_LOG_ATTEMPT = Prepared(
    insert(callback_attempts).values(
        callback_id=bindparam("id"),
        at_ms=bindparam("at_ms"),
        url=bindparam("url"),
        http_status=bindparam("http_status"),
        error=bindparam("error"),
        latency_ms=bindparam("latency_ms"),
        response_excerpt=bindparam("excerpt"),
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


def release(conn: Connection, owner: str) -> int:
    """Hands back every pending callback ``owner`` holds (a stopping dispatcher's), to be claimed at once."""
    released = conn.execute(
        update(callbacks)
        .where(callbacks.c.lease_owner == owner, callbacks.c.state == PENDING)
        .values(lease_owner=None, lease_until_ms=None)
    )
    return int(released.rowcount)
