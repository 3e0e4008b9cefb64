"""Browser sessions: a hosted form (single use) or the checkout page that drives 3-D Secure, each behind
an unguessable token."""

from __future__ import annotations

import secrets
from enum import StrEnum

from sqlalchemy import Connection, insert, select, update

from kassa.storage.prepared import Record
from kassa.storage.tables import browser_sessions


class SessionKind(StrEnum):
    FORM = "form"  # the hosted card form
    CHECKOUT = "checkout"  # the page that takes the browser through 3-D Secure to the final redirect


def open_session(
    conn: Connection, kind: SessionKind, order_id: int, transaction_id: int, now_ms: int, ttl_ms: int
) -> str:
    """A new unguessable browser-session token (256 bits)."""
    token = secrets.token_urlsafe(32)
    conn.execute(
        insert(browser_sessions).values(
            token=token,
            kind=kind.value,
            order_id=order_id,
            transaction_id=transaction_id,
            expires_at_ms=now_ms + ttl_ms,
            created_at_ms=now_ms,
        )
    )
    return token


def session(conn: Connection, token: str) -> Record | None:
    return conn.execute(select(browser_sessions).where(browser_sessions.c.token == token)).mappings().first()


def session_of(conn: Connection, transaction_id: int, kind: SessionKind) -> Record | None:
    return (
        conn.execute(
            select(browser_sessions).where(
                browser_sessions.c.transaction_id == transaction_id, browser_sessions.c.kind == kind.value
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
