"""What a customer page shows or needs about the transaction behind a browser session, in one read."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, select

from kassa.domain.transactions import Needs, TxType, rule
from kassa.storage import authentications, browser_sessions, payouts
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
    # A card-to-card transfer's receiving card, once named (by the request, or on the form); read for those
    # orders only.
    destination: Record | None = None


def context_of_transaction(conn: Connection, transaction_id: int, session_row: Record) -> BrowserContext:
    tx, order, card = order_store.load_transaction(conn, transaction_id)
    descriptor, key = conn.execute(
        select(endpoints.c.descriptor, merchants.c.control_key_sealed)
        .join(merchants, merchants.c.id == endpoints.c.merchant_id)
        .where(endpoints.c.id == order["endpoint_id"])
    ).one()
    to_card = rule(TxType(order["tx_type"])).needs is Needs.CARD_TO_CARD
    destination = payouts.destination_of(conn, order["id"]) if to_card else None
    record = authentications.of_transaction(conn, transaction_id)
    return BrowserContext(session_row, order, tx, card, record, descriptor, bytes(key), destination)


def browser_context(conn: Connection, token: str, kind: SessionKind) -> BrowserContext | None:
    row = browser_sessions.session(conn, token)
    if row is None or row["kind"] != kind.value:
        return None
    return context_of_transaction(conn, row["transaction_id"], row)
