"""Acquirer connections: everyone reads them, admins create, change, disable and enable them (as
``kassa acquirer`` does). A link's secret is written in a form and never shown back, not even in a form
that a refusal answers with; the pages say only whether one is set."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError
from starlette.responses import RedirectResponse, Response

from kassa.clock import now_ms
from kassa.console.access import Console, Visit, action, page
from kassa.console.form_fields import Problem
from kassa.domain.acquirers import (
    LABELS,
    MAX_SOCKETS,
    Kind,
    LinkSettings,
    SettingProblem,
    changes,
    name_problem,
    read_link,
    secret_problem,
)
from kassa.domain.acquirers import Connection as AcquirerConnection
from kassa.domain.link_status import STALE_MS, LinkStatus
from kassa.domain.operators import Action
from kassa.processors.iso8583.dialect import DialectError
from kassa.processors.iso8583.dialect import load as load_dialect
from kassa.storage import acquirers as acquirer_store
from kassa.storage import link_states
from kassa.storage import merchants as merchant_store

_TEXT_SETTINGS = tuple(name for name in LABELS if name != "tls")
_NEW = {"kind": Kind.ISO8583.value}


def sentence(message: str) -> str:
    """A rule's message (``port must be ...``) as the console shows a problem."""
    return message[:1].upper() + message[1:] + "."


@page()
async def connection_list(console: Console, visit: Visit) -> Response:
    return await _list(console, visit)


async def _list(console: Console, visit: Visit, status: int = 200, **shown: Any) -> Response:
    now = now_ms()

    def load(conn: Connection) -> tuple[list[AcquirerConnection], dict[int, LinkStatus]]:
        found = acquirer_store.listing(conn)
        links = [c.id for c in found if c.kind is Kind.ISO8583]
        return found, link_states.statuses(conn, links, now)

    found, links = await console.read(load)
    context = {"section": "acquirers", "connections": found, "links": links, "problem": None, "new": _NEW}
    return visit.page_of("acquirers.html", {**context, **_choices(), **shown}, status)


def _choices() -> dict[str, Any]:
    return {"kinds": [k.value for k in Kind], "labels": LABELS, "max_sockets": MAX_SOCKETS, "stale_ms": STALE_MS}


def _settings(form: dict[str, str]) -> dict[str, str | bool]:
    """What a connection form sets, as ``domain.acquirers.read_link`` reads it (all of it: an emptied
    optional setting is its default); a dialect named must be one Kassa has."""
    values: dict[str, str | bool] = {name: form.get(name, "") for name in _TEXT_SETTINGS}
    values["tls"] = bool(form.get("tls"))
    if form.get("dialect"):
        try:
            load_dialect(form["dialect"])
        except DialectError as problem:
            raise Problem(sentence(f"dialect: {problem}")) from None
    return values


def _secret(form: dict[str, str]) -> str | None:
    secret = form.get("secret", "")
    if not secret:
        return None
    problem = secret_problem(secret)
    if problem:
        raise Problem(sentence(problem))
    return secret


def _refilled(form: dict[str, str]) -> dict[str, str]:
    """A refused form as it is shown again: without its secret."""
    return {name: value for name, value in form.items() if name not in ("secret", "csrf")}


@action(Action.ACQUIRER_CREATE)
async def connection_create(console: Console, visit: Visit) -> Response:
    form = visit.form
    name, kind = form.get("name", ""), form.get("kind", "")
    try:
        link = _new_link(form, kind)
        problem = name_problem(name)
        if problem:
            raise Problem(sentence(problem))
        secret = _secret(form)
        if link is None and secret is not None:
            raise Problem("A sandbox connection has no secret.")
    except Problem as problem:
        return await _list(console, visit, 400, problem=str(problem), new=_refilled(form))
    vault = console.services.vault

    def create(conn: Connection) -> tuple[None, dict[str, Any]]:
        return None, acquirer_store.create(conn, vault, name, link, secret, now_ms()).as_dict()

    try:
        await console.audited(visit, Action.ACQUIRER_CREATE, f"acquirer {name}", create)
    except IntegrityError:
        taken = f"An acquirer connection named {name} exists already."
        return await _list(console, visit, 409, problem=taken, new=_refilled(form))
    return _to_connection(name)


def _new_link(form: dict[str, str], kind: str) -> LinkSettings | None:
    if kind == Kind.SANDBOX.value:
        if any(form.get(name) for name in (*_TEXT_SETTINGS, "tls")):
            raise Problem("A sandbox connection has no settings: leave them empty.")
        return None
    if kind != Kind.ISO8583.value:
        raise Problem(f"Kind must be one of {', '.join(k.value for k in Kind)}.")
    try:
        return read_link(_settings(form))
    except SettingProblem as problem:
        raise Problem(sentence(str(problem))) from None


@page()
async def connection_page(console: Console, visit: Visit) -> Response:
    return await _detail(console, visit, visit.request.path_params["name"])


async def _detail(console: Console, visit: Visit, name: str, status: int = 200, **shown: Any) -> Response:
    now = now_ms()

    def load(conn: Connection) -> tuple[AcquirerConnection, list[Any], dict[int, str], LinkStatus | None]:
        found = acquirer_store.by_name(conn, name)
        using = acquirer_store.endpoints_using(conn, found.id)
        link = link_states.status(conn, found.id, now) if found.kind is Kind.ISO8583 else None
        return found, using, acquirer_store.route_problems(conn, found.id), link

    try:
        connection, using, problems, link = await console.read(load)
    except merchant_store.NotFound as missing:
        return visit.page("refused.html", 404, reason=f"Not found: {missing}.")
    context = {
        "section": "acquirers",
        "connection": connection,
        "using": using,
        "route_problems": problems,
        "link_status": link,
        "now": now,
        "form": _form_of(connection.link),
        "problem": None,
        **_choices(),
        **shown,
    }
    return visit.page_of("acquirer.html", context, status)


def _form_of(link: LinkSettings | None) -> dict[str, Any]:
    """A link's settings as its edit form shows them (the timeout in seconds)."""
    if link is None:
        return {}
    return {**link.as_dict(), "response_timeout": str(link.response_timeout_seconds)}


@action(Action.ACQUIRER_UPDATE)
async def connection_update(console: Console, visit: Visit) -> Response:
    name, form = visit.request.path_params["name"], visit.form
    clear = bool(form.get("clear_secret"))
    try:
        values, secret = _settings(form), _secret(form)
        if secret is not None and clear:
            raise Problem("Give a new secret or remove the secret, not both.")
    except Problem as problem:
        return await _detail(console, visit, name, 400, problem=str(problem), form=_refilled(form))
    vault = console.services.vault

    def change(conn: Connection) -> tuple[dict[str, Any], dict[str, Any]]:
        before, after = acquirer_store.change(conn, vault, name, values, secret, clear, now_ms())
        return changes(before, after, new_secret=secret is not None)

    try:
        await console.audited(visit, Action.ACQUIRER_UPDATE, f"acquirer {name}", change)
    except SettingProblem as problem:
        return await _detail(console, visit, name, 400, problem=sentence(str(problem)), form=_refilled(form))
    except acquirer_store.Refused as refused:
        return await _detail(console, visit, name, 400, problem=sentence(str(refused)))
    except merchant_store.NotFound as missing:
        return visit.page("refused.html", 404, reason=f"Not found: {missing}.")
    return _to_connection(name)


async def _set_enabled(console: Console, visit: Visit, enabled: bool) -> Response:
    name = visit.request.path_params["name"]
    act = Action.ACQUIRER_ENABLE if enabled else Action.ACQUIRER_DISABLE

    def change(conn: Connection) -> tuple[dict[str, Any], dict[str, Any]]:
        before, after = acquirer_store.set_enabled(conn, name, enabled, now_ms())
        return {"enabled": before.enabled}, {"enabled": after.enabled}

    try:
        await console.audited(visit, act, f"acquirer {name}", change)
    except merchant_store.NotFound as missing:
        return visit.page("refused.html", 404, reason=f"Not found: {missing}.")
    return _to_connection(name)


@action(Action.ACQUIRER_DISABLE)
async def connection_disable(console: Console, visit: Visit) -> Response:
    return await _set_enabled(console, visit, False)


@action(Action.ACQUIRER_ENABLE)
async def connection_enable(console: Console, visit: Visit) -> Response:
    return await _set_enabled(console, visit, True)


def _to_connection(name: str) -> Response:
    return RedirectResponse(f"/acquirers/{quote(name, safe='')}", status_code=303)


ROUTES = [
    ("/acquirers", "GET", connection_list),
    ("/acquirers", "POST", connection_create),
    ("/acquirers/{name}", "GET", connection_page),
    ("/acquirers/{name}", "POST", connection_update),
    ("/acquirers/{name}/disable", "POST", connection_disable),
    ("/acquirers/{name}/enable", "POST", connection_enable),
]
