"""A throw-away PostgreSQL database for one benchmark run."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


@contextmanager
def fresh_database(admin_url: str = ADMIN_URL) -> Iterator[str]:
    """Create ``kassa_bench_<random>``, yield its URL, drop it (even with clients still connected)."""
    name = f"kassa_bench_{secrets.token_hex(6)}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


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
