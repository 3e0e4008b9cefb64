"""Databases for tests: a fresh PostgreSQL database, dropped afterwards; raw SQL on a gateway's database."""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
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


@contextmanager
def pooled_postgres() -> Iterator[str]:
    """A database at the schema's head, like ``fresh_postgres(migrated=True)``, from this test process's pool:
    made from the template when the pool is empty, and afterwards given back to the pool with the template's
    rows (``_reset``) rather than dropped. Every DROP DATABASE makes PostgreSQL checkpoint (1-4 s of I/O for
    the whole server, measured beside other suites), and the suite used to drop one per test on PostgreSQL.
    A database whose schema the test changed (a table renamed to break the gateway, a downgrade) is dropped;
    the pool's databases are dropped when the test process ends."""
    name = _POOL.pop() if _POOL else _created_from_template()
    try:
        yield _url_of(name)
    finally:
        if _reset(name):
            _POOL.append(name)
        else:
            _drop(name)


_POOL: list[str] = []


def _created_from_template() -> str:
    global _TEMPLATE_CONTENTS
    name = f"kassa_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{postgres_template()}"')
    if _TEMPLATE_CONTENTS is None:  # read from a copy: a session on the template stops others copying it
        _TEMPLATE_CONTENTS = _contents(name)
    return name


@atexit.register
def _drop_pool() -> None:
    while _POOL:
        _drop(_POOL.pop())


def _drop(name: str) -> None:
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _url_of(name: str) -> str:
    return POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"


def _reset(name: str) -> bool:
    """Gives database ``name`` the template's rows and sequences again, in one transaction, after ending every
    other session on it (a test's leftover connections); False, touching nothing, if its schema is not the
    template's any more."""
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )
    template = _TEMPLATE_CONTENTS
    assert template is not None
    with psycopg.connect(_url_of(name)) as conn:
        if _schema_fingerprint(conn) != template.fingerprint:
            return False
        conn.execute("SET LOCAL session_replication_role = replica")  # no foreign key checks while emptying
        conn.execute("".join(f'DELETE FROM "{table}";' for table in template.tables).encode())
        for table, rows in template.rows.items():
            with conn.cursor().copy(f'COPY "{table}" FROM STDIN') as copy:
                copy.write(rows)
        conn.execute(template.sequences.encode())
    return True


@dataclass(frozen=True)
class _Contents:
    """What a database copied from the template holds: its schema's fingerprint, its tables, the rows of
    those that have any (in COPY's text format) and a statement that sets every sequence as it stands."""

    fingerprint: str
    tables: list[str]
    rows: dict[str, bytes]
    sequences: str


_TEMPLATE_CONTENTS: _Contents | None = None


def _contents(name: str) -> _Contents:
    with psycopg.connect(_url_of(name)) as conn:
        tables = [row[0] for row in conn.execute(_TABLES)]
        rows = {}
        for table in tables:
            with conn.cursor().copy(f'COPY "{table}" TO STDOUT') as copy:
                data = b"".join(bytes(chunk) for chunk in copy)
            if data:
                rows[table] = data
        settings = []
        for (sequence,) in conn.execute(_SEQUENCES).fetchall():
            last, called = conn.execute(f"SELECT last_value, is_called FROM {sequence}").fetchone() or (1, False)
            settings.append(f"setval('{sequence}', {last}, {str(called).lower()})")
        return _Contents(_schema_fingerprint(conn), tables, rows, f"SELECT {', '.join(settings) or 'NULL'}")


def _schema_fingerprint(conn: psycopg.Connection[Any]) -> str:
    found = conn.execute(_FINGERPRINT).fetchone()
    assert found is not None
    return str(found[0])


_PUBLIC = "'public'::regnamespace"
_TABLES = f"SELECT relname FROM pg_class WHERE relnamespace = {_PUBLIC} AND relkind IN ('r', 'p') ORDER BY relname"
_SEQUENCES = f"SELECT oid::regclass::text FROM pg_class WHERE relnamespace = {_PUBLIC} AND relkind = 'S'"
# Whatever a test can change of a database beside its rows: tables, columns, constraints, indexes, triggers,
# functions, types, sequences' settings, rules, policies, privileges, schemas, extensions, database settings.
_FINGERPRINT = f"""
SELECT md5(string_agg(item, E'\\n' ORDER BY item)) FROM (
  SELECT format('class %s %s %s %s', relname, relkind, relacl, reloptions) FROM pg_class WHERE relnamespace = {_PUBLIC}
  UNION ALL SELECT format('column %s.%s %s %s %s', c.relname, a.attname, format_type(a.atttypid, a.atttypmod),
      a.attnotnull, pg_get_expr(d.adbin, d.adrelid))
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE c.relnamespace = {_PUBLIC} AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL SELECT format('constraint %s %s', conname, pg_get_constraintdef(oid)) FROM pg_constraint
    WHERE connamespace = {_PUBLIC}
  UNION ALL SELECT format('index %s', pg_get_indexdef(indexrelid)) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
    WHERE c.relnamespace = {_PUBLIC}
  UNION ALL SELECT format('trigger %s %s %s', tgrelid::regclass, tgname, tgenabled) FROM pg_trigger
    WHERE NOT tgisinternal
  UNION ALL SELECT format('function %s %s', oid::regprocedure, md5(prosrc)) FROM pg_proc WHERE pronamespace = {_PUBLIC}
  UNION ALL SELECT format('type %s', typname) FROM pg_type WHERE typnamespace = {_PUBLIC}
  UNION ALL SELECT format('sequence %s %s %s %s', seqrelid::regclass, seqstart, seqincrement, seqmax) FROM pg_sequence
  UNION ALL SELECT format('rule %s %s', ev_class::regclass, rulename) FROM pg_rewrite r
    JOIN pg_class c ON c.oid = r.ev_class WHERE c.relnamespace = {_PUBLIC}
  UNION ALL SELECT format('policy %s %s', polrelid::regclass, polname) FROM pg_policy
  UNION ALL SELECT format('schema %s %s', nspname, nspacl) FROM pg_namespace
    WHERE nspname NOT LIKE 'pg\\_temp\\_%' AND nspname NOT LIKE 'pg\\_toast\\_temp\\_%'
  UNION ALL SELECT format('extension %s %s', extname, extversion) FROM pg_extension
  UNION ALL SELECT format('settings %s', setconfig) FROM pg_db_role_setting
    WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
) AS schema (item)
"""


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
