"""Aggregates for the operator console's overview: money taken in, by merchant, currency, day and outcome.

One grouped read bounded by ``orders.created_at_ms``: the range's orders found by ``ix_orders_created``,
their transactions by ``ix_transactions_order``, so the work grows with the orders of the range, not with
the whole history (on SQLite, by the plan forced below; PostgreSQL's planner takes that plan once the
transactions are too many to scan for less, and hashes a scan of them while they are few)."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import BigInteger, Column, ColumnElement, Connection, cast, func, select

from kassa.domain.lifecycle import FINAL_STAGES
from kassa.domain.transactions import TX_RULES, Direction
from kassa.storage.prepared import Record
from kassa.storage.tables import chargebacks, merchants, orders, transactions

DAY_MS = 86_400_000
# Transactions whose approval brings money in (a sale, a capture): what volume and approval rate are of.
MONEY_IN = sorted(t.value for t, row in TX_RULES.items() if row.direction is Direction.IN)
_DECIDED = sorted(stage.value for stage in FINAL_STAGES)


def _unindexed(conn: Connection, column: Column[str]) -> ColumnElement[str]:
    """On SQLite, ``column || ''``: no index on it is used (ix_transactions_expiry, by stage and type, would
    have SQLite read every decided sale ever made rather than the range's orders). PostgreSQL's planner
    weighs both by its statistics, which such an expression would blind."""
    return column.concat("") if conn.dialect.name == "sqlite" else column


def money_in_by_day(conn: Connection, since_ms: int, until_ms: int) -> list[Record]:
    """Decided money-in transactions of the orders opened in [since_ms, until_ms), grouped: ``merchant_id``,
    ``login``, ``currency``, ``day`` (days since the epoch, UTC, of the order), ``stage``, ``error_code``,
    ``count`` and ``amount`` (their sum, minor units)."""
    day = (orders.c.created_at_ms // DAY_MS).label("day")
    keys = (orders.c.merchant_id, merchants.c.login, transactions.c.currency, day, transactions.c.stage)
    query = (
        select(
            *keys,
            transactions.c.error_code,
            func.count().label("count"),
            cast(func.sum(transactions.c.amount), BigInteger).label("amount"),  # not NUMERIC on PostgreSQL,
        )
        .select_from(
            orders.join(transactions, transactions.c.order_id == orders.c.id).join(
                merchants, merchants.c.id == orders.c.merchant_id
            )
        )
        .where(
            orders.c.created_at_ms >= since_ms,
            orders.c.created_at_ms < until_ms,
            _unindexed(conn, transactions.c.tx_type).in_(MONEY_IN),
            _unindexed(conn, transactions.c.stage).in_(_DECIDED),
        )
        .group_by(*keys, transactions.c.error_code)
    )
    return list(conn.execute(query).mappings().all())


def chargebacks_by_merchant(conn: Connection, since_ms: int, until_ms: int) -> dict[int, int]:
    """How many chargebacks each merchant had entered in [since_ms, until_ms), by merchant id."""
    query = (
        select(chargebacks.c.merchant_id, func.count())
        .where(chargebacks.c.created_at_ms >= since_ms, chargebacks.c.created_at_ms < until_ms)
        .group_by(chargebacks.c.merchant_id)
    )
    return {int(merchant_id): int(count) for merchant_id, count in conn.execute(query)}


def logins(conn: Connection, merchant_ids: Iterable[int]) -> dict[int, str]:
    """The login of each merchant named (to label rows that carry a merchant's id)."""
    wanted = sorted(set(merchant_ids))
    if not wanted:
        return {}
    query = select(merchants.c.id, merchants.c.login).where(merchants.c.id.in_(wanted))
    return {row.id: row.login for row in conn.execute(query)}
