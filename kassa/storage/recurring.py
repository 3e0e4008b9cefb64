"""Queries on recurring payments and their charges (CONTRACT §13). What is charged, and when, is decided in
``kassa.core.recurring``; here are the statements it runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, bindparam, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from kassa.domain.recurring import ChargeState, Status
from kassa.storage.prepared import Prepared, Record
from kassa.storage.tables import card_refs, cards, orders, recurring_charges, recurring_payments, transactions


@dataclass(frozen=True, slots=True)
class NewPayment:
    merchant_id: int
    endpoint_id: int
    now_ms: int
    card_id: int | None = None  # None until the card sent with the request is stored
    client_orderid: str | None = None
    card_ref_id: int | None = None
    origin_card_ref_id: int | None = None
    amount: int | None = None
    currency: str | None = None
    order_desc: str = ""
    email: str = ""
    server_callback_url: str | None = None
    notify_url: str | None = None
    merchant_data: str | None = None
    request_fingerprint: str | None = None
    period: str | None = None
    interval: int | None = None
    start_date: str | None = None
    finish_date: str | None = None
    max_count: int | None = None
    next_charge_at_ms: int | None = None


def _insert_ignoring(conn: Connection, table: Any, values: dict[str, Any], *key: str) -> int | None:
    """The new row's id, or None when a row with the same ``key`` exists (nothing written, no exception:
    no savepoint is needed around it). On PostgreSQL a conflicting row not yet committed is waited for."""
    dialect_insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    statement = dialect_insert(table).values(values).on_conflict_do_nothing(index_elements=list(key))
    found = conn.execute(statement.returning(table.c.id)).scalar()
    return None if found is None else int(found)


def insert_payment(conn: Connection, new: NewPayment) -> int | None:
    """The new recurring payment's id; None when its client_orderid (or, for a create-card-ref v4's, its
    reference) has one already."""
    values = {name: getattr(new, name) for name in NewPayment.__dataclass_fields__ if name != "now_ms"}
    values.update(status=Status.ACTIVE.value, created_at_ms=new.now_ms, updated_at_ms=new.now_ms)
    values.update(charges_made=0, charges_approved=0, charges_declined=0)
    key = ("origin_card_ref_id",) if new.origin_card_ref_id is not None else ("endpoint_id", "client_orderid")
    return _insert_ignoring(conn, recurring_payments, values, *key)


def by_client_orderid(conn: Connection, endpoint_id: int, client_orderid: str) -> Record | None:
    query = select(recurring_payments).where(
        recurring_payments.c.endpoint_id == endpoint_id, recurring_payments.c.client_orderid == client_orderid
    )
    return conn.execute(query).mappings().first()


# What create-card-ref v4 needs of a reference (``tokenised``), in one read by key.
_TOKENISED = Prepared(
    select(
        card_refs.c.merchant_id,
        card_refs.c.card_id,
        orders.c.endpoint_id,
        cards.c.pan_fingerprint,
        recurring_payments.c.id.label("recurring_payment_id"),
    )
    .select_from(
        card_refs.join(orders, orders.c.id == card_refs.c.order_id)
        .join(cards, cards.c.id == card_refs.c.card_id)
        .outerjoin(recurring_payments, recurring_payments.c.origin_card_ref_id == card_refs.c.id)
    )
    .where(card_refs.c.id == bindparam("ref_id"))
)


def tokenised(conn: Connection, card_ref_id: int) -> Record:
    """Where a reference comes from (its merchant, card, the card's keyed fingerprint, the endpoint of
    the order it was made from) and the recurring payment a create-card-ref v4 made on it (None: none yet)."""
    return _TOKENISED.one(conn, {"ref_id": card_ref_id})


def due(conn: Connection, now_ms: int, batch: int) -> list[Record]:
    """Up to ``batch`` payments with a regular charge due, locked; on PostgreSQL those another process
    holds are skipped (it is charging them), so several processes share the work."""
    query = (
        select(recurring_payments)
        .where(recurring_payments.c.next_charge_at_ms <= now_ms)
        .order_by(recurring_payments.c.next_charge_at_ms, recurring_payments.c.id)
        .limit(batch)
        .with_for_update(skip_locked=True)
    )
    return list(conn.execute(query).mappings().all())


def lock(conn: Connection, payment_id: int) -> Record | None:
    """The payment, locked until the end of the database transaction."""
    query = select(recurring_payments).where(recurring_payments.c.id == payment_id).with_for_update()
    return conn.execute(query).mappings().first()


def lock_all(conn: Connection, payment_ids: set[int]) -> dict[int, Record]:
    """The payments, locked in the order of their ids: two processes locking overlapping sets always take
    them in one order, so neither waits on the other in a cycle (a deadlock PostgreSQL would break). No
    ids, no statement: most payouts and transfers name no payment, and an empty IN query cost ~230 µs."""
    if not payment_ids:
        return {}
    query = (
        select(recurring_payments)
        .where(recurring_payments.c.id.in_(sorted(payment_ids)))
        .order_by(recurring_payments.c.id)
        .with_for_update()
    )
    return {row["id"]: row for row in conn.execute(query).mappings().all()}


def card_expiry(conn: Connection, card_id: int) -> tuple[int, int]:
    """(month, four-digit year) of a stored card."""
    row = conn.execute(select(cards.c.exp_month, cards.c.exp_year).where(cards.c.id == card_id)).one()
    return int(row.exp_month), int(row.exp_year)


def update_payment(conn: Connection, payment_id: int, now_ms: int, **changes: Any) -> None:
    """Sets ``changes`` (status, charges_made, next_charge_at_ms) on the payment."""
    statement = update(recurring_payments).where(recurring_payments.c.id == payment_id)
    conn.execute(statement.values(updated_at_ms=now_ms, **changes))


def count_outcome(conn: Connection, payment_id: int, *, approved: bool, now_ms: int, count: int = 1) -> None:
    """``count`` more charges approved, or ended without approval."""
    column = recurring_payments.c.charges_approved if approved else recurring_payments.c.charges_declined
    statement = update(recurring_payments).where(recurring_payments.c.id == payment_id)
    conn.execute(statement.values({column: column + count, "updated_at_ms": now_ms}))


def claim_try(
    conn: Connection, payment_id: int, number: int, try_number: int, due_at_ms: int, now_ms: int
) -> int | None:
    """The charge row of this try, claimed: None when it was claimed before (by another process, or
    before a crash whose transaction committed), and then it must not be made again."""
    values = {
        "recurring_payment_id": payment_id,
        "number": number,
        "try_number": try_number,
        "due_at_ms": due_at_ms,
        "state": ChargeState.OPEN.value,
        "created_at_ms": now_ms,
    }
    return _insert_ignoring(conn, recurring_charges, values, "recurring_payment_id", "number", "try_number")


def set_charge(conn: Connection, charge_id: int, **changes: Any) -> None:
    """Sets ``changes`` (order_id, state, retry_at_ms) on a charge."""
    conn.execute(update(recurring_charges).where(recurring_charges.c.id == charge_id).values(**changes))


_FINAL_SALE = and_(transactions.c.order_id == recurring_charges.c.order_id, transactions.c.tx_type == orders.c.tx_type)


def settled_open_charges(conn: Connection, final_stages: list[str], batch: int) -> list[Record]:
    """Up to ``batch`` open charges whose order's sale reached one of ``final_stages``, with that stage."""
    query = (
        select(recurring_charges, transactions.c.stage)
        .join(orders, orders.c.id == recurring_charges.c.order_id)
        .join(transactions, _FINAL_SALE)
        .where(recurring_charges.c.state == ChargeState.OPEN.value, transactions.c.stage.in_(final_stages))
        .order_by(recurring_charges.c.id)
        .limit(batch)
    )
    return list(conn.execute(query).mappings().all())


def lock_charge(conn: Connection, charge_id: int) -> Record:
    query = select(recurring_charges).where(recurring_charges.c.id == charge_id).with_for_update()
    return conn.execute(query).mappings().one()


def retries_due(conn: Connection, now_ms: int, batch: int) -> list[Record]:
    """Up to ``batch`` failed tries whose next try is due."""
    query = (
        select(recurring_charges)
        .where(recurring_charges.c.state == ChargeState.RETRY_DUE.value, recurring_charges.c.retry_at_ms <= now_ms)
        .order_by(recurring_charges.c.retry_at_ms, recurring_charges.c.id)
        .limit(batch)
    )
    return list(conn.execute(query).mappings().all())


def has_pending_tries(conn: Connection, payment_id: int) -> bool:
    """Whether a try of the payment is still open, or waits for the next."""
    pending = (ChargeState.OPEN.value, ChargeState.RETRY_DUE.value)
    query = select(func.count()).where(
        recurring_charges.c.recurring_payment_id == payment_id, recurring_charges.c.state.in_(pending)
    )
    return bool(conn.execute(query).scalar_one())


def drop_retries(conn: Connection, payment_id: int) -> int:
    """Failed tries waiting for the next give up (the payment was cancelled or its card expired); returns
    how many."""
    statement = update(recurring_charges).where(
        recurring_charges.c.recurring_payment_id == payment_id,
        recurring_charges.c.state == ChargeState.RETRY_DUE.value,
    )
    return int(conn.execute(statement.values(state=ChargeState.DECLINED.value, retry_at_ms=None)).rowcount)


def listing(conn: Connection, merchant_id: int | None, limit: int, before_id: int | None = None) -> list[Record]:
    """Recurring payments, newest first; with ``before_id``, only those older than it (a page's next)."""
    query = select(recurring_payments).order_by(recurring_payments.c.id.desc()).limit(limit)
    if merchant_id is not None:
        query = query.where(recurring_payments.c.merchant_id == merchant_id)
    if before_id is not None:
        query = query.where(recurring_payments.c.id < before_id)
    return list(conn.execute(query).mappings().all())


def payment(conn: Connection, payment_id: int) -> Record | None:
    return conn.execute(select(recurring_payments).where(recurring_payments.c.id == payment_id)).mappings().first()


def charges_of(conn: Connection, payment_id: int) -> list[Record]:
    """Every try of every charge of the payment, in the order made, with its order's client_orderid and
    the stage of its sale."""
    query = (
        select(recurring_charges, orders.c.client_orderid, transactions.c.stage)
        .outerjoin(orders, orders.c.id == recurring_charges.c.order_id)
        .outerjoin(transactions, _FINAL_SALE)
        .where(recurring_charges.c.recurring_payment_id == payment_id)
        .order_by(recurring_charges.c.id)
    )
    return list(conn.execute(query).mappings().all())


def card_of(conn: Connection, merchant_id: int, payment_id: int) -> Record | None:
    """The card a recurring payment of ``merchant_id`` charges (``id``, ``exp_month``, ``exp_year``,
    ``pan_ciphertext`` for a transfer that pays to it, and the payment's ``card_ref_id``)."""
    query = (
        select(
            cards.c.id, cards.c.exp_month, cards.c.exp_year, cards.c.pan_ciphertext, recurring_payments.c.card_ref_id
        )
        .select_from(recurring_payments.join(cards, cards.c.id == recurring_payments.c.card_id))
        .where(recurring_payments.c.id == payment_id, recurring_payments.c.merchant_id == merchant_id)
    )
    return conn.execute(query).mappings().first()


def card_shown(conn: Connection, payment_id: int) -> Record | None:
    """What may be shown of the card a payment charges: ``bin``, ``last_four``, ``brand``."""
    query = (
        select(cards.c.bin, cards.c.last_four, cards.c.brand)
        .select_from(recurring_payments.join(cards, cards.c.id == recurring_payments.c.card_id))
        .where(recurring_payments.c.id == payment_id)
    )
    return conn.execute(query).mappings().first()
