"""Browser sessions: a hosted form (single use) or the checkout page that drives 3-D Secure, each behind
an unguessable token, which is stored only as its digest and sealed (``vault/tokens.py``)."""

from __future__ import annotations

from enum import StrEnum

from sqlalchemy import Connection, insert, select, update

from kassa.storage.prepared import Record
from kassa.storage.tables import browser_sessions
from kassa.vault.tokens import SealedToken, digest


class SessionKind(StrEnum):
    FORM = "form"  # the hosted card form
    CHECKOUT = "checkout"  # the page that takes the browser through 3-D Secure to the final redirect


def open_session(
    conn: Connection,
    kind: SessionKind,
    order_id: int,
    transaction_id: int,
    now_ms: int,
    ttl_ms: int,
    token: SealedToken,
) -> None:
    """A new session behind ``token`` (``vault.tokens.new_token``: made before the unit of work, which
    runs no cryptography)."""
    conn.execute(
        insert(browser_sessions).values(
            token_digest=token.digest,
            token_sealed=token.sealed,
            kind=kind.value,
            order_id=order_id,
            transaction_id=transaction_id,
            expires_at_ms=now_ms + ttl_ms,
            created_at_ms=now_ms,
        )
    )


def session(conn: Connection, token: str) -> Record | None:
    """The session a page's URL names by its token."""
    found = browser_sessions.c.token_digest == digest(token)
    return conn.execute(select(browser_sessions).where(found)).mappings().first()


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


def use_session(conn: Connection, token_digest: str, now_ms: int) -> bool:
    """Marks a single-use session used; False when it was used already."""
    used = conn.execute(
        update(browser_sessions)
        .where(browser_sessions.c.token_digest == token_digest, browser_sessions.c.used_at_ms.is_(None))
        .values(used_at_ms=now_ms)
    ).rowcount
    return used == 1
