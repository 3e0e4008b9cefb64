"""Operators of the console and their sessions."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, delete, insert, select, update

from kassa.domain.operators import Role
from kassa.storage.prepared import Record
from kassa.storage.tables import operator_sessions, operators
from kassa.vault.keys import Vault


class NoOperator(LookupError):
    pass


def totp_context(operator_id: int) -> str:
    return f"totp/operator/{operator_id}"


@dataclass(frozen=True, slots=True)
class Operator:
    id: int
    email: str
    role: Role
    has_totp: bool
    disabled: bool
    locked_until_ms: int | None
    created_at_ms: int

    def locked(self, now_ms: int) -> bool:
        return self.locked_until_ms is not None and self.locked_until_ms > now_ms


def _operator(row: Record) -> Operator:
    return Operator(
        row["id"],
        row["email"],
        Role(row["role"]),
        row["totp_sealed"] is not None,
        row["disabled_at_ms"] is not None,
        row["locked_until_ms"],
        row["created_at_ms"],
    )


def create(
    conn: Connection, vault: Vault, email: str, role: Role, password_hash: str, totp_secret: str | None, now_ms: int
) -> Operator:
    values = dict(email=email.lower(), role=role.value, password_hash=password_hash, failed_signins=0)
    inserted = conn.execute(insert(operators).values(created_at_ms=now_ms, **values))
    operator_id = int(inserted.inserted_primary_key[0])  # type: ignore[index]
    if totp_secret is not None:
        set_totp(conn, vault, operator_id, totp_secret)
    return by_id(conn, operator_id)


def set_totp(conn: Connection, vault: Vault, operator_id: int, secret: str) -> None:
    sealed = vault.encrypt(secret, totp_context(operator_id))
    conn.execute(update(operators).where(operators.c.id == operator_id).values(totp_sealed=sealed, totp_last_step=None))


def by_id(conn: Connection, operator_id: int) -> Operator:
    row = conn.execute(select(operators).where(operators.c.id == operator_id)).mappings().first()
    if row is None:
        raise NoOperator(f"no operator {operator_id}")
    return _operator(row)


def by_email(conn: Connection, email: str) -> Operator:
    return _operator(_row_by_email(conn, email))


def _row_by_email(conn: Connection, email: str) -> Record:
    row = conn.execute(select(operators).where(operators.c.email == email.strip().lower())).mappings().first()
    if row is None:
        raise NoOperator(f"no operator {email}")
    return row


@dataclass(frozen=True, slots=True)
class Credentials:
    """What sign-in checks, read with the operator row locked."""

    operator: Operator
    password_hash: str
    totp_secret: str | None
    totp_last_step: int | None
    failed_signins: int


def credentials_of(conn: Connection, vault: Vault, email: str) -> Credentials | None:
    try:
        row = _row_by_email(conn, email)
    except NoOperator:
        return None
    sealed = row["totp_sealed"]
    secret = None if sealed is None else vault.decrypt(sealed, totp_context(row["id"]))
    return Credentials(_operator(row), row["password_hash"], secret, row["totp_last_step"], row["failed_signins"])


def signed_in(conn: Connection, operator_id: int, totp_step: int | None) -> None:
    changes: dict[str, object] = {"failed_signins": 0, "locked_until_ms": None}
    if totp_step is not None:
        changes["totp_last_step"] = totp_step
    conn.execute(update(operators).where(operators.c.id == operator_id).values(**changes))


def failed_signin(conn: Connection, operator_id: int, limit: int, lock_ms: int, now_ms: int) -> bool:
    """Counts a failed sign-in; at ``limit`` in a row the operator is locked out for ``lock_ms`` (and the
    count starts again). Whether this failure locked the account."""
    count = conn.execute(
        update(operators)
        .where(operators.c.id == operator_id)
        .values(failed_signins=operators.c.failed_signins + 1)
        .returning(operators.c.failed_signins)
    ).scalar_one()
    if count < limit:
        return False
    locked = dict(failed_signins=0, locked_until_ms=now_ms + lock_ms)
    conn.execute(update(operators).where(operators.c.id == operator_id).values(**locked))
    return True


def listing(conn: Connection) -> list[Operator]:
    return [_operator(row) for row in conn.execute(select(operators).order_by(operators.c.id)).mappings()]


def disable(conn: Connection, operator_id: int, now_ms: int) -> None:
    conn.execute(update(operators).where(operators.c.id == operator_id).values(disabled_at_ms=now_ms))
    end_sessions(conn, operator_id)


def reset_password(conn: Connection, operator_id: int, password_hash: str) -> None:
    """A new password; the lockout and every session end with the old one."""
    changes = dict(password_hash=password_hash, failed_signins=0, locked_until_ms=None, disabled_at_ms=None)
    conn.execute(update(operators).where(operators.c.id == operator_id).values(**changes))
    end_sessions(conn, operator_id)


# --- sessions ------------------------------------------------------------------------------------------


def open_session(conn: Connection, token_hash: str, operator_id: int, now_ms: int) -> None:
    values = dict(token_hash=token_hash, operator_id=operator_id, created_at_ms=now_ms, last_seen_at_ms=now_ms)
    conn.execute(insert(operator_sessions).values(**values))


@dataclass(frozen=True, slots=True)
class Session:
    operator: Operator
    created_at_ms: int
    last_seen_at_ms: int


def session_of(conn: Connection, token_hash: str) -> Session | None:
    query = (
        select(operators, operator_sessions.c.created_at_ms.label("s_created"), operator_sessions.c.last_seen_at_ms)
        .join(operator_sessions, operator_sessions.c.operator_id == operators.c.id)
        .where(operator_sessions.c.token_hash == token_hash)
    )
    row = conn.execute(query).mappings().first()
    return None if row is None else Session(_operator(row), row["s_created"], row["last_seen_at_ms"])


def touch_session(conn: Connection, token_hash: str, now_ms: int) -> None:
    conn.execute(
        update(operator_sessions).where(operator_sessions.c.token_hash == token_hash).values(last_seen_at_ms=now_ms)
    )


def end_session(conn: Connection, token_hash: str) -> None:
    conn.execute(delete(operator_sessions).where(operator_sessions.c.token_hash == token_hash))


def end_sessions(conn: Connection, operator_id: int) -> None:
    conn.execute(delete(operator_sessions).where(operator_sessions.c.operator_id == operator_id))


def prune_sessions(conn: Connection, idle_before_ms: int, created_before_ms: int) -> int:
    stale = (operator_sessions.c.last_seen_at_ms < idle_before_ms) | (
        operator_sessions.c.created_at_ms < created_before_ms
    )
    return int(conn.execute(delete(operator_sessions).where(stale)).rowcount)
