"""The migrations build exactly the schema kassa/storage/tables.py declares, on both backends, and carry
the rows they reshape."""

from __future__ import annotations

import hashlib

import pytest
import sqlalchemy
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from kassa.domain.risk import Per
from kassa.storage import risk
from kassa.storage.database import sqlalchemy_url
from kassa.storage.migrate import alembic_config, upgrade
from kassa.storage.tables import metadata
from tests.support.databases import run_sql

pytestmark = pytest.mark.empty_database  # these tests migrate from an empty database themselves


def test_migrated_schema_matches_the_declared_tables(database_url: str) -> None:
    upgrade(database_url)
    engine = sqlalchemy.create_engine(sqlalchemy_url(database_url))
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": True})
            differences = compare_metadata(context, metadata)
    finally:
        engine.dispose()
    assert differences == []


def test_the_upgrade_to_money_per_mode_parts_a_merchants_sandbox_and_live_money(database_url: str) -> None:
    """A merchant with a sandbox and a live endpoint, each with a settled order, and one balance that held
    both (schema 0015): after 0016 each order, its entries and a balance of their own are in its mode."""
    command.upgrade(alembic_config(database_url), "0015")
    merchant = "(SELECT id FROM merchants WHERE login = 'both')"
    statements = [
        "INSERT INTO merchants (login, classic, created_at_ms) VALUES ('both', false, 0)",
        *(
            "INSERT INTO endpoints (merchant_id, kind, currency, mode, classic, descriptor, multi_capture, enabled,"
            f" created_at_ms) VALUES ({merchant}, 'endpoint', 'USD', '{mode}', false, '', false, true, 0)"
            for mode in ("sandbox", "live")
        ),
        *(
            "INSERT INTO orders (merchant_id, endpoint_id, client_orderid, tx_type, amount, currency, email,"
            " order_desc, customer, request_fingerprint, created_at_ms) SELECT merchant_id, id, mode, 'sale',"
            f" {amount}, 'USD', '', '', '{{}}', 'f', 0 FROM endpoints WHERE mode = '{mode}'"
            for mode, amount in (("sandbox", 500000), ("live", 700))
        ),
        *(
            "INSERT INTO ledger_entries (merchant_id, currency, account, amount, order_id, posting, created_at_ms)"
            f" SELECT merchant_id, 'USD', '{account}', {sign} * amount, id, client_orderid, 0 FROM orders"
            for account, sign in (("external", -1), ("settled", 1))
        ),
        "INSERT INTO balances (merchant_id, currency, available, reserved, updated_at_ms)"
        f" VALUES ({merchant}, 'USD', 500700, 0, 0)",
    ]
    for statement in statements:
        run_sql(database_url, statement)
    upgrade(database_url)
    assert sorted(run_sql(database_url, "SELECT client_orderid, mode FROM orders")) == [
        ("live", "live"),
        ("sandbox", "sandbox"),
    ]
    assert sorted(run_sql(database_url, "SELECT DISTINCT posting, mode FROM ledger_entries")) == [
        ("live", "live"),
        ("sandbox", "sandbox"),
    ]
    assert sorted(run_sql(database_url, "SELECT mode, available, reserved FROM balances")) == [
        ("live", 700, 0),
        ("sandbox", 500000, 0),
    ]


def test_the_upgrade_to_acquirer_connections_routes_every_sandbox_endpoint_to_the_built_in_sandbox(
    database_url: str,
) -> None:
    """Sandbox endpoints were all served by the sandbox before connections were data (schema 0021): after
    0022 each lists it; a live endpoint and a group list nothing (a live one needs an ISO 8583 link)."""
    command.upgrade(alembic_config(database_url), "0021")
    statements = [
        "INSERT INTO merchants (login, classic, created_at_ms) VALUES ('shop', false, 0)",
        *(
            "INSERT INTO endpoints (merchant_id, kind, currency, mode, classic, descriptor, multi_capture, enabled,"
            f" created_at_ms, replay_window_seconds) SELECT id, '{kind}', 'USD', '{mode}', false, '{kind}-{mode}',"
            " false, true, 0, 0 FROM merchants"
            for kind, mode in (("endpoint", "sandbox"), ("endpoint", "live"), ("group", "sandbox"))
        ),
    ]
    for statement in statements:
        run_sql(database_url, statement)
    upgrade(database_url)
    assert run_sql(database_url, "SELECT name, kind, enabled FROM acquirer_connections") == [
        ("sandbox", "sandbox", True)
    ]
    assert run_sql(
        database_url,
        "SELECT e.descriptor, r.position, c.name FROM endpoint_connections r"
        " JOIN endpoints e ON e.id = r.endpoint_id JOIN acquirer_connections c ON c.id = r.connection_id",
    ) == [("endpoint-sandbox", 1, "sandbox")]


def test_the_upgrade_to_numbered_velocity_keys_carries_every_count_over_under_its_keys_number(
    database_url: str,
) -> None:
    """Velocity counts were keyed by a digest's 64 hex digits (schema 0032): after 0033 by its first 64
    bits, the number the gateway now counts the same card under, every bucket's count and amount kept."""
    command.upgrade(alembic_config(database_url), "0032")
    fingerprints = ("f" * 64, "0" * 64)
    hex_keys = [hashlib.sha256(f"card:{fingerprint}".encode()).hexdigest() for fingerprint in fingerprints]
    statements = [
        "INSERT INTO merchants (login, classic, created_at_ms) VALUES ('shop', false, 0)",
        "INSERT INTO risk_rules (kind, mode, merchant_id, entries, per, limit_value, window_ms, note, created_by,"
        " created_at_ms) SELECT 'count', 'enforce', id, '[]', 'card', 5, 3600000, '', 'cli:test', 0 FROM merchants",
        *(
            "INSERT INTO risk_velocity (rule_id, key, bucket_ms, count, amount)"
            f" SELECT id, '{key}', {bucket}, {count}, {count * 1000} FROM risk_rules"
            for key, bucket, count in ((hex_keys[0], 0, 2), (hex_keys[0], 300000, 1), (hex_keys[1], 0, 4))
        ),
    ]
    for statement in statements:
        run_sql(database_url, statement)
    upgrade(database_url)
    first, second = (risk.key_digest(Per.CARD, fingerprint) for fingerprint in fingerprints)
    assert sorted(run_sql(database_url, "SELECT key, bucket_ms, count, amount FROM risk_velocity")) == sorted(
        [(first, 0, 2, 2000), (first, 300000, 1, 1000), (second, 0, 4, 4000)]
    )
