"""Hosted Fields tickets and tokens (``tables.hosted_fields_tickets``): queries only."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, delete, insert, select, update

from kassa.storage.orders import NewCard
from kassa.storage.prepared import Record
from kassa.storage.tables import hosted_fields_tickets as tickets

_KEPT_AFTER_EXPIRY_MS = 24 * 3600 * 1000  # long enough to tell a late caller "expired" rather than "unknown"
_CARD_CLEARED = {"pan_ciphertext": None, "pan_fingerprint": None, "cvv_ciphertext": None}


@dataclass(frozen=True, slots=True)
class Tokenized:
    """A card as a ticket's tokenization stores it: the card sealed as an order's is, and its CVV sealed
    under the ticket's context (``vault.keys.hosted_cvv_context``)."""

    token_digest: str
    card: NewCard  # its holder_name is not kept: the sale's card_printed_name gives it
    cvv_ciphertext: bytes


def issue(conn: Connection, ticket_digest: str, merchant_id: int, endpoint_id: int, now_ms: int, ttl_ms: int) -> None:
    conn.execute(
        insert(tickets).values(
            ticket_digest=ticket_digest,
            merchant_id=merchant_id,
            endpoint_id=endpoint_id,
            created_at_ms=now_ms,
            expires_at_ms=now_ms + ttl_ms,
        )
    )


def ticket(conn: Connection, ticket_digest: str, *, lock: bool = False) -> Record | None:
    query = select(tickets).where(tickets.c.ticket_digest == ticket_digest)
    return conn.execute(query.with_for_update() if lock else query).mappings().first()


def by_token(conn: Connection, token_digest: str, *, lock: bool = False) -> Record | None:
    query = select(tickets).where(tickets.c.token_digest == token_digest)
    return conn.execute(query.with_for_update() if lock else query).mappings().first()


def store_card(conn: Connection, ticket_digest: str, tokenized: Tokenized, now_ms: int) -> None:
    card = tokenized.card
    conn.execute(
        update(tickets)
        .where(tickets.c.ticket_digest == ticket_digest)
        .values(
            spent_at_ms=now_ms,
            token_digest=tokenized.token_digest,
            pan_ciphertext=card.pan_ciphertext,
            pan_fingerprint=card.pan_fingerprint,
            bin=card.bin,
            last_four=card.last_four,
            brand=card.brand,
            exp_month=card.exp_month,
            exp_year=card.exp_year,
            cvv_ciphertext=tokenized.cvv_ciphertext,
        )
    )


def spend(conn: Connection, ticket_digest: str, now_ms: int) -> None:
    conn.execute(update(tickets).where(tickets.c.ticket_digest == ticket_digest).values(spent_at_ms=now_ms))


def use_token(conn: Connection, token_digest: str, order_id: int, now_ms: int) -> None:
    """The sale ``order_id`` took the card: the ticket keeps neither the number nor the CVV any more."""
    values = {"used_at_ms": now_ms, "order_id": order_id, **_CARD_CLEARED}
    conn.execute(update(tickets).where(tickets.c.token_digest == token_digest).values(**values))


def prune(conn: Connection, now_ms: int) -> int:
    """Clears the cards of expired tickets and forgets the tickets a day after; returns the rows deleted."""
    expired = tickets.c.expires_at_ms < now_ms
    conn.execute(update(tickets).where(expired, tickets.c.pan_ciphertext.is_not(None)).values(**_CARD_CLEARED))
    gone = tickets.c.expires_at_ms < now_ms - _KEPT_AFTER_EXPIRY_MS
    return int(conn.execute(delete(tickets).where(gone)).rowcount)
