"""Throw-away databases for tests: a fresh PostgreSQL database, dropped afterwards."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

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
