"""Settlement of captured money, and expiry of authorizations never captured (CONTRACT §7).

Both are safe to run on several nodes at once: each order is locked and re-checked before it changes.
"""

from __future__ import annotations

import uuid

from sqlalchemy import Connection

from kassa.core import outcomes
from kassa.domain import ledger
from kassa.domain.lifecycle import Stage
from kassa.domain.orders import may_expire
from kassa.domain.transactions import TxType
from kassa.processors.interface import Outcome
from kassa.storage import ledger as ledger_store
from kassa.storage import orders as order_store
from kassa.storage import settlement as settlement_store

EXPIRY_BATCH = 100


def settle(conn: Connection, now_ms: int, endpoint_id: int | None = None) -> int:
    """Settles every approved, unsettled transaction that brings money in (of one endpoint, or all);
    returns how many orders were settled."""
    settled = 0
    for order_id in ledger_store.unsettled_money_in(conn, endpoint_id):
        order = order_store.lock_order(conn, order_id)
        if settlement_store.mark_settled(conn, order_id, now_ms):
            posting = ledger.on_settlement(ledger_store.order_balances(conn, order_id))
            ledger_store.post(conn, order, None, posting, now_ms)
            settled += 1
    return settled


def expire_authorizations(conn: Connection, now_ms: int, ttl_ms: int, after_tx_id: int = 0) -> tuple[list[int], int]:
    """Cancels up to ``EXPIRY_BATCH`` open authorizations approved before ``now_ms - ttl_ms`` (those whose
    transaction id is above ``after_tx_id``): returns the orders expired, and the id to go on after (0 when
    no more are due)."""
    candidates = settlement_store.open_authorizations(conn, now_ms - ttl_ms, after_tx_id, EXPIRY_BATCH)
    expired = []
    for _, order_id in candidates:
        order = order_store.lock_order(conn, order_id)
        state = order_store.order_state(conn, order)
        if may_expire(state):  # re-checked under the lock: a capture may have come in meanwhile
            # The gateway itself lets the hold go: no processing, the cancel is approved as it is written.
            serial = str(uuid.uuid4())
            cancel = order_store.insert_transaction(
                conn, order_id, TxType.CANCEL, state.amount, order["currency"], serial, now_ms
            )
            outcomes.record(conn, cancel, Outcome(Stage.APPROVED), now_ms)
            expired.append(order_id)
    resume = candidates[-1][0] if len(candidates) == EXPIRY_BATCH else 0
    return expired, resume
