"""Card references (CONTRACT §13): a card stored from an approved order, charged again by reference."""

from __future__ import annotations

from sqlalchemy import Connection, insert, select

from kassa.storage.prepared import Record
from kassa.storage.tables import card_refs, cards

# What get-card-info shows and a rebill charges: never the ciphertext.
_CARD_COLUMNS = [cards.c[n] for n in ("id", "bin", "last_four", "brand", "exp_month", "exp_year", "holder_name")]


def reference(conn: Connection, order: Record, now_ms: int) -> int:
    """The reference of the card ``order`` paid with: made on the first call, the same one after. The
    caller holds the order's row lock, so two concurrent calls cannot both make one."""
    existing = conn.execute(select(card_refs.c.id).where(card_refs.c.order_id == order["id"])).scalar()
    if existing is not None:
        return int(existing)
    made = conn.execute(
        insert(card_refs)
        .values(merchant_id=order["merchant_id"], card_id=order["card_id"], order_id=order["id"], created_at_ms=now_ms)
        .returning(card_refs.c.id)
    )
    return int(made.scalar_one())


def card_of(conn: Connection, merchant_id: int, ref_id: int) -> Record | None:
    """The card behind ``ref_id``, when the reference is ``merchant_id``'s: a reference is no one else's."""
    query = (
        select(*_CARD_COLUMNS)
        .select_from(card_refs.join(cards, cards.c.id == card_refs.c.card_id))
        .where(card_refs.c.id == ref_id, card_refs.c.merchant_id == merchant_id)
    )
    return conn.execute(query).mappings().first()


def sealed_number(conn: Connection, card_id: int) -> bytes:
    """The encrypted number of a stored card, for a transfer that pays to it (the number goes on to the
    acquirer as the receiving card's)."""
    return bytes(conn.execute(select(cards.c.pan_ciphertext).where(cards.c.id == card_id)).scalar_one())
