"""Settlement of captured money and expiry of authorizations never captured (CONTRACT §7)."""

from __future__ import annotations

import uuid

from sqlalchemy import Connection, select, update

from kassa.domain import ledger
from kassa.domain.lifecycle import Stage, TxType
from kassa.domain.orders import MONEY_IN, may_expire
from kassa.storage import ledger as ledger_store
from kassa.storage import orders as order_store
from kassa.storage.tables import orders, transactions


def settle(conn: Connection, now_ms: int, endpoint_id: int | None = None) -> int:
    """Settles every approved, unsettled sale and capture (of one endpoint, or all); returns how many
    orders were settled. Safe to run on several nodes at once: each order is locked and re-checked."""
    settled = 0
    for order_id in ledger_store.unsettled_money_in(conn, endpoint_id):
        order = order_store.lock_order(conn, order_id)
        marked = conn.execute(
            update(transactions)
            .where(
                transactions.c.order_id == order_id,
                transactions.c.stage == Stage.APPROVED.value,
                transactions.c.tx_type.in_([t.value for t in MONEY_IN]),
                transactions.c.settled_at_ms.is_(None),
            )
            .values(settled_at_ms=now_ms)
        ).rowcount
        if marked:
            posting = ledger.on_settlement(ledger_store.order_balances(conn, order_id))
            ledger_store.post(conn, order, None, posting, now_ms)
            settled += 1
    return settled


def expire_authorizations(conn: Connection, now_ms: int, ttl_ms: int) -> list[int]:
    """Cancels approved authorizations older than ``ttl_ms`` that were never captured; returns their orders."""
    candidates = conn.execute(
        select(orders.c.id)
        .join(transactions, transactions.c.order_id == orders.c.id)
        .where(
            orders.c.tx_type == TxType.PREAUTH.value,
            transactions.c.tx_type == TxType.PREAUTH.value,
            transactions.c.stage == Stage.APPROVED.value,
            transactions.c.updated_at_ms <= now_ms - ttl_ms,
        )
    ).scalars()
    expired = []
    for order_id in list(candidates):
        order = order_store.lock_order(conn, order_id)
        state = order_store.order_state(conn, order)
        if may_expire(state):
            order_store.add_transaction(
                conn, order, TxType.CANCEL, state.amount, str(uuid.uuid4()), now_ms, stage=Stage.APPROVED
            )
            expired.append(order_id)
    return expired
