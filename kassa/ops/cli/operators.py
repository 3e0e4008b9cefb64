"""The console's operators: ``kassa operator create|list|disable|reset-password``. Each change is written
to the audit log as done by ``cli:{the OS user}``, like the console's own actions."""

from __future__ import annotations

from typing import Any

import click
from sqlalchemy import Connection

from kassa.clock import now_ms
from kassa.console import credentials
from kassa.domain.operators import Action, Role
from kassa.ops.cli.common import cli_actor, emit, iso_time, json_option, read, settings, vault, write
from kassa.storage import audit_log
from kassa.storage import operators as operator_store
from kassa.storage.operators import NoOperator, Operator


@click.group()
def operator() -> None:
    """People who may sign in to the operator console (never merchants)."""


def _operator_dict(o: Operator) -> dict[str, Any]:
    return {
        "id": o.id,
        "email": o.email,
        "role": o.role.value,
        "totp": o.has_totp,
        "disabled": o.disabled,
        "locked_until": iso_time(o.locked_until_ms) if o.locked(now_ms()) else None,
        "failed_signins": o.failed_signins,
        "created_at": iso_time(o.created_at_ms),
    }


def _line(d: dict[str, Any]) -> str:
    state = "disabled" if d["disabled"] else f"locked until {d['locked_until']}" if d["locked_until"] else "active"
    return f"{d['id']}\t{d['email']}\t{d['role']}\t{'totp' if d['totp'] else '-'}\t{state}"


def _found(unit: Any) -> Any:
    try:
        return unit()
    except NoOperator as missing:
        raise click.ClickException(str(missing)) from None


@operator.command("create")
@click.option("--email", required=True, help="The operator's email: what they sign in with.")
@click.option("--role", type=click.Choice([r.value for r in Role]), required=True)
@click.option("--totp", "with_totp", is_flag=True, help="Require one-time codes (always on for admins).")
@json_option
def operator_create(email: str, role: str, with_totp: bool, as_json: bool) -> None:
    """Create an operator; prints their first password (and one-time code secret) once."""
    if "@" not in email:
        raise click.BadParameter("must be an email address", param_hint="--email")
    chosen = Role(role)
    password = credentials.new_password()
    secret = credentials.new_totp_secret() if chosen is Role.ADMIN or with_totp else None
    password_hash = credentials.hash_password(password, settings().password_cost)
    keys = vault()

    def create(conn: Connection) -> Operator:
        created = operator_store.create(conn, keys, email, chosen, password_hash, secret, now_ms())
        after = {"email": created.email, "role": role, "totp": secret is not None}
        audit_log.append(
            conn, audit_log.Entry(cli_actor(), Action.OPERATOR_CREATE.code, created.email, after=after), now_ms()
        )
        return created

    created = write(create, taken=f"an operator {email.lower()} exists already")
    data = {**_operator_dict(created), "password": password, "totp_secret": secret}
    lines = [_line(data), f"password: {password}"]
    if secret:
        data["totp_uri"] = credentials.totp_uri(secret, created.email)
        lines += [f"one-time code secret: {secret}", f"authenticator link: {data['totp_uri']}"]
    emit(as_json, data, lines)


@operator.command("list")
@json_option
def operator_list(as_json: bool) -> None:
    """Every operator with role and state."""
    data = [_operator_dict(o) for o in read(operator_store.listing)]
    emit(as_json, data, [_line(d) for d in data])


@operator.command("disable")
@click.option("--email", required=True)
@json_option
def operator_disable(email: str, as_json: bool) -> None:
    """Disable an operator: their sessions end at once and they cannot sign in."""

    def disable(conn: Connection) -> Operator:
        found = operator_store.by_email(conn, email)
        operator_store.disable(conn, found.id, now_ms())
        entry = audit_log.Entry(
            cli_actor(), Action.OPERATOR_DISABLE.code, found.email, before={"disabled": found.disabled}
        )
        audit_log.append(conn, entry, now_ms())
        return operator_store.by_id(conn, found.id)

    data = _operator_dict(_found(lambda: write(disable)))
    emit(as_json, data, [_line(data)])


@operator.command("unlock")
@click.option("--email", required=True)
@json_option
def operator_unlock(email: str, as_json: bool) -> None:
    """End a lockout after failed sign-ins at once, password unchanged: for an operator who mistyped (the
    only admin among them), not one whose password may be known (reset-password that)."""

    def unlock(conn: Connection) -> Operator:
        found = operator_store.by_email(conn, email)
        before, after = operator_store.unlock(conn, found.id)
        entry = audit_log.Entry(cli_actor(), Action.OPERATOR_UNLOCK.code, found.email, before=before, after=after)
        audit_log.append(conn, entry, now_ms())
        return operator_store.by_id(conn, found.id)

    data = _operator_dict(_found(lambda: write(unlock)))
    emit(as_json, data, [_line(data)])


@operator.command("reset-password")
@click.option("--email", required=True)
@json_option
def operator_reset_password(email: str, as_json: bool) -> None:
    """A new password (printed once); unlocks and re-enables the operator and ends their sessions."""
    password = credentials.new_password()
    password_hash = credentials.hash_password(password, settings().password_cost)

    def reset(conn: Connection) -> Operator:
        found = operator_store.by_email(conn, email)
        operator_store.reset_password(conn, found.id, password_hash)
        before = {"disabled": found.disabled, "locked": found.locked(now_ms()), "failed_signins": found.failed_signins}
        entry = audit_log.Entry(cli_actor(), Action.OPERATOR_RESET.code, found.email, before=before)
        audit_log.append(conn, entry, now_ms())
        return operator_store.by_id(conn, found.id)

    data = {**_operator_dict(_found(lambda: write(reset))), "password": password}
    emit(as_json, data, [_line(data), f"password: {password}"])


COMMANDS = (operator,)
