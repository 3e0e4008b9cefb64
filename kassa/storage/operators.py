"""Operators of the console and their sessions."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, Connection, case, delete, insert, select, update

from kassa.clock import date_time_text
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
    failed_signins: int  # sign-ins begun since the last that succeeded: failed, or still running
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
        row["failed_signins"],
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
    """What signing in checks, as stored."""

    operator: Operator
    password_hash: str
    totp_secret: str | None
    totp_last_step: int | None


def credentials_of(conn: Connection, vault: Vault, email: str) -> Credentials | None:
    try:
        row = _row_by_email(conn, email)
    except NoOperator:
        return None
    return _credentials(row, vault)


def _credentials(row: Record, vault: Vault) -> Credentials:
    sealed = row["totp_sealed"]
    secret = None if sealed is None else vault.decrypt(sealed, totp_context(row["id"]))
    return Credentials(_operator(row), row["password_hash"], secret, row["totp_last_step"])


# --- signing in ------------------------------------------------------------------------------------------
# A sign-in is counted when it begins, before its password is checked, and decided by conditional updates:
# attempts sent at once are all counted while they run, and none is let in on what it read before another
# locked the account.


def _unlocked(now_ms: int) -> ColumnElement[bool]:
    return operators.c.locked_until_ms.is_(None) | (operators.c.locked_until_ms <= now_ms)


def begin_signin(conn: Connection, vault: Vault, email: str, now_ms: int) -> Credentials | None:
    """Counts a sign-in begun for ``email``, with the credentials to check it against; None (and nothing
    counted) when the email names no operator, a disabled one or one locked out. A lockout that has run
    out ends here, and the count starts again."""
    begun = (
        update(operators)
        .where(operators.c.email == email, operators.c.disabled_at_ms.is_(None), _unlocked(now_ms))
        .values(
            failed_signins=case((operators.c.locked_until_ms.is_(None), operators.c.failed_signins + 1), else_=1),
            locked_until_ms=None,
        )
        .returning(*operators.c)
    )
    row = conn.execute(begun).mappings().first()
    return None if row is None else _credentials(row, vault)


def accept_signin(conn: Connection, checked: Credentials, totp_step: int | None, limit: int) -> bool:
    """Whether the sign-in begun with ``checked`` (its password right, its code of ``totp_step``) is let
    in, decided in one statement against the row as it is now: not locked out or disabled meanwhile, the
    password checked still the operator's, at most ``limit`` sign-ins begun since the last success (this
    one and any still running), and the code's step later than the last accepted, which it becomes (each
    code works once). Let in, the count starts again."""
    operator = checked.operator
    conditions = [
        operators.c.id == operator.id,
        operators.c.locked_until_ms.is_(None),
        operators.c.disabled_at_ms.is_(None),
        operators.c.password_hash == checked.password_hash,
        operators.c.failed_signins <= limit,
    ]
    changes: dict[str, object] = {"failed_signins": 0}
    if totp_step is None:
        conditions += [operators.c.totp_sealed.is_(None), operators.c.role != Role.ADMIN.value]
    else:
        last = operators.c.totp_last_step
        conditions.append(last.is_(None) | (last < totp_step))
        changes["totp_last_step"] = totp_step
    return conn.execute(update(operators).where(*conditions).values(**changes)).rowcount == 1


def lock_if_failed(conn: Connection, operator_id: int, limit: int, until_ms: int) -> int | None:
    """After a failed sign-in: locks the operator out until ``until_ms`` when ``limit`` sign-ins begun
    since the last success have failed or are still running, unless a lockout is on already. The count
    when this locked it, else None."""
    lock = (
        update(operators)
        .where(
            operators.c.id == operator_id,
            operators.c.locked_until_ms.is_(None),
            operators.c.failed_signins >= limit,
        )
        .values(locked_until_ms=until_ms)
        .returning(operators.c.failed_signins)
    )
    count = conn.execute(lock).scalar()
    return None if count is None else int(count)


def unlock(conn: Connection, operator_id: int) -> tuple[dict[str, object], dict[str, object]]:
    """Ends a lockout at once (an admin's decision, from the console or the CLI); what the audit log keeps
    of it: the operator's lockout before and after."""
    found = by_id(conn, operator_id)
    conn.execute(update(operators).where(operators.c.id == operator_id).values(failed_signins=0, locked_until_ms=None))
    locked_until = None if found.locked_until_ms is None else date_time_text(found.locked_until_ms)
    before: dict[str, object] = {"email": found.email, "locked_until": locked_until}
    return {**before, "failed_signins": found.failed_signins}, {"locked_until": None, "failed_signins": 0}


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


def replace_hash(conn: Connection, operator_id: int, password_hash: str) -> None:
    """The same password hashed at another cost: nothing else about the operator changes."""
    conn.execute(update(operators).where(operators.c.id == operator_id).values(password_hash=password_hash))


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
