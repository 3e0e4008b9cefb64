"""Queries of settlement and of authorization expiry."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Select, and_, bindparam, exists, select, update

from kassa.domain.lifecycle import FINAL_STAGES, Stage
from kassa.domain.transactions import SETTLING, FollowUp, allowing
from kassa.storage.tables import transactions

_FAILED = tuple(stage.value for stage in FINAL_STAGES if stage is not Stage.APPROVED)


def mark_settled(conn: Connection, order_id: int, now_ms: int) -> int:
    """Marks the order's approved, unsettled money-in transactions settled; returns how many."""
    return int(
        conn.execute(
            update(transactions)
            .where(
                transactions.c.order_id == order_id,
                transactions.c.stage == Stage.APPROVED.value,
                transactions.c.tx_type.in_([t.value for t in SETTLING]),
                transactions.c.settled_at_ms.is_(None),
            )
            .values(settled_at_ms=now_ms)
        ).rowcount
    )


def _open_authorizations() -> Select[Any]:
    """Approved authorizations (the first transaction of an order that may expire) approved at or before
    ``before_ms``, with nothing after them but failed attempts: the orders still holding money. Read in
    batches by transaction id along ``ix_transactions_expiry``."""
    later = transactions.alias("later")
    taken_on = exists().where(
        and_(
            later.c.order_id == transactions.c.order_id,
            later.c.id > transactions.c.id,
            later.c.stage.not_in(_FAILED),
        )
    )
    query = (
        select(transactions.c.id, transactions.c.order_id)
        .where(
            transactions.c.tx_type.in_([t.value for t in allowing(FollowUp.EXPIRY)]),
            transactions.c.stage == Stage.APPROVED.value,
            transactions.c.updated_at_ms <= bindparam("before_ms"),
            transactions.c.id > bindparam("after_id"),
            ~taken_on,
        )
        .order_by(transactions.c.id)
        .limit(bindparam("batch"))
    )
    return query


_OPEN_AUTHORIZATIONS = _open_authorizations()


def open_authorizations(conn: Connection, before_ms: int, after_tx_id: int, batch: int) -> list[tuple[int, int]]:
    """(transaction id, order id) of up to ``batch`` open authorizations, by transaction id."""
    rows = conn.execute(_OPEN_AUTHORIZATIONS, {"before_ms": before_ms, "after_id": after_tx_id, "batch": batch})
    return [(int(row.id), int(row.order_id)) for row in rows]
