"""Sealing what an older Kassa stored in clear: control keys and browser-session tokens.

Migration 0009 cannot do it (migrations have no vault key), so every process that opens the database
with its vault runs ``seal_plaintext`` first (``open_store``). It is idempotent and safe to run
from several processes at once: each row is cleared by an update that matches only while it still
holds the value it read.
"""

from __future__ import annotations

from sqlalchemy import Connection, select, update

from kassa.settings import Settings
from kassa.storage.database import Database, open_database
from kassa.storage.tables import browser_sessions, merchants
from kassa.vault import tokens
from kassa.vault.keys import Vault, control_key_context


def seal_plaintext(conn: Connection, vault: Vault) -> int:
    """Seals every control key and browser-session token still in clear; returns how many."""
    sealed = 0
    for merchant_id, key in conn.execute(
        select(merchants.c.id, merchants.c.control_key).where(merchants.c.control_key.is_not(None))
    ).all():
        sealed += conn.execute(
            update(merchants)
            .where(merchants.c.id == merchant_id, merchants.c.control_key == key)
            .values(control_key_sealed=vault.encrypt(key, control_key_context(merchant_id)), control_key=None)
        ).rowcount
    for digest, token in conn.execute(
        select(browser_sessions.c.token_digest, browser_sessions.c.token).where(browser_sessions.c.token.is_not(None))
    ).all():
        sealed += conn.execute(
            update(browser_sessions)
            .where(browser_sessions.c.token_digest == digest, browser_sessions.c.token == token)
            .values(token_sealed=tokens.seal(vault, token).sealed, token=None)
        ).rowcount
    return sealed


def open_store(settings: Settings, vault: Vault, threads: int) -> Database:
    """The database whose secrets ``vault`` seals. Whatever an older Kassa left in clear is sealed first
    (``storage/sealing.py``), so nothing after this reads a secret in clear."""
    db = open_database(
        settings.database_url,
        sqlite_synchronous=settings.sqlite_synchronous,
        sqlite_reads_in_place=settings.sqlite_reads_in_place,
        threads=threads,
    )
    try:
        db.write_sync(lambda conn: seal_plaintext(conn, vault))
    except BaseException:
        db.close()
        raise
    return db
