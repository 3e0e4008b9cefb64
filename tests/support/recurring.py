"""Recurring payments written straight to a database, as create-recurring-payment writes them, for tests of
the scheduler that do not go through the API."""

from __future__ import annotations

import datetime
from typing import Any

from kassa.core import opening, recurring
from kassa.domain.recurring import midnight_ms
from kassa.storage import merchants as merchant_store
from kassa.storage.database import Database, open_database
from kassa.storage.orders import NewCard
from kassa.storage.recurring import NewPayment
from tests.support.databases import TEST_VAULT
from tests.support.gateway import Merchant


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


def subscribe_due_now(merchant: Merchant, count: int = 1, **schedule: Any) -> list[int]:
    """``count`` daily payments of ``merchant`` (``sub0``, ``sub1``...) whose first charge is due now (today,
    00:00 UTC), written in one transaction, so that a scheduler finds them all due at once; their ids."""
    today = datetime.datetime.now(datetime.UTC).date()
    db = open_database(merchant.gateway.database_url, threads=1)
    try:
        merchant_id = db.read_sync(lambda conn: merchant_store.merchant_id(conn, merchant.login))
        fields: dict[str, Any] = {"period": "day", "start": today, **schedule}
        rows = [payment(merchant_id, merchant.endpoint_id, client_orderid=f"sub{n}", **fields) for n in range(count)]
        made = db.write_sync(lambda conn: [recurring.create(conn, new, card) for new, card in rows])
    finally:
        db.close()
    return [created.payment_id for created in made]
