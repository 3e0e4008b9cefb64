"""Acquirer connections: ``kassa acquirer create|update|list|show|disable|enable``. Each change is written
to the audit log as done by ``cli:{the OS user}``. A link's secret is read from a file or standard input,
never from the command line (where ``ps`` and shell histories show it), and never printed."""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any, TypeVar

import click
from sqlalchemy import Connection

from kassa.clock import now_ms
from kassa.domain.acquirers import (
    LABELS,
    MAX_SOCKETS,
    Kind,
    SettingProblem,
    changes,
    name_problem,
    read_link,
    secret_problem,
)
from kassa.domain.acquirers import Connection as AcquirerConnection
from kassa.domain.link_status import LinkStatus
from kassa.domain.operators import Action
from kassa.ops.cli.common import cli_actor, emit, json_option, read, vault, write
from kassa.processors.iso8583.dialect import DialectError
from kassa.processors.iso8583.dialect import load as load_dialect
from kassa.storage import acquirers as acquirer_store
from kassa.storage import audit_log, link_states

F = TypeVar("F", bound=Callable[..., Any])

# One option per setting, named as ``domain.acquirers.LABELS`` names it; numbers are read as text there,
# so the CLI and the console refuse the same values with the same words.
_SETTINGS = (
    click.option("--host", help="The acquirer's host: a name or an IP address."),
    click.option("--port", help="Its TCP port, 1 to 65535."),
    click.option("--tls/--no-tls", default=None, help="TLS on the connection (default: off)."),
    click.option("--acquiring-institution-id", help="Field 32: 1 to 11 digits, as the acquirer assigned it."),
    click.option("--terminal-id", help="Field 41: up to 8 characters (padded with spaces)."),
    click.option("--card-acceptor-id", help="Field 42: up to 15 characters (padded with spaces)."),
    click.option("--mcc", help="Field 18: the merchant category code, 4 digits."),
    click.option("--response-timeout", help="Seconds an answer may take before a request is unknown (default 20)."),
    click.option("--sockets", help=f"Sockets each gateway process opens, 1 to {MAX_SOCKETS} (default 1)."),
    click.option("--dialect", help="The ISO 8583 dialect the acquirer speaks (default: reference)."),
)
_SECRET = click.option(
    "--secret-file",
    type=click.File("r"),
    default=None,
    help="A file holding the link's secret (a TLS client private key, a MAC key); - reads standard input.",
)


def _settings(command: F) -> F:
    for option in reversed(_SETTINGS):
        command = option(command)
    return command


@click.group()
def acquirer() -> None:
    """Acquirer connections: the built-in sandbox and ISO 8583 links to acquirers' hosts."""


def _given(settings: dict[str, Any]) -> dict[str, str | bool]:
    """The settings the command names; a dialect among them must be one Kassa has."""
    given = {name: value for name, value in settings.items() if value is not None}
    if given.get("dialect"):
        try:
            load_dialect(str(given["dialect"]))
        except DialectError as problem:
            raise click.BadParameter(str(problem), param_hint="--dialect") from None
    return given


def _option(field: str) -> str:
    return f"--{field.replace('_', '-')}"


def _secret(source: IO[str] | None) -> str | None:
    if source is None:
        return None
    secret = source.read().strip()
    problem = secret_problem(secret)
    if problem:
        raise click.BadParameter(problem, param_hint="--secret-file")
    return secret


def _settled(unit: Callable[[], Any]) -> Any:
    """``unit``'s result; a setting or change the rules refuse is the command's one-line error."""
    try:
        return unit()
    except SettingProblem as problem:
        raise click.BadParameter(str(problem), param_hint=_option(problem.field)) from None
    except acquirer_store.Refused as refused:
        raise click.ClickException(str(refused)) from None


def _dict(c: AcquirerConnection) -> dict[str, Any]:
    return {"id": c.id, **c.as_dict()}


def _line(c: AcquirerConnection) -> str:
    state = "enabled" if c.enabled else "disabled"
    where = f"{c.link.host}:{c.link.port}{' TLS' if c.link.tls else ''}" if c.link else "-"
    return f"{c.id}\t{c.name}\t{c.kind.value}\t{state}\t{where}\tsecret: {'set' if c.has_secret else 'none'}"


def _lines(c: AcquirerConnection) -> list[str]:
    lines = [f"connection {c.name} (id {c.id}): {c.kind.value}, {'enabled' if c.enabled else 'disabled'}"]
    if c.link:
        link = c.link
        lines += [
            f"host: {link.host}:{link.port}, TLS {'on' if link.tls else 'off'}",
            f"{LABELS['acquiring_institution_id']}: {link.acquiring_institution_id}",
            f"{LABELS['terminal_id']}: {link.terminal_id!r}",
            f"{LABELS['card_acceptor_id']}: {link.card_acceptor_id!r}",
            f"{LABELS['mcc']}: {link.mcc}",
            f"{LABELS['response_timeout']}: {link.response_timeout_seconds} s",
            f"{LABELS['sockets']}: {link.sockets}",
            f"{LABELS['dialect']}: {link.dialect}",
            f"secret: {'set' if c.has_secret else 'none'}",
        ]
    return lines


def _audit(conn: Connection, action: Action, c: AcquirerConnection, before: Any = None, after: Any = None) -> None:
    entry = audit_log.Entry(cli_actor(), action.code, f"acquirer {c.name}", before=before, after=after)
    audit_log.append(conn, entry, now_ms())


@acquirer.command("create")
@click.option("--name", required=True, help="How operators and endpoints name it: lower-case, e.g. acme-eu.")
@click.option("--kind", type=click.Choice([k.value for k in Kind]), default=Kind.ISO8583.value, show_default=True)
@_settings
@_SECRET
@json_option
def acquirer_create(name: str, kind: str, secret_file: IO[str] | None, as_json: bool, **settings: Any) -> None:
    """Create a connection. An ISO 8583 one needs --host, --port, --acquiring-institution-id, --terminal-id,
    --card-acceptor-id and --mcc; a sandbox one takes no settings."""
    problem = name_problem(name)
    if problem:
        raise click.BadParameter(problem, param_hint="--name")
    given = _given(settings)
    if kind == Kind.SANDBOX.value and (given or secret_file):
        raise click.UsageError("a sandbox connection takes no settings and no secret")
    link = None if kind == Kind.SANDBOX.value else _settled(lambda: read_link(given))
    secret, keys = _secret(secret_file), vault()

    def create(conn: Connection) -> AcquirerConnection:
        created = acquirer_store.create(conn, keys, name, link, secret, now_ms())
        _audit(conn, Action.ACQUIRER_CREATE, created, after=created.as_dict())
        return created

    created = write(create, f"an acquirer connection named {name} exists already")
    emit(as_json, _dict(created), [f"acquirer connection {name} created", *_lines(created)[1:]])


@acquirer.command("update")
@click.option("--name", required=True)
@_settings
@_SECRET
@click.option("--clear-secret", is_flag=True, help="Remove the link's secret.")
@json_option
def acquirer_update(name: str, secret_file: IO[str] | None, clear_secret: bool, as_json: bool, **settings: Any) -> None:
    """Change the settings given (the others stay), replace the secret or remove it."""
    given = _given(settings)
    if secret_file and clear_secret:
        raise click.UsageError("give --secret-file or --clear-secret, not both")
    if not (given or secret_file or clear_secret):
        raise click.UsageError("nothing to change: give a setting, --secret-file or --clear-secret")
    secret, keys = _secret(secret_file), vault()

    def change(conn: Connection) -> AcquirerConnection:
        before, after = acquirer_store.change(conn, keys, name, given, secret, clear_secret, now_ms())
        was, now = changes(before, after, new_secret=secret is not None)
        _audit(conn, Action.ACQUIRER_UPDATE, after, before=was, after=now)
        return after

    updated = _settled(lambda: write(change))
    emit(as_json, _dict(updated), _lines(updated))


@acquirer.command("list")
@json_option
def acquirer_list(as_json: bool) -> None:
    """Every connection by name, with its state and whether a secret is set."""
    found = read(acquirer_store.listing)
    emit(as_json, [_dict(c) for c in found], [_line(c) for c in found])


@acquirer.command("show")
@click.option("--name", required=True)
@json_option
def acquirer_show(name: str, as_json: bool) -> None:
    """One connection's settings, whether a secret is set (never the secret), the endpoints that list it
    and those whose list the rules refuse; for an ISO 8583 connection, its link as the gateway processes
    that opened it last reported it (within 30 s), and its reversals and advices not answered yet."""
    now = now_ms()

    def load(conn: Connection) -> tuple[AcquirerConnection, list[int], dict[int, str], LinkStatus | None]:
        found = acquirer_store.by_name(conn, name)
        using = [endpoint_id for endpoint_id, _ in acquirer_store.endpoints_using(conn, found.id)]
        link = link_states.status(conn, found.id, now) if found.kind is Kind.ISO8583 else None
        return found, using, acquirer_store.route_problems(conn, found.id), link

    found, using, problems, link = read(load)
    lines = [*_lines(found), *(link.lines(now) if link else [])]
    lines += [f"endpoints: {', '.join(map(str, using)) or 'none'}", *_problem_lines(problems)]
    shown = {**_dict(found), "link": link.as_dict(now) if link else None}
    emit(as_json, {**shown, "endpoints": using, "problems": _problem_dict(problems)}, lines)


def _problem_lines(problems: dict[int, str]) -> list[str]:
    return [f"endpoint {endpoint_id}: {problem}" for endpoint_id, problem in problems.items()]


def _problem_dict(problems: dict[int, str]) -> dict[str, str]:
    return {str(endpoint_id): problem for endpoint_id, problem in problems.items()}


def _set_enabled(name: str, enabled: bool, as_json: bool) -> None:
    action = Action.ACQUIRER_ENABLE if enabled else Action.ACQUIRER_DISABLE

    def change(conn: Connection) -> tuple[AcquirerConnection, dict[int, str]]:
        before, after = acquirer_store.set_enabled(conn, name, enabled, now_ms())
        _audit(conn, action, after, before={"enabled": before.enabled}, after={"enabled": after.enabled})
        return after, acquirer_store.route_problems(conn, after.id)

    changed, problems = write(change)
    emit(
        as_json,
        {**_dict(changed), "problems": _problem_dict(problems)},
        [_line(changed), *(f"warning: {line}" for line in _problem_lines(problems))],
    )


@acquirer.command("disable")
@click.option("--name", required=True)
@json_option
def acquirer_disable(name: str, as_json: bool) -> None:
    """Take no more payments on this connection; endpoints keep it listed and route to their others. Never
    refused: it is what an operator does when an acquirer fails. Names the endpoints left with nowhere to
    route to."""
    _set_enabled(name, False, as_json)


@acquirer.command("enable")
@click.option("--name", required=True)
@json_option
def acquirer_enable(name: str, as_json: bool) -> None:
    """Route payments to this connection again."""
    _set_enabled(name, True, as_json)


COMMANDS = (acquirer,)
