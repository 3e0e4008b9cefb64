"""Queries on disputes (the ``chargebacks`` table) and on the orders their reports name. What a chargeback
does, and when, is decided in ``kassa.core.chargebacks``."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, insert, select, update

from kassa.domain.chargebacks import DisputeState
from kassa.domain.transactions import TX_RULES, Direction
from kassa.storage.prepared import Record
from kassa.storage.tables import chargebacks, merchants, orders, transactions

# The transactions that took money from a card: those an acquirer's reference in a chargeback report names.
_MONEY_IN = [t.value for t, row in TX_RULES.items() if row.direction is Direction.IN]


def orders_of_rrn(conn: Connection, processor_rrn: str) -> list[int]:
    """The orders whose sale or capture the acquirer knows by ``processor_rrn`` (more than one: ambiguous)."""
    query = (
        select(transactions.c.order_id)
        .where(transactions.c.processor_rrn == processor_rrn, transactions.c.tx_type.in_(_MONEY_IN))
        .distinct()
        .order_by(transactions.c.order_id)
    )
    return list(conn.execute(query).scalars())


def order_exists(conn: Connection, order_id: int) -> bool:
    return conn.execute(select(orders.c.id).where(orders.c.id == order_id)).first() is not None


def order(conn: Connection, order_id: int) -> Record:
    """The order a dispute is on (whose merchant, currency and mode a credit back goes to)."""
    return conn.execute(select(orders).where(orders.c.id == order_id)).mappings().one()


def money_in_rrn(conn: Connection, order_id: int) -> str | None:
    """The acquirer's reference of the order's first approved sale or capture."""
    query = (
        select(transactions.c.processor_rrn)
        .where(
            transactions.c.order_id == order_id,
            transactions.c.tx_type.in_(_MONEY_IN),
            transactions.c.processor_rrn.is_not(None),
        )
        .order_by(transactions.c.id)
        .limit(1)
    )
    found: str | None = conn.execute(query).scalar()
    return found


@dataclass(frozen=True, slots=True)
class NewDispute:
    order: Record
    transaction_id: int
    amount: int
    reason_code: str
    disputed_on: str
    dedup_key: str
    opened_by: str


def insert_dispute(conn: Connection, new: NewDispute, now_ms: int) -> int:
    values = dict(
        order_id=new.order["id"],
        transaction_id=new.transaction_id,
        merchant_id=new.order["merchant_id"],
        amount=new.amount,
        currency=new.order["currency"],
        reason_code=new.reason_code,
        disputed_on=new.disputed_on,
        dedup_key=new.dedup_key,
        state=DisputeState.OPEN.value,
        opened_by=new.opened_by,
        created_at_ms=now_ms,
    )
    return int(conn.execute(insert(chargebacks).values(**values).returning(chargebacks.c.id)).scalar_one())


def by_key(conn: Connection, dedup_key: str) -> Record | None:
    return conn.execute(select(chargebacks).where(chargebacks.c.dedup_key == dedup_key)).mappings().first()


def lock_dispute(conn: Connection, dispute_id: int) -> Record | None:
    """The dispute, locked until the database transaction ends: closing it twice at once closes it once."""
    query = select(chargebacks).where(chargebacks.c.id == dispute_id).with_for_update()
    return conn.execute(query).mappings().first()


def close(
    conn: Connection, dispute_id: int, state: DisputeState, closed_by: str, adjustment_id: int | None, now_ms: int
) -> bool:
    """Whether the dispute was still open, and is now closed."""
    changed = conn.execute(
        update(chargebacks)
        .where(chargebacks.c.id == dispute_id, chargebacks.c.state == DisputeState.OPEN.value)
        .values(state=state.value, closed_by=closed_by, closed_at_ms=now_ms, adjustment_id=adjustment_id)
    )
    return bool(changed.rowcount == 1)


def disputes(conn: Connection, *, state: DisputeState | None, merchant_id: int | None, limit: int) -> list[Record]:
    """Disputes oldest first (by the day reported), with their merchant's login."""
    query = (
        select(chargebacks, merchants.c.login)
        .join(merchants, merchants.c.id == chargebacks.c.merchant_id)
        .order_by(chargebacks.c.disputed_on, chargebacks.c.id)
        .limit(limit)
    )
    if state is not None:
        query = query.where(chargebacks.c.state == state.value)
    if merchant_id is not None:
        query = query.where(chargebacks.c.merchant_id == merchant_id)
    return list(conn.execute(query).mappings())


def dispute(conn: Connection, dispute_id: int) -> Record | None:
    return conn.execute(select(chargebacks).where(chargebacks.c.id == dispute_id)).mappings().first()
