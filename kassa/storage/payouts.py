"""Where payouts and transfers go when not to the order's own card (``tables.payout_destinations``): a bank
account, e-wallet, phone, or a card-to-card transfer's receiving card; sealed, masked for display."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Select, func, insert, select, update

from kassa.storage.prepared import Record
from kassa.storage.tables import cards, merchants, orders, payout_destinations, transactions


@dataclass(frozen=True, slots=True)
class NewDestination:
    """Where a payout or transfer goes when not (only) to the order's card, as stored: its fields under the
    vault, its number masked."""

    kind: str
    details_ciphertext: bytes
    masked: str


def add_destination(conn: Connection, order_id: int, destination: NewDestination) -> None:
    conn.execute(insert(payout_destinations).values(order_id=order_id, **dataclasses.asdict(destination)))


def destination_of(conn: Connection, order_id: int) -> Record | None:
    """The order's destination (``kind``, ``details_ciphertext``, ``masked``, ``recipient_name``), if it
    pays to something other than a card."""
    query = select(payout_destinations).where(payout_destinations.c.order_id == order_id)
    return conn.execute(query).mappings().first()


def set_recipient_name(conn: Connection, order_id: int, masked_name: str) -> None:
    """The receiver's name a phone payout's check found, masked (``destinations.mask_name``)."""
    query = update(payout_destinations).where(payout_destinations.c.order_id == order_id)
    conn.execute(query.values(recipient_name=masked_name))


def _payouts() -> Select[Any]:
    """Orders with their merchant's ``login``, the ``stage`` and ``error_code`` of their latest transaction,
    their destination's ``kind``, ``masked`` and ``recipient_name`` when not a card, else the card's
    ``bin``, ``last_four`` and ``brand``."""
    latest = (
        select(func.max(transactions.c.id))
        .where(transactions.c.order_id == orders.c.id)
        .correlate(orders)
        .scalar_subquery()
    )
    return select(
        orders.c.id,
        orders.c.merchant_id,
        merchants.c.login,
        orders.c.client_orderid,
        orders.c.tx_type,
        orders.c.amount,
        orders.c.currency,
        orders.c.created_at_ms,
        transactions.c.stage,
        transactions.c.error_code,
        payout_destinations.c.kind,
        payout_destinations.c.masked,
        payout_destinations.c.recipient_name,
        cards.c.bin,
        cards.c.last_four,
        cards.c.brand,
    ).select_from(
        orders.join(merchants, merchants.c.id == orders.c.merchant_id)
        .join(transactions, transactions.c.id == latest)
        .outerjoin(payout_destinations, payout_destinations.c.order_id == orders.c.id)
        .outerjoin(cards, cards.c.id == orders.c.card_id)
    )


def listing(
    conn: Connection,
    tx_types: Collection[str],
    *,
    merchant_id: int | None = None,
    stages: Collection[str] | None = None,
    before_id: int | None = None,
    limit: int = 50,
) -> list[Record]:
    """Orders of ``tx_types``, newest first (``before_id``: older than it; ``stages``: whose latest
    transaction is at one of them), as ``_payouts`` reads them."""
    query = _payouts().where(orders.c.tx_type.in_(sorted(tx_types))).order_by(orders.c.id.desc()).limit(limit)
    if merchant_id is not None:
        query = query.where(orders.c.merchant_id == merchant_id)
    if stages is not None:
        query = query.where(transactions.c.stage.in_(sorted(stages)))
    if before_id is not None:
        query = query.where(orders.c.id < before_id)
    return list(conn.execute(query).mappings().all())


def payout(conn: Connection, order_id: int, tx_types: Collection[str]) -> Record | None:
    """The order, as ``_payouts`` reads it, when it is of one of ``tx_types``."""
    query = _payouts().where(orders.c.id == order_id, orders.c.tx_type.in_(sorted(tx_types)))
    return conn.execute(query).mappings().first()
