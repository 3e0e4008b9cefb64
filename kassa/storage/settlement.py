"""Queries of settlement and of authorization expiry."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Select, and_, bindparam, exists, func, select, update

from kassa.domain.lifecycle import FINAL_STAGES, Stage
from kassa.domain.transactions import SETTLING, FollowUp, allowing
from kassa.storage.tables import cards, merchants, orders, transactions

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


@dataclass(frozen=True, slots=True)
class Run:
    """One settlement run: every transaction it settled carries its time."""

    settled_at_ms: int
    orders: int
    transactions: int
    sums: dict[str, int]  # currency → minor units settled


def runs(conn: Connection, before_ms: int | None, limit: int) -> list[Run]:
    """Up to ``limit`` runs, newest first, before ``before_ms`` (keyset paging)."""
    query = (
        select(transactions.c.settled_at_ms, func.count(func.distinct(transactions.c.order_id)), func.count())
        .where(transactions.c.settled_at_ms.is_not(None))
        .group_by(transactions.c.settled_at_ms)
        .order_by(transactions.c.settled_at_ms.desc())
        .limit(limit)
    )
    if before_ms is not None:
        query = query.where(transactions.c.settled_at_ms < before_ms)
    counted = [(int(at), int(order_count), int(tx_count)) for at, order_count, tx_count in conn.execute(query)]
    if not counted:
        return []
    sums: dict[int, dict[str, int]] = defaultdict(dict)
    for at, currency, total in conn.execute(
        select(transactions.c.settled_at_ms, transactions.c.currency, func.sum(transactions.c.amount))
        .where(transactions.c.settled_at_ms.in_([at for at, _, _ in counted]))
        .group_by(transactions.c.settled_at_ms, transactions.c.currency)
        .order_by(transactions.c.currency)
    ):
        sums[int(at)][currency] = int(total)
    return [Run(at, order_count, tx_count, sums[at]) for at, order_count, tx_count in counted]


@dataclass(frozen=True, slots=True)
class Settled:
    """A transaction a run settled, with what identifies its order and card (BIN and last four at most)."""

    order_id: int
    client_orderid: str
    merchant: str
    endpoint_id: int
    tx_type: str
    amount: int
    currency: str
    settled_at_ms: int
    card_bin: str | None
    card_last_four: str | None
    card_brand: str | None


def run_rows(conn: Connection, settled_at_ms: int) -> list[Settled]:
    """The transactions the run at ``settled_at_ms`` settled, by transaction id."""
    query = (
        select(
            orders.c.id,
            orders.c.client_orderid,
            merchants.c.login,
            orders.c.endpoint_id,
            transactions.c.tx_type,
            transactions.c.amount,
            transactions.c.currency,
            transactions.c.settled_at_ms,
            cards.c.bin,
            cards.c.last_four,
            cards.c.brand,
        )
        .join(orders, orders.c.id == transactions.c.order_id)
        .join(merchants, merchants.c.id == orders.c.merchant_id)
        .outerjoin(cards, cards.c.id == orders.c.card_id)
        .where(transactions.c.settled_at_ms == settled_at_ms)
        .order_by(transactions.c.id)
    )
    return [Settled(*row) for row in conn.execute(query)]
