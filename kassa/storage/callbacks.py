"""The callback outbox, its delivery log and the head of each destination's queue.

Rows are written in the same transaction as the status change they report. Each receiver sees one order's
events in order: a callback waits while an earlier one of its order to its URL is pending. A callback that a
claim may take, now or once due, has a *lane* (0: its first attempt, 1: a retry); the others (waiting for an
earlier one, leased, delivered, failed) have none, and a callback that finishes hands the lane on to the next
of its order and URL. ``callback_destinations`` keeps, per destination, when its next callback of each lane
may go out and its outage (``domain.callbacks.Outage``), changed in the same transaction as the callbacks. A
claim walks the destinations that are due and takes, from each that has room, its next rows by index
(``ix_callbacks_queue``): what it reads does not grow with the callbacks queued behind a destination that is
full or down. A destination that could not be reached gets one callback at a time, from its next probe on.

A lease is given (by a claim, or as a row is written) only to a callback that can start at once: within the
limits of callbacks in flight per destination and per merchant (``DeliveryLimits``), counted from the leases
there are. On PostgreSQL a claim locks the destination rows it works on (``SKIP LOCKED``): two processes
never take one destination's callbacks at once. SQLite has one writer. A transaction changes destination
rows in the order of their names, so two never wait for each other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    Exists,
    Integer,
    ScalarSelect,
    Text,
    TextClause,
    bindparam,
    case,
    column,
    exists,
    func,
    insert,
    literal,
    null,
    or_,
    select,
    text,
    tuple_,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite

from kassa.domain.callbacks import REACHABLE, Outage, destination
from kassa.storage.jobs import Lease, earliest_claimable
from kassa.storage.prepared import Prepared, Record
from kassa.storage.tables import (
    callback_attempts,
    callback_destinations,
    callbacks,
    cards,
    endpoints,
    merchants,
    orders,
)

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"
FIRST, RETRY = 0, 1  # the lanes: first attempts go before retries


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


def add_all(
    conn: Connection,
    order: Record,
    tx_id: int,
    targets: Sequence[tuple[str, str]],
    fields: str,
    now_ms: int,
    lease: CallbackLease | None,
) -> list[tuple[int, bool]]:
    """An outbox row per ``(kind, url)`` of ``targets`` (``fields``: the callback's fields as JSON). With a
    ``lease``, each is written leased unless it has to wait (``_held_back``); returns each one's id and
    whether it was. Those written for a claim to take bring their destinations' heads forward."""
    written, queued = [], set()
    for kind, url in targets:
        row = {"order_id": order["id"], "tx_id": tx_id, "kind": kind, "url": url, "fields": fields}
        target = {"destination": destination(url), "merchant_id": order["merchant_id"], "now_ms": now_ms}
        if lease is None:
            inserted = _INSERT_FREE.one(conn, {**row, **target})
        else:
            limits = {"per_destination": lease.limits.per_destination, "per_merchant": lease.limits.per_merchant}
            leased = {"owner": lease.owner, "until_ms": lease.until_ms, **limits}
            inserted = _INSERT_LEASED.one(conn, {**row, **target, **leased})
        written.append((inserted["id"], inserted["lease_owner"] is not None))
        if inserted["lane"] is not None:
            queued.add(target["destination"])
    for name in sorted(queued):  # name order: see the module's note on locks
        _ENSURE.execute(conn, {"destination": name})
        _BRING_FORWARD.execute(conn, {"destination": name, "now_ms": now_ms})
    return written


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
    """One outbox row (``add_all``)."""
    [written] = add_all(conn, order, tx_id, [(kind, url)], fields, now_ms, lease)
    return written


def _pending_earlier(
    order_id: ColumnElement[Any], url: ColumnElement[Any], before_id: ColumnElement[Any] | None = None
) -> Exists:
    """The ordering rule, for the lanes and for the hand-over as callbacks are written alike: a callback
    waits while an earlier one of its order to its URL is pending, so each receiver sees one order's events
    in order. A callback being written (no ``before_id``) comes after every row there is. One probe of
    ``ix_callbacks_order``: it is asked of one row at a time, as that row changes."""
    earlier = callbacks.alias("earlier")
    conditions = [earlier.c.order_id == order_id, earlier.c.url == url, earlier.c.state == PENDING]
    if before_id is not None:
        conditions.append(earlier.c.id < before_id)
    return exists().where(*conditions)


def _lane(attempts: ColumnElement[Any]) -> ColumnElement[Any]:
    return case((attempts == 0, literal(FIRST)), else_=literal(RETRY))


def _lane_unless_waiting() -> ColumnElement[Any]:
    """The lane of a pending callback coming back to the queue (after a retry, a lease that ran out, a
    release): none while an earlier one of its order to its URL is pending."""
    c = callbacks.c
    waiting = (c.state != PENDING, null()), (_pending_earlier(c.order_id, c.url, c.id), null())
    return case(*waiting, else_=_lane(c.attempts))


def _in_flight(column_name: str, value: ColumnElement[Any]) -> ScalarSelect[Any]:
    """Callbacks leased now whose ``column_name`` is ``value``: in flight, or about to be, in any process.
    Along the index that the column leads with the lease, so it reads only the rows in flight."""
    busy = callbacks.alias(f"busy_{column_name}")
    count = select(func.count()).where(busy.c[column_name] == value, busy.c.lease_until_ms >= bindparam("now_ms"))
    return count.scalar_subquery()


def _held_back() -> ColumnElement[bool]:
    """Whether a callback being written has to wait rather than go out with the status change: an earlier
    one of its order to its URL is pending, its destination or merchant has its limit in flight, or its
    destination is down (the probes decide when it is tried). The claim takes it later."""
    down = callback_destinations.c
    return or_(
        _pending_earlier(bindparam("order_id"), bindparam("url")),
        _in_flight("destination", bindparam("destination")) >= bindparam("per_destination"),
        _in_flight("merchant_id", bindparam("merchant_id")) >= bindparam("per_merchant"),
        exists().where(down.destination == bindparam("destination"), down.failures > 0),
    )


def _insert(*, leased: bool) -> Prepared:
    """A pending callback due now; ``leased``: to ``owner`` until ``until_ms`` unless it is held back. An
    INSERT ... SELECT from one evaluation of the decision that the lease columns and the lane read: a
    callback not leased is in the first lane unless an earlier one of its order to its URL is pending."""
    waits = _pending_earlier(bindparam("order_id"), bindparam("url")).label("waits")
    decision = select(waits, _held_back().label("held")) if leased else select(waits)
    made = decision.subquery("decision")
    lease: dict[str, ColumnElement[Any]] = {"lease_owner": null(), "lease_until_ms": null()}
    lane: ColumnElement[Any] = case((made.c.waits, null()), else_=literal(FIRST))
    if leased:
        for name in lease:
            given = bindparam("owner" if name == "lease_owner" else "until_ms", type_=callbacks.c[name].type)
            lease[name] = case((made.c.held, null()), else_=given)
        lane = case((made.c.held, lane), else_=null())
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
        "lane": lane,
        **lease,
    }
    row = select(*(value.label(name) for name, value in values.items())).select_from(made)
    returned = (callbacks.c.id, callbacks.c.lease_owner, callbacks.c.lane)
    return Prepared(insert(callbacks).from_select(list(values), row).returning(*returned))


_CARD = Prepared(select(cards).where(cards.c.id == bindparam("card_id")))
_ENDPOINT_SIGNER = Prepared(
    select(endpoints.c.descriptor, endpoints.c.mode, merchants.c.control_key_sealed)
    .join(merchants, merchants.c.id == endpoints.c.merchant_id)
    .where(endpoints.c.id == bindparam("endpoint_id"))
)
_INSERT_FREE = _insert(leased=False)
_INSERT_LEASED = _insert(leased=True)


# -- the destinations' heads ---------------------------------------------------------------------------------


def _head_of(lane: int) -> ColumnElement[Any]:
    """When the destination's next callback of ``lane`` may go out: the earliest due of the lane (the first
    entry of ``ix_callbacks_queue`` for it), not before the destination's next probe; NULL when the lane is
    empty."""
    queued = callbacks.alias("queued")
    d = callback_destinations.c
    earliest = (
        select(func.min(queued.c.next_attempt_at_ms))
        .where(queued.c.destination == d.destination, queued.c.lane == literal(lane))
        .scalar_subquery()
    )
    return case((earliest < d.probe_at_ms, d.probe_at_ms), else_=earliest)


_NEW_DESTINATION = {"failures": 0, "failed_at_ms": 0, "probe_at_ms": 0}
_ENSURE = Prepared(
    sqlite.insert(callback_destinations)
    .values(destination=bindparam("destination"), **_NEW_DESTINATION)
    .on_conflict_do_nothing(),
    postgresql=postgresql.insert(callback_destinations)
    .values(destination=bindparam("destination"), **_NEW_DESTINATION)
    .on_conflict_do_nothing(),
)
_REFRESH = Prepared(
    update(callback_destinations)
    .where(callback_destinations.c.destination == bindparam("destination"))
    .values(first_at_ms=_head_of(FIRST), retry_at_ms=_head_of(RETRY))
)


# A first attempt due now joined the destination's queue: its head comes forward to now (or its probe), if it
# was later. A destination with callbacks already due, as one with a backlog has, is not written (nor locked).
_BRING_FORWARD = Prepared(
    update(callback_destinations)
    .where(
        callback_destinations.c.destination == bindparam("destination"),
        or_(callback_destinations.c.first_at_ms.is_(None), callback_destinations.c.first_at_ms > bindparam("now_ms")),
    )
    .values(
        first_at_ms=case(
            (callback_destinations.c.probe_at_ms > bindparam("now_ms"), callback_destinations.c.probe_at_ms),
            else_=bindparam("now_ms"),
        )
    )
)


def _refresh(conn: Connection, names: Iterable[str]) -> None:
    """Sets the heads of the destinations ``names`` from their queues, after their lanes or outages
    changed; in name order (see the module's note on locks)."""
    for name in sorted(set(names)):
        _ENSURE.execute(conn, {"destination": name})
        _REFRESH.execute(conn, {"destination": name})


# -- claims --------------------------------------------------------------------------------------------------


def _due_destinations(lane: int) -> Prepared:
    """A page of the destinations whose next callback of ``lane`` may go out now, longest due first, after
    the one at ``(after_at, after)``, with their callbacks in flight; locked, skipping those another claim
    holds."""
    d = callback_destinations.c
    at = d.first_at_ms if lane == FIRST else d.retry_at_ms
    flying = _in_flight("destination", d.destination).label("flying")
    return Prepared(
        select(d.destination, d.failures, flying, at.label("at"))
        .where(at <= bindparam("now_ms"), tuple_(at, d.destination) > tuple_(bindparam("after_at"), bindparam("after")))
        .order_by(at, d.destination)
        .limit(bindparam("page"))
        .with_for_update(skip_locked=True)
    )


_DUE_DESTINATIONS = {lane: _due_destinations(lane) for lane in (FIRST, RETRY)}
_PAGE = 32  # destinations read at a time, at least: a small room need not cost a query per full destination
_NEXT = Prepared(
    select(callbacks.c.id, callbacks.c.merchant_id)
    .where(
        callbacks.c.destination == bindparam("destination"),
        callbacks.c.lane == bindparam("lane"),
        callbacks.c.next_attempt_at_ms <= bindparam("now_ms"),
    )
    .order_by(callbacks.c.next_attempt_at_ms, callbacks.c.id)
    .limit(bindparam("take"))
    .with_for_update(skip_locked=True)
)
_MERCHANT_IN_FLIGHT = Prepared(select(_in_flight("merchant_id", bindparam("merchant_id"))))


def _leasing(chosen: ColumnElement[bool] | TextClause) -> Any:
    return (
        update(callbacks)
        .where(chosen)
        .values(lease_owner=bindparam("owner"), lease_until_ms=bindparam("until_ms"), lane=null())
        .returning(
            callbacks.c.id,
            callbacks.c.order_id,
            callbacks.c.url,
            callbacks.c.fields,
            callbacks.c.attempts,
            callbacks.c.destination,
        )
    )


# The callbacks a claim chose, by their ids in the JSON array ``ids``: one statement text for any count. On
# PostgreSQL as an array the primary key is searched with: joined to the array's elements instead, the
# planner took them for a hundred rows and scanned a table of ten thousand (1.4 ms a claim, bench.claims).
_LEASE = Prepared(
    _leasing(callbacks.c.id.in_(text("SELECT value FROM json_each(:ids)").columns(column("value", BigInteger)))),
    postgresql=_leasing(
        text("callbacks.id = ANY(CAST(ARRAY(SELECT jsonb_array_elements_text(CAST(:ids AS JSONB))) AS BIGINT[]))")
    ),
)
_RECOVER = Prepared(
    update(callbacks)
    .where(
        callbacks.c.id.in_(
            select(callbacks.c.id)
            .where(callbacks.c.lease_until_ms < bindparam("now_ms"))
            .with_for_update(skip_locked=True)
            .scalar_subquery()
        )
    )
    .values(lease_owner=null(), lease_until_ms=null(), lane=_lane_unless_waiting())
    .returning(callbacks.c.destination)
)
_SIGNER = Prepared(
    select(orders.c.merchant_id, endpoints.c.mode, merchants.c.control_key_sealed)
    .join(endpoints, endpoints.c.id == orders.c.endpoint_id)
    .join(merchants, merchants.c.id == orders.c.merchant_id)
    .where(orders.c.id == bindparam("order_id"))
)


# When a claim could next take a callback: the destinations' heads of either lane (their indexes), and the
# earliest lease to run out (``ix_callbacks_leased``).
_NEXT_DUE = Prepared(
    select(
        select(func.min(callback_destinations.c.first_at_ms)).scalar_subquery().label("first"),
        select(func.min(callback_destinations.c.retry_at_ms)).scalar_subquery().label("retry"),
        select(func.min(callbacks.c.lease_until_ms))
        .where(callbacks.c.lease_until_ms.is_not(None))
        .scalar_subquery()
        .label("lease_ends"),
    )
)


# The overload signal's read of the callbacks (``engine.overload``): the longest due destinations' heads of
# first attempts, along ``ix_callback_destinations_first``, with their callbacks in flight; no lock taken.
_SIGNAL_PAGE = 32
_FIRST_HEADS = Prepared(
    select(
        callback_destinations.c.destination,
        callback_destinations.c.first_at_ms.label("at"),
        callback_destinations.c.failures,
        _in_flight("destination", callback_destinations.c.destination).label("flying"),
    )
    .where(callback_destinations.c.first_at_ms <= bindparam("now_ms"))
    .order_by(callback_destinations.c.first_at_ms)
    .limit(_SIGNAL_PAGE)
)
# The merchant of a destination's next first attempt, by ``ix_callbacks_queue``.
_HEAD_MERCHANT = Prepared(
    select(callbacks.c.merchant_id)
    .where(
        callbacks.c.destination == bindparam("destination"),
        callbacks.c.lane == literal(FIRST),
        callbacks.c.next_attempt_at_ms <= bindparam("now_ms"),
    )
    .order_by(callbacks.c.next_attempt_at_ms, callbacks.c.id)
    .limit(1)
)


def oldest_deliverable(conn: Connection, now_ms: int, limits: DeliveryLimits) -> int | None:
    """When the longest due first attempt that the dispatcher could send now was due: at a destination with
    room (fewer than its limit in flight; one that is down has its head at its next probe, and room for that
    probe alone), of a merchant with room (``limits.per_merchant``); None when none waits. A dead receiver's
    backlog waits for its probe, and a slow one's for its own room or its merchant's, so none of them
    counts: only the dispatcher's own lag does. Reads the ``_SIGNAL_PAGE`` longest due heads at most: past
    that many held back by their limits, None."""
    for head in _FIRST_HEADS.all(conn, {"now_ms": now_ms}):
        if head["flying"] >= (1 if head["failures"] else limits.per_destination):
            continue
        merchant_id = _HEAD_MERCHANT.scalar(conn, {"destination": head["destination"], "now_ms": now_ms})
        flying = _MERCHANT_IN_FLIGHT.scalar(conn, {"merchant_id": merchant_id, "now_ms": now_ms})
        if merchant_id is not None and int(flying) < limits.per_merchant:
            return int(head["at"])
    return None


def next_due(conn: Connection) -> int | None:
    """The earliest time a claim may find a callback to take, or None when none waits. A head already past
    is a destination or merchant at its limit in flight: the claim after this one may find room."""
    found = _NEXT_DUE.one(conn, {})
    return earliest_claimable(found["first"], found["retry"], lease_ends=found["lease_ends"])


class _Room:
    """What one claim may still lease: in all, per destination and per merchant, each limit less the
    leases there are (read once, by index, for the destinations and merchants this claim meets)."""

    def __init__(self, conn: Connection, now_ms: int, room: int, limits: DeliveryLimits) -> None:
        self.conn, self.now_ms, self.left, self.limits = conn, now_ms, room, limits
        self.destinations: dict[str, int] = {}
        self.merchants: dict[int, int] = {}
        self.chosen: list[int] = []

    def of_destination(self, found: Record) -> int:
        """Room left at a destination (a row of ``_DUE_DESTINATIONS``); one callback at a time at one that is
        down (its probe)."""
        name = found["destination"]
        if name not in self.destinations:
            limit = 1 if found["failures"] else self.limits.per_destination
            self.destinations[name] = limit - found["flying"]
        return min(self.destinations[name], self.left)

    def take(self, destination_name: str, callback_id: int, merchant_id: int) -> None:
        """Takes the callback if its merchant has room left."""
        if merchant_id not in self.merchants:
            flying = _MERCHANT_IN_FLIGHT.scalar(self.conn, {"merchant_id": merchant_id, "now_ms": self.now_ms})
            self.merchants[merchant_id] = self.limits.per_merchant - int(flying)
        if self.merchants[merchant_id] > 0:
            self.merchants[merchant_id] -= 1
            self.destinations[destination_name] -= 1
            self.left -= 1
            self.chosen.append(callback_id)


def _walk(left: _Room, lane: int) -> None:
    """Chooses callbacks of ``lane`` while there is room: the due destinations a page at a time, from each
    its next callbacks as far as its room goes."""
    size, after = max(left.left, _PAGE), (-1, "")
    while left.left > 0:
        params = {"now_ms": left.now_ms, "after_at": after[0], "after": after[1], "page": size}
        page = _DUE_DESTINATIONS[lane].all(left.conn, params)
        for found in page:
            if (take := left.of_destination(found)) > 0:
                wanted = {"destination": found["destination"], "lane": lane, "now_ms": left.now_ms, "take": take}
                for row in _NEXT.all(left.conn, wanted):
                    left.take(found["destination"], row["id"], row["merchant_id"])
            if left.left <= 0:
                return
        if len(page) < size:
            return
        after = (page[-1]["at"], page[-1]["destination"])


def claim(conn: Connection, owner: str, now_ms: int, lease_ms: int, room: int, limits: DeliveryLimits) -> list[Due]:
    """Due callbacks that can start now, at most ``room``, leased to ``owner``: first attempts before
    retries; within a lane, destinations longest due first, each giving its next callbacks (longest due
    first) as far as its room and their merchants' allow. Leases that ran out are given back first. Each
    callback comes with the control key that signs it (read in the same transaction, so a key changed by
    an operator applies to the next attempt)."""
    _refresh(conn, (row["destination"] for row in _RECOVER.all(conn, {"now_ms": now_ms})))
    left = _Room(conn, now_ms, room, limits)
    for lane in (FIRST, RETRY):
        _walk(left, lane)
    if not left.chosen:
        return []
    lease = {"owner": owner, "until_ms": now_ms + lease_ms}
    leased = _LEASE.all(conn, {"ids": orjson.dumps(left.chosen).decode(), **lease})
    _refresh(conn, (row["destination"] for row in leased))
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


# -- attempts ------------------------------------------------------------------------------------------------


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


def record(
    conn: Connection,
    due: Due,
    owner: str,
    attempt: Attempt,
    retry_at_ms: int | None,
    *,
    outage: Callable[[Outage], Outage] | None = None,
) -> bool:
    """Logs the attempt and moves the callback on: delivered, pending again at ``retry_at_ms``, or failed
    (no retry left); a callback that finished hands its lane to the next of its order and URL. With
    ``outage``, the destination's outage becomes ``outage(current)``. False when this worker's lease was
    lost: nothing is written then."""
    held = {"id": due.id, "owner": owner, "order_id": due.order_id, "url": due.url, "destination": due.destination}
    logged = {"at_ms": attempt.at_ms, "attempt_url": attempt.url, "http_status": attempt.http_status}
    logged |= {"error": attempt.error, "latency_ms": attempt.latency_ms, "excerpt": attempt.response_excerpt}
    held |= logged
    if attempt.delivered:
        moved = _DELIVERED.first(conn, held)
    elif retry_at_ms is None:
        moved = _FAILED.first(conn, held)
    else:
        moved = _RETRY.first(conn, {**held, "retry_at_ms": retry_at_ms})
    if moved is None:
        return False
    if conn.dialect.name != "postgresql":  # there the statement that moved the callback logged it
        _LOG_ATTEMPT.execute(conn, {"id": due.id, **logged})
    requeued = not attempt.delivered and retry_at_ms is not None
    promoted = (
        not requeued
        and moved["others_pending"]
        and _PROMOTE.execute(conn, {"order_id": due.order_id, "url": due.url}).rowcount == 1
    )
    changed = outage is not None and _note_outage(conn, due.destination, outage, _outage_in(moved))
    if changed or requeued or promoted:
        _refresh(conn, [due.destination])
    return True


# An attempt's log row: each column of ``callback_attempts`` and the parameter ``record`` gives it, for the
# INSERT here and for the one PostgreSQL runs inside the callback's UPDATE (``_logged_with``).
_ATTEMPT_COLUMNS = {
    "at_ms": bindparam("at_ms", type_=BigInteger()),
    "url": bindparam("attempt_url", type_=Text()),
    "http_status": bindparam("http_status", type_=Integer()),
    "error": bindparam("error", type_=Text()),
    "latency_ms": bindparam("latency_ms", type_=Integer()),
    "response_excerpt": bindparam("excerpt", type_=Text()),
}
_LOG_ATTEMPT = Prepared(insert(callback_attempts).values(callback_id=bindparam("id"), **_ATTEMPT_COLUMNS))


def _moved_on(state: str, **changes: Any) -> Prepared:
    """The callback after an attempt: one more attempt counted, the lease released, ``state`` set; only
    while the lease is the caller's (``owner``). It returns, read as it runs, what the attempt's record goes
    on with: the destination's outage (``_outage_in``) and whether another callback of its order and URL is
    pending (only then may one wait for it to finish), each a probe by key, so neither costs a statement."""
    d = callback_destinations.c
    chain = callbacks.alias("chain")
    others = exists().where(
        chain.c.order_id == bindparam("order_id"),
        chain.c.url == bindparam("url"),
        chain.c.state == PENDING,
        chain.c.id != bindparam("id"),
    )
    outage = [
        select(d[name]).where(d.destination == bindparam("destination")).scalar_subquery().label(name)
        for name in ("failures", "failed_at_ms", "probe_at_ms")
    ]
    statement = (
        update(callbacks)
        .where(callbacks.c.id == bindparam("id"), callbacks.c.lease_owner == bindparam("owner"))
        .values(attempts=callbacks.c.attempts + 1, lease_owner=None, lease_until_ms=None, state=state, **changes)
    )
    returned = (others.label("others_pending"), *outage)
    return Prepared(
        statement.returning(*returned), postgresql=_logged_with(statement.returning(callbacks.c.id, *returned))
    )


def _logged_with(moved_on: Any) -> Any:
    """PostgreSQL: the callback moved on and its attempt logged (``_LOG_ATTEMPT``) in one statement, one round
    trip fewer an attempt; the attempt is written only with the row the fence let through."""
    moved = moved_on.cte("moved")
    logged = insert(callback_attempts).from_select(
        ["callback_id", *_ATTEMPT_COLUMNS], select(moved.c.id, *_ATTEMPT_COLUMNS.values())
    )
    names = ("others_pending", "failures", "failed_at_ms", "probe_at_ms")
    return select(*(moved.c[name] for name in names)).add_cte(logged.cte("logged"))


def _outage_in(row: Record | None) -> Outage:
    """A destination's outage as read (by ``_moved_on`` or ``_OUTAGE_LOCKED``): none without its row."""
    if row is None or row["failures"] is None:
        return REACHABLE
    return Outage(row["failures"], row["failed_at_ms"], row["probe_at_ms"])


_DELIVERED = _moved_on(DELIVERED, delivered_at_ms=bindparam("at_ms"), lane=null())
_FAILED = _moved_on(FAILED, lane=null())
# Back in the retry lane unless an earlier callback of its order and URL is pending (put back by an operator).
_RETRY = _moved_on(
    PENDING,
    next_attempt_at_ms=bindparam("retry_at_ms"),
    lane=case((_pending_earlier(callbacks.c.order_id, callbacks.c.url, callbacks.c.id), null()), else_=literal(RETRY)),
)


def _first_pending() -> ScalarSelect[Any]:
    chain = callbacks.alias("chain")
    return (
        select(func.min(chain.c.id))
        .where(chain.c.order_id == bindparam("order_id"), chain.c.url == bindparam("url"), chain.c.state == PENDING)
        .scalar_subquery()
    )


# The callback of an order and URL that may go now that the one before it finished: the earliest pending, if
# it is neither leased nor in a lane already.
_PROMOTE = Prepared(
    update(callbacks)
    .where(callbacks.c.id == _first_pending(), callbacks.c.lease_until_ms.is_(None), callbacks.c.lane.is_(None))
    .values(lane=_lane(callbacks.c.attempts))
)
_OUTAGE_COLUMNS = select(
    callback_destinations.c.failures, callback_destinations.c.failed_at_ms, callback_destinations.c.probe_at_ms
).where(callback_destinations.c.destination == bindparam("destination"))
_OUTAGE_LOCKED = Prepared(_OUTAGE_COLUMNS.with_for_update())
_SET_OUTAGE = Prepared(
    update(callback_destinations)
    .where(callback_destinations.c.destination == bindparam("destination"))
    .values(
        failures=bindparam("failures"), failed_at_ms=bindparam("failed_at_ms"), probe_at_ms=bindparam("probe_at_ms")
    )
)


def _note_outage(conn: Connection, name: str, outage: Callable[[Outage], Outage], unlocked: Outage) -> bool:
    """Sets the destination's outage to ``outage(current)``; whether it changed. ``unlocked`` is the outage
    as read without a lock: the attempts of a destination that answers change nothing, and must not queue
    up on its row (on PostgreSQL), nor make claims skip it."""
    if outage(unlocked) == unlocked:
        return False
    _ENSURE.execute(conn, {"destination": name})
    current = _outage_in(_OUTAGE_LOCKED.first(conn, {"destination": name}))
    after = outage(current)
    if after == current:
        return False
    values = {"failures": after.failures, "failed_at_ms": after.failed_at_ms, "probe_at_ms": after.probe_at_ms}
    _SET_OUTAGE.execute(conn, {"destination": name, **values})
    return True


# -- operators and stopping ----------------------------------------------------------------------------------


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
    """Puts delivered or failed callbacks back in the queue, due now; returns how many. Of each order and
    URL they belong to, the earliest pending one takes the lane: the others wait for it again."""
    query = update(callbacks).values(
        state=PENDING, next_attempt_at_ms=now_ms, lease_owner=None, lease_until_ms=None, lane=None
    )
    if callback_id is not None:
        query = query.where(callbacks.c.id == callback_id)
    if order_id is not None:
        query = query.where(callbacks.c.order_id == order_id)
    requeued = conn.execute(query.returning(callbacks.c.order_id, callbacks.c.url, callbacks.c.destination)).all()
    for chain_order, chain_url in sorted({(row.order_id, row.url) for row in requeued}):
        conn.execute(
            update(callbacks)
            .where(callbacks.c.order_id == chain_order, callbacks.c.url == chain_url, callbacks.c.lane.is_not(None))
            .values(lane=None)
        )
        _PROMOTE.execute(conn, {"order_id": chain_order, "url": chain_url})
    _refresh(conn, (row.destination for row in requeued))
    return len(requeued)


def prolong(conn: Connection, owners: Sequence[str], now_ms: int, by_ms: int) -> int:
    """Moves the leases ``owners`` hold that have not run out at ``now_ms`` ``by_ms`` later; how many. For
    the test clock's move: a callback its own process has in flight keeps the real time its lease had left."""
    prolonged = conn.execute(
        update(callbacks)
        .where(callbacks.c.lease_owner.in_(owners), callbacks.c.lease_until_ms >= now_ms)
        .values(lease_until_ms=callbacks.c.lease_until_ms + by_ms)
    )
    return int(prolonged.rowcount)


def release(conn: Connection, owner: str) -> int:
    """Hands back every pending callback ``owner`` holds (a stopping dispatcher's), to be claimed at once."""
    released = conn.execute(
        update(callbacks)
        .where(callbacks.c.lease_owner == owner, callbacks.c.state == PENDING)
        .values(lease_owner=None, lease_until_ms=None, lane=_lane_unless_waiting())
        .returning(callbacks.c.destination)
    ).all()
    _refresh(conn, (row.destination for row in released))
    return len(released)
