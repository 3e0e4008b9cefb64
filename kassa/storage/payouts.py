"""Payout destinations other than cards (``tables.payout_destinations``): sealed, masked for display."""

from __future__ import annotations

from sqlalchemy import Connection, select, update

from kassa.storage.prepared import Record
from kassa.storage.tables import payout_destinations


def destination_of(conn: Connection, order_id: int) -> Record | None:
    """The order's destination (``kind``, ``details_ciphertext``, ``masked``, ``recipient_name``), if it
    pays to something other than a card."""
    query = select(payout_destinations).where(payout_destinations.c.order_id == order_id)
    return conn.execute(query).mappings().first()


def set_recipient_name(conn: Connection, order_id: int, masked_name: str) -> None:
    """The receiver's name a phone payout's check found, masked (``destinations.mask_name``)."""
    query = update(payout_destinations).where(payout_destinations.c.order_id == order_id)
    conn.execute(query.values(recipient_name=masked_name))
