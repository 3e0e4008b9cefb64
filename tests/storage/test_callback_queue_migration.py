"""Callbacks queued before the queue heads (migration 0018) are claimed after the upgrade as they would
have been before it: in order per order and URL, first attempts before retries, leased ones once their
lease runs out."""

from __future__ import annotations

import uuid

import pytest
from alembic import command

from kassa.storage import callbacks as callback_store
from kassa.storage.callbacks import DeliveryLimits
from kassa.storage.database import open_database
from kassa.storage.migrate import alembic_config, upgrade
from tests.support.databases import run_sql

NOW = 10_000
LIMITS = DeliveryLimits(per_destination=10, per_merchant=10)

pytestmark = pytest.mark.empty_database  # these tests migrate from an empty database themselves


def _before_0018(database_url: str) -> None:
    """An order with callbacks as Kassa before 0018 left them: two to one URL (the second waiting), a retry
    due, one leased until ``NOW + 1``, one delivered."""
    command.upgrade(alembic_config(database_url), "0015")
    merchant = "(SELECT id FROM merchants WHERE login = 'old')"
    endpoint = f"(SELECT id FROM endpoints WHERE merchant_id = {merchant})"
    order = "(SELECT id FROM orders WHERE client_orderid = 'old-1')"
    statements = [
        # Claims read the sealed control key with each callback; these are never sent.
        f"INSERT INTO merchants (login, classic, created_at_ms, control_key_sealed) VALUES ('old', false, 0,"
        f" CAST('sealed' AS {'BLOB' if database_url.startswith('sqlite') else 'BYTEA'}))",
        "INSERT INTO endpoints (merchant_id, kind, currency, mode, classic, descriptor, multi_capture, enabled,"
        f" created_at_ms) VALUES ({merchant}, 'endpoint', 'USD', 'sandbox', false, '', false, true, 0)",
        "INSERT INTO orders (merchant_id, endpoint_id, client_orderid, tx_type, amount, currency, email,"
        " order_desc, customer, request_fingerprint, created_at_ms)"
        f" VALUES ({merchant}, {endpoint}, 'old-1', 'sale', 1000, 'USD', '', '', '{{}}', 'f', 0)",
        "INSERT INTO transactions (order_id, serial_number, tx_type, stage, amount, currency, created_at_ms,"
        f" updated_at_ms) VALUES ({order}, '{uuid.uuid4()}', 'sale', 'approved', 1000, 'USD', 0, 0)",
    ]
    callbacks = [  # url, state, attempts, due, lease owner and until
        ("http://a.example/cb", "pending", 0, 100, "NULL, NULL"),
        ("http://a.example/cb", "pending", 0, 50, "NULL, NULL"),
        ("http://b.example/cb", "pending", 2, 10, "NULL, NULL"),
        ("http://c.example/cb", "pending", 0, 100, f"'callbacks-old', {NOW + 1}"),
        ("http://d.example/cb", "delivered", 1, 0, "NULL, NULL"),
    ]
    for url, state, attempts, due, lease in callbacks:
        statements.append(
            "INSERT INTO callbacks (order_id, transaction_id, kind, url, fields, state, attempts,"
            " next_attempt_at_ms, created_at_ms, destination, merchant_id, lease_owner, lease_until_ms)"
            f" VALUES ({order}, (SELECT id FROM transactions WHERE order_id = {order}), 'notify', '{url}', '{{}}',"
            f" '{state}', {attempts}, {due}, 0, '{url.split('/')[2]}:80', {merchant}, {lease})"
        )
    for statement in statements:
        run_sql(database_url, statement)


def test_callbacks_queued_before_the_upgrade_are_claimed_in_order_after_it(database_url: str) -> None:
    _before_0018(database_url)
    upgrade(database_url)
    db = open_database(database_url)
    try:

        def claim(now: int, room: int = 10) -> list[tuple[str, int]]:
            claimed = db.write_sync(lambda conn: callback_store.claim(conn, "callbacks-new", now, 1000, room, LIMITS))
            return [(due.url, due.attempts) for due in claimed]

        assert claim(NOW, room=1) == [("http://a.example/cb", 0)]  # a first attempt, before the older retry
        assert claim(NOW) == [("http://b.example/cb", 2)]  # the second to a.example waits for the first
        assert claim(NOW + 2) == [("http://c.example/cb", 0)]  # its lease ran out
    finally:
        db.close()
