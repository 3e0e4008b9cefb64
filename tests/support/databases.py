"""Databases for tests: a fresh PostgreSQL database, dropped afterwards; raw SQL on a gateway's database."""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import sqlalchemy

from kassa.storage.database import sqlalchemy_url
from kassa.storage.migrate import upgrade
from kassa.vault.keys import Vault

SHOP_CONTROL_KEY = "shop-control-key"
# The vault of tests that write rows without a gateway (the gateways' own is KASSA_VAULT_KEY, the same key).
TEST_VAULT = Vault(b"k" * 32)
POSTGRES_ADMIN_URL = os.environ.get("KASSA_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


@contextmanager
def fresh_postgres(prefix: str = "kassa_test", *, migrated: bool = False) -> Iterator[str]:
    """Creates ``{prefix}_<random>``, yields its URL, drops it even with clients still connected. ``migrated``
    copies it from the template at the schema's head (``postgres_template``) instead of leaving it empty."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    template = f' TEMPLATE "{postgres_template()}"' if migrated else ""
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"{template}')
    try:
        yield _url_of(name)
    finally:
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _url_of(name: str) -> str:
    return POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"


_MIGRATIONS = Path(__file__).parents[2] / "kassa" / "storage" / "migrations"
_TEMPLATE_LOCK = 0x6B61_7373_6101  # PostgreSQL advisory lock: one process of the machine builds a template


@functools.cache
def schema_digest() -> str:
    """Names the schema the migrations make: a changed or added migration is another template."""
    digest = hashlib.sha256()
    for path in sorted(_MIGRATIONS.rglob("*.py")):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:12]


@functools.cache
def postgres_template() -> str:
    """A database at the schema's head that tests copy (CREATE DATABASE ... TEMPLATE, about 0.2 s) instead of
    migrating their own (about 3 s of DDL, each migration committed). Built once per machine and schema, by
    whichever test process comes first; kept for the next run, since checkouts of other schemas share the server."""
    name = f"kassa_template_{schema_digest()}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute("SELECT pg_advisory_lock(%s)", (_TEMPLATE_LOCK,))
        try:
            if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
                building = f"{name}_building"
                admin.execute(f'DROP DATABASE IF EXISTS "{building}" WITH (FORCE)')
                admin.execute(f'CREATE DATABASE "{building}"')
                upgrade(_url_of(building))
                admin.execute(f'ALTER DATABASE "{building}" RENAME TO "{name}"')
        finally:
            admin.execute("SELECT pg_advisory_unlock(%s)", (_TEMPLATE_LOCK,))
    return name


def migrated_sqlite(path: Path, template_dir: Path) -> str:
    """A SQLite database at ``path`` at the schema's head, copied from a template migrated once in
    ``template_dir``; returns its URL."""
    template = template_dir / f"kassa-{schema_digest()}.db"
    if not template.exists():
        building = template.with_suffix(".building")
        upgrade(f"sqlite:///{building}")
        building.rename(template)
    shutil.copyfile(template, path)
    path.chmod(0o600)  # as the gateway makes its own (kassa.storage.database.ensure_sqlite_file)
    return f"sqlite:///{path}"


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


# The settings of an ISO 8583 connection to a host that does not exist (``.invalid`` never resolves).
NOWHERE = {
    "host": "acquirer.invalid", "port": "8583", "acquiring_institution_id": "123456", "terminal_id": "TERM0001",
    "card_acceptor_id": "SHOP00000000001", "mcc": "5999",
}  # fmt: skip


def nowhere_connection(conn: Any, vault: Vault) -> Any:
    """An ISO 8583 connection to a host that does not exist, written in ``conn``'s transaction: what a live
    endpoint needs, for tests that send it nothing."""
    from kassa.domain.acquirers import read_link
    from kassa.storage import acquirers as acquirer_store

    return acquirer_store.create(conn, vault, f"nowhere-{uuid.uuid4().hex[:12]}", read_link(NOWHERE), None, 0)


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
