"""What a customer page shows or needs about the transaction behind a browser session, in one read."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, select

from kassa.storage import authentications, browser_sessions
from kassa.storage import orders as order_store
from kassa.storage.browser_sessions import SessionKind
from kassa.storage.prepared import Record
from kassa.storage.tables import endpoints, merchants


@dataclass(frozen=True, slots=True)
class BrowserContext:
    """Everything a customer page shows or needs about the transaction behind a browser session."""

    session: Record
    order: Record
    transaction: Record
    card: Record | None
    record: Record | None
    descriptor: str
    control_key_sealed: bytes  # the merchant's, for the final redirect's signature


def context_of_transaction(conn: Connection, transaction_id: int, session_row: Record) -> BrowserContext:
    tx, order, card = order_store.load_transaction(conn, transaction_id)
    descriptor, key = conn.execute(
        select(endpoints.c.descriptor, merchants.c.control_key_sealed)
        .join(merchants, merchants.c.id == endpoints.c.merchant_id)
        .where(endpoints.c.id == order["endpoint_id"])
    ).one()
    return BrowserContext(
        session_row, order, tx, card, authentications.of_transaction(conn, transaction_id), descriptor, bytes(key)
    )


def browser_context(conn: Connection, token: str, kind: SessionKind) -> BrowserContext | None:
    row = browser_sessions.session(conn, token)
    if row is None or row["kind"] != kind.value:
        return None
    return context_of_transaction(conn, row["transaction_id"], row)
