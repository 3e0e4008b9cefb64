"""A throw-away PostgreSQL database for one benchmark run."""

from __future__ import annotations

from contextlib import AbstractContextManager

import psycopg

from tests.support.databases import POSTGRES_ADMIN_URL as ADMIN_URL
from tests.support.databases import fresh_postgres


def fresh_database() -> AbstractContextManager[str]:
    """A throw-away ``kassa_bench_<random>`` database, the same way the tests make theirs."""
    return fresh_postgres("kassa_bench")


def server_version(admin_url: str = ADMIN_URL) -> str:
    with psycopg.connect(admin_url) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    return str(row[0]) if row else "?"


def backend_pids(database_url: str, admin_url: str = ADMIN_URL) -> list[int]:
    """The server processes of every connection to the database of ``database_url``."""
    name = database_url.rsplit("/", 1)[1]
    with psycopg.connect(admin_url) as conn:
        rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", (name,)).fetchall()
    return [int(row[0]) for row in rows]
