"""Databases for tests: a fresh PostgreSQL database, dropped afterwards; raw SQL on a gateway's database."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import sqlalchemy

from kassa.storage.database import sqlalchemy_url
from kassa.vault.keys import Vault

SHOP_CONTROL_KEY = "shop-control-key"
# The vault of tests that write rows without a gateway (the gateways' own is KASSA_VAULT_KEY, the same key).
TEST_VAULT = Vault(b"k" * 32)
POSTGRES_ADMIN_URL = os.environ.get("KASSA_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


@contextmanager
def fresh_postgres(prefix: str = "kassa_test") -> Iterator[str]:
    """Creates ``{prefix}_<random>``, yields its URL, drops it even with clients still connected."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run_sql(database_url: str, statement: str) -> list[tuple[Any, ...]]:
    """Runs ``statement`` on a connection of its own, as an operator's SQL shell would, and commits;
    returns its rows (none for a change). For looking past the gateway, or breaking what it relies on."""
    engine = sqlalchemy.create_engine(sqlalchemy_url(database_url))
    try:
        with engine.begin() as conn:
            result = conn.exec_driver_sql(statement)
            return [tuple(row) for row in result] if result.returns_rows else []
    finally:
        engine.dispose()


def shop_endpoint(conn: Any) -> tuple[int, int]:
    """A merchant ``shop`` (control key ``SHOP_CONTROL_KEY``) with a USD sandbox endpoint, written in ``conn``'s
    transaction; returns the merchant's and the endpoint's ids."""
    from kassa.domain.merchants import Mode
    from kassa.storage import merchants as merchant_store

    merchant = merchant_store.create_merchant(conn, TEST_VAULT, "shop", SHOP_CONTROL_KEY, False, 0)
    spec = merchant_store.EndpointSpec(merchant.id, "USD", Mode.SANDBOX, False, "", None, None, False)
    return merchant.id, merchant_store.create_endpoint(conn, spec, 0)


def run_script(database_url: str, script: str) -> None:
    """Runs a file of SQL statements as ``psql -f`` does, each committed (no placeholders: a ``%`` is text)."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(script.encode())
