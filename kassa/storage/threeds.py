"""Rows of 3-D Secure authentications and of browser sessions (hosted forms, checkout pages)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from sqlalchemy import Connection, insert, select, update

from kassa.storage.prepared import Record
from kassa.storage.tables import browser_sessions, endpoints, merchants, three_ds


def create(conn: Connection, transaction_id: int, values: dict[str, object], now_ms: int) -> None:
    conn.execute(
        insert(three_ds).values(transaction_id=transaction_id, created_at_ms=now_ms, updated_at_ms=now_ms, **values)
    )


def of_transaction(conn: Connection, transaction_id: int, *, lock: bool = False) -> Record | None:
    query = select(three_ds).where(three_ds.c.transaction_id == transaction_id)
    return conn.execute(query.with_for_update() if lock else query).mappings().first()


def by_acs_trans_id(conn: Connection, acs_trans_id: str) -> Record | None:
    return conn.execute(select(three_ds).where(three_ds.c.acs_trans_id == acs_trans_id)).mappings().first()


def by_server_trans_id(conn: Connection, server_trans_id: str) -> Record | None:
    return conn.execute(select(three_ds).where(three_ds.c.server_trans_id == server_trans_id)).mappings().first()


def change(conn: Connection, transaction_id: int, now_ms: int, **values: object) -> None:
    conn.execute(
        update(three_ds).where(three_ds.c.transaction_id == transaction_id).values(updated_at_ms=now_ms, **values)
    )


def open_session(conn: Connection, kind: str, order_id: int, transaction_id: int, now_ms: int, ttl_ms: int) -> str:
    """A new unguessable browser-session token (256 bits)."""
    token = secrets.token_urlsafe(32)
    conn.execute(
        insert(browser_sessions).values(
            token=token,
            kind=kind,
            order_id=order_id,
            transaction_id=transaction_id,
            expires_at_ms=now_ms + ttl_ms,
            created_at_ms=now_ms,
        )
    )
    return token


def session(conn: Connection, token: str) -> Record | None:
    return conn.execute(select(browser_sessions).where(browser_sessions.c.token == token)).mappings().first()


def session_of(conn: Connection, transaction_id: int, kind: str) -> Record | None:
    return (
        conn.execute(
            select(browser_sessions).where(
                browser_sessions.c.transaction_id == transaction_id, browser_sessions.c.kind == kind
            )
        )
        .mappings()
        .first()
    )


def use_session(conn: Connection, token: str, now_ms: int) -> bool:
    """Marks a single-use session used; False when it was used already."""
    used = conn.execute(
        update(browser_sessions)
        .where(browser_sessions.c.token == token, browser_sessions.c.used_at_ms.is_(None))
        .values(used_at_ms=now_ms)
    ).rowcount
    return used == 1


@dataclass(frozen=True, slots=True)
class BrowserContext:
    """Everything a customer page shows or needs about the transaction behind a browser session."""

    session: Record
    order: Record
    transaction: Record
    card: Record | None
    record: Record | None
    descriptor: str
    control_key: str


def context_of_transaction(conn: Connection, transaction_id: int, session_row: Record) -> BrowserContext:
    from kassa.storage import orders as order_store  # imported here: orders opens browser sessions too

    tx, order, card = order_store.load_transaction(conn, transaction_id)
    descriptor, key = conn.execute(
        select(endpoints.c.descriptor, merchants.c.control_key)
        .join(merchants, merchants.c.id == endpoints.c.merchant_id)
        .where(endpoints.c.id == order["endpoint_id"])
    ).one()
    return BrowserContext(session_row, order, tx, card, of_transaction(conn, transaction_id), descriptor, key)


def browser_context(conn: Connection, token: str, kind: str) -> BrowserContext | None:
    row = session(conn, token)
    if row is None or row["kind"] != kind:
        return None
    return context_of_transaction(conn, row["transaction_id"], row)
