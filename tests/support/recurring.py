"""Recurring payments written straight to a database, as create-recurring-payment writes them, for tests of
the scheduler that do not go through the API."""

from __future__ import annotations

import datetime
from typing import Any

from kassa.core import opening, recurring
from kassa.domain.recurring import midnight_ms
from kassa.storage.database import Database
from kassa.storage.orders import NewCard
from kassa.storage.recurring import NewPayment
from tests.support.databases import TEST_VAULT


def subscribe(db: Database, merchant_id: int, endpoint_id: int, **fields: Any) -> int:
    """A payment of 9.90 USD (``payment``'s fields), written; returns its id."""
    new, card = payment(merchant_id, endpoint_id, **fields)
    return db.write_sync(lambda conn: recurring.create(conn, new, card)).payment_id


def payment(
    merchant_id: int,
    endpoint_id: int,
    *,
    client_orderid: str = "sub",
    period: str = "month",
    start: datetime.date,
    pan: str = "4111111111111111",
    expires: tuple[int, int] = (12, 2030),
    **schedule: Any,
) -> tuple[NewPayment, NewCard]:
    """A payment of 9.90 USD on the card ``pan``, its first charge due at ``start``, and the card."""
    card = opening.new_card(TEST_VAULT, merchant_id, pan, *expires, "Jane Doe")
    new = NewPayment(
        merchant_id, endpoint_id, midnight_ms(start), client_orderid=client_orderid, amount=990, currency="USD",
        server_callback_url="http://127.0.0.1:9/callback", request_fingerprint="f", period=period, interval=1,
        start_date=start.isoformat(), next_charge_at_ms=midnight_ms(start), **schedule,
    )  # fmt: skip
    return new, card
