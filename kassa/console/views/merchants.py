"""Merchants, their endpoints (with their acquirer connections) and RSA public keys: everyone reads them,
admins create and change them (as ``kassa merchant|endpoint|key`` do). A new merchant's control key is
shown once, on the page its creation answers with, and never written to the audit log."""

from __future__ import annotations

import re
import secrets
from functools import partial
from typing import Any
from urllib.parse import quote

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError
from starlette.responses import RedirectResponse, Response

from kassa.clock import now_ms
from kassa.console import form_fields as fields
from kassa.console.access import Console, Visit, action, page
from kassa.console.form_fields import Problem
from kassa.domain import money
from kassa.domain.acquirers import route_problem
from kassa.domain.merchants import Endpoint, Merchant, Mode
from kassa.domain.operators import Action
from kassa.domain.routing import RouteProblem, Routing, parse_route, render_cascade
from kassa.domain.routing import changes as routing_changes
from kassa.signing.rsa_keys import KeyProblem, read_public_key
from kassa.storage import acquirers as acquirer_store
from kassa.storage import balances as balance_store
from kassa.storage import merchant_keys
from kassa.storage import merchants as merchant_store

# What a login may be in the console: it is the OAuth consumer key and appears in URLs and reports.
_LOGIN = re.compile(r"[A-Za-z0-9._@-]{1,64}")
_LOGIN_RULE = "Login must be 1 to 64 letters, digits, dots, dashes, underscores or @."
_DESCRIPTOR_LENGTH = 64  # endpoints.descriptor
_REPLAY_WINDOW_MAX = 24 * 3600  # as ``kassa endpoint update --replay-window``
_NEW_ENDPOINT = {"currency": "USD", "mode": Mode.SANDBOX.value, "replay_window": "0"}


@page()
async def merchant_list(console: Console, visit: Visit) -> Response:
    return await _list(console, visit)


async def _list(console: Console, visit: Visit, status: int = 200, **shown: Any) -> Response:
    found = await console.read(merchant_store.summaries)
    context = {"section": "merchants", "merchants": found, "problem": None, "login": "", **shown}
    return visit.page_of("merchants.html", context, status)


@action(Action.MERCHANT_CREATE)
async def merchant_create(console: Console, visit: Visit) -> Response:
    login, classic = visit.form.get("login", ""), bool(visit.form.get("classic"))
    if not _LOGIN.fullmatch(login):
        return await _list(console, visit, 400, problem=_LOGIN_RULE, login=login)
    key = secrets.token_hex(16)  # as ``kassa merchant create`` makes one
    vault = console.services.vault

    def create(conn: Connection) -> tuple[None, dict[str, Any]]:
        created = merchant_store.create_merchant(conn, vault, login, key, classic, now_ms())
        return None, {"id": created.id, "login": login, "classic": classic}  # never the key

    try:
        await console.audited(visit, Action.MERCHANT_CREATE, f"merchant {login}", create)
    except IntegrityError:
        return await _list(console, visit, 409, problem=f"Login {login} is taken.", login=login)
    return await _detail(console, visit, login, control_key=key)


@page()
async def merchant_page(console: Console, visit: Visit) -> Response:
    return await _detail(console, visit, visit.request.path_params["login"])


async def _detail(console: Console, visit: Visit, login: str, status: int = 200, **shown: Any) -> Response:
    vault = console.services.vault

    def load(conn: Connection) -> tuple[Merchant, list[Endpoint], Any, Any, dict[int, Routing]]:
        merchant = merchant_store.merchant_by_login(conn, vault, login)
        endpoints = merchant_store.endpoints_of(conn, vault, merchant.id)
        return (
            merchant,
            endpoints,
            merchant_keys.listing(conn, login),
            balance_store.of_merchant(conn, merchant.id),
            acquirer_store.routings(conn, [e.id for e in endpoints if not e.is_group]),
        )

    try:
        merchant, endpoints, keys, balances, routes = await console.read(load)
    except merchant_store.NotFound as missing:
        return visit.page("refused.html", 404, reason=f"Not found: {missing}.")
    forms = {e.id: _endpoint_form(e) for e in endpoints if not e.is_group}
    forms.update(shown.pop("edited", {}))
    route_forms = {endpoint_id: "\n".join(s.render() for s in routing.stops) for endpoint_id, routing in routes.items()}
    route_forms.update(shown.pop("route_edited", {}))
    cascade_forms = {endpoint_id: render_cascade(routing.cascade) for endpoint_id, routing in routes.items()}
    cascade_forms.update(shown.pop("cascade_edited", {}))
    context: dict[str, Any] = {
        "section": "merchants",
        "merchant": {"id": merchant.id, "login": merchant.login, "classic": merchant.classic},
        "networks": ", ".join(str(n) for n in merchant.allowed_networks) or "any",
        "endpoints": endpoints,
        "keys": keys,
        "balances": balances,
        "forms": forms,
        "routes": routes,
        "route_problems": {e.id: route_problem(e.mode, routes[e.id].connections) for e in endpoints if not e.is_group},
        "route_forms": route_forms,
        "cascade_forms": cascade_forms,
        "modes": [m.value for m in Mode],
        "new_endpoint": _NEW_ENDPOINT,
        "new_key_mode": Mode.SANDBOX.value,
        "control_key": None,
        "problem": None,
        "editing": None,
        **shown,
    }
    return visit.page_of("merchant.html", context, status)


def _endpoint_form(e: Endpoint) -> dict[str, str]:
    """An endpoint's settings as its edit form shows them (amounts in major units)."""
    cur = money.currency(e.currency or "")
    return {
        "descriptor": e.descriptor,
        "min_amount": "" if e.min_amount is None else money.format_amount(e.min_amount, cur),
        "max_amount": "" if e.max_amount is None else money.format_amount(e.max_amount, cur),
        "mode": e.mode.value,
        "replay_window": str(e.replay_window_seconds),
        "enabled": "1" if e.enabled else "",
    }


def _settings(form: dict[str, str], cur: money.Currency) -> dict[str, Any]:
    """The settings an endpoint form sets, read and checked; ``Problem`` names the field at fault."""
    low = fields.amount(form.get("min_amount", ""), cur, "Minimum amount")
    high = fields.amount(form.get("max_amount", ""), cur, "Maximum amount")
    fields.limits(low, high)
    return {
        "descriptor": fields.bounded_text(form.get("descriptor", ""), "Descriptor", _DESCRIPTOR_LENGTH),
        "min_amount": low,
        "max_amount": high,
        "mode": fields.mode(form.get("mode", "")),
        "replay_window_seconds": fields.whole_number(
            form.get("replay_window") or "0", "Replay window", _REPLAY_WINDOW_MAX
        ),
    }


@action(Action.ENDPOINT_CREATE)
async def endpoint_create(console: Console, visit: Visit) -> Response:
    login, form = visit.request.path_params["login"], visit.form
    try:
        cur = fields.currency(form.get("currency", ""))
        chosen = _settings(form, cur)
    except Problem as problem:
        return await _detail(console, visit, login, 400, problem=str(problem), new_endpoint=dict(form))
    multi_capture, classic = bool(form.get("multi_capture")), bool(form.get("classic"))
    names = _names(form.get("connections", ""))

    def create(conn: Connection) -> tuple[None, dict[str, Any]]:
        spec = merchant_store.EndpointSpec(
            merchant_store.merchant_id(conn, login), cur.code, chosen["mode"], classic, chosen["descriptor"],
            chosen["min_amount"], chosen["max_amount"], multi_capture, None, chosen["replay_window_seconds"],
        )  # fmt: skip
        route = [acquirer_store.by_name(conn, name) for name in names]
        endpoint_id = merchant_store.create_endpoint(conn, spec, now_ms(), route)
        routed = [c.name for c in acquirer_store.route(conn, endpoint_id)]
        settings = {**_audited(chosen), "multi_capture": multi_capture, "connections": routed}
        return None, {"endpoint": endpoint_id, "currency": cur.code, **settings}

    try:
        await console.audited(visit, Action.ENDPOINT_CREATE, f"merchant {login}", create)
    except (acquirer_store.NoConnection, merchant_store.Refused) as refused:
        why = f"Acquirer connections of the new endpoint: {refused}."
        return await _detail(console, visit, login, 400, problem=why, new_endpoint=dict(form))
    except merchant_store.NotFound as missing:
        return visit.page("refused.html", 404, reason=f"Not found: {missing}.")
    return _to_merchant(login)


def _names(typed: str) -> list[str]:
    """Connection names as a form field holds them, separated by commas."""
    return [name.strip() for name in typed.split(",") if name.strip()]


def _audited(settings: dict[str, Any]) -> dict[str, Any]:
    return {name: value.value if isinstance(value, Mode) else value for name, value in settings.items()}


@action(Action.ENDPOINT_UPDATE)
async def endpoint_update(console: Console, visit: Visit) -> Response:
    endpoint_id = int(visit.request.path_params["endpoint_id"])
    vault = console.services.vault
    try:
        endpoint = await console.read(partial(merchant_store.load_endpoint, vault=vault, endpoint_id=endpoint_id))
    except merchant_store.NotFound as missing:
        return visit.page("refused.html", 404, reason=f"Not found: {missing}.")
    login = endpoint.merchant.login
    if endpoint.is_group:
        return visit.page("refused.html", 404, reason=f"{endpoint_id} is a group: change its member endpoints.")
    try:
        chosen = _settings(visit.form, money.currency(endpoint.currency or ""))
    except Problem as problem:
        shown = {"problem": str(problem), "edited": {endpoint_id: dict(visit.form)}, "editing": endpoint_id}
        return await _detail(console, visit, login, 400, **shown)
    chosen["enabled"] = bool(visit.form.get("enabled"))

    def change(conn: Connection) -> tuple[dict[str, Any], dict[str, Any]]:
        current = merchant_store.load_endpoint(conn, vault, endpoint_id)
        if chosen["mode"] is Mode.LIVE and current.mode is not Mode.LIVE:
            problem = route_problem(Mode.LIVE, acquirer_store.route(conn, endpoint_id))
            if problem:  # a live endpoint is never left unable to take a payment (or approved by the sandbox)
                raise merchant_store.Refused(f"Endpoint {endpoint_id} cannot go live: {problem}.")
        before = _audited(_current(current))
        after = _audited(_current(merchant_store.update_endpoint(conn, vault, endpoint_id, **chosen)))
        changed = [name for name in after if after[name] != before[name]]
        return {name: before[name] for name in changed}, {name: after[name] for name in changed}

    try:
        await console.audited(visit, Action.ENDPOINT_UPDATE, f"endpoint {endpoint_id}", change)
    except merchant_store.Refused as refused:
        shown = {"problem": str(refused), "edited": {endpoint_id: dict(visit.form)}, "editing": endpoint_id}
        return await _detail(console, visit, login, 400, **shown)
    console.services.directory.forget()
    return _to_merchant(login)


@action(Action.ENDPOINT_CONNECTIONS)
async def endpoint_connections(console: Console, visit: Visit) -> Response:
    """Sets the endpoint's acquirer connections, in the order typed (one entry a line, or separated by
    commas, each NAME or NAME[conditions]) and its cascade list."""
    endpoint_id = int(visit.request.path_params["endpoint_id"])
    typed, cascade = visit.form.get("connections", ""), visit.form.get("cascade")
    vault = console.services.vault
    try:
        endpoint = await console.read(partial(merchant_store.load_endpoint, vault=vault, endpoint_id=endpoint_id))
    except merchant_store.NotFound as missing:
        return visit.page("refused.html", 404, reason=f"Not found: {missing}.")

    def change(conn: Connection) -> tuple[dict[str, object], dict[str, object]]:
        return routing_changes(*acquirer_store.change_routing(conn, endpoint_id, parse_route([typed]), cascade))

    try:
        await console.audited(visit, Action.ENDPOINT_CONNECTIONS, f"endpoint {endpoint_id}", change)
    except (acquirer_store.Refused, merchant_store.NotFound, RouteProblem) as refused:
        problem = f"Acquirer connections of endpoint {endpoint_id}: {refused}."
        edited = {"route_edited": {endpoint_id: typed}, "cascade_edited": {endpoint_id: cascade or "default"}}
        return await _detail(
            console, visit, endpoint.merchant.login, 400, problem=problem, editing=endpoint_id, **edited
        )
    return _to_merchant(endpoint.merchant.login)


def _current(e: Endpoint) -> dict[str, Any]:
    return {
        "descriptor": e.descriptor,
        "min_amount": e.min_amount,
        "max_amount": e.max_amount,
        "mode": e.mode,
        "replay_window_seconds": e.replay_window_seconds,
        "enabled": e.enabled,
    }


@action(Action.KEY_ADD)
async def key_add(console: Console, visit: Visit) -> Response:
    login, form = visit.request.path_params["login"], visit.form
    try:
        mode = fields.mode(form.get("mode", ""))
        public = read_public_key(form.get("pem", ""))
    except (Problem, KeyProblem) as problem:
        # The pasted text is never shown again: it may be a private key.
        text = str(problem) if isinstance(problem, Problem) else f"Public key: {problem}."
        return await _detail(console, visit, login, 400, problem=text, new_key_mode=form.get("mode"))

    def add(conn: Connection) -> tuple[None, dict[str, Any]]:
        added = merchant_keys.register(conn, merchant_store.merchant_id(conn, login), mode, public, now_ms())
        return None, {"key": added.id, "mode": mode.value, "fingerprint": added.fingerprint, "bits": added.bits}

    try:
        await console.audited(visit, Action.KEY_ADD, f"merchant {login}", add)
    except merchant_store.NotFound as missing:
        return visit.page("refused.html", 404, reason=f"Not found: {missing}.")
    except IntegrityError:
        taken = f"Public key: {login} has this key already (SHA256:{public.fingerprint}); a revoked key stays revoked."
        return await _detail(console, visit, login, 409, problem=taken)
    except merchant_keys.KeyOfAnotherMerchant as another:
        return await _detail(console, visit, login, 409, problem=f"Public key: {another}.")
    return _to_merchant(login)


@action(Action.KEY_REVOKE)
async def key_revoke(console: Console, visit: Visit) -> Response:
    key_id = int(visit.request.path_params["key_id"])
    try:
        stored = await console.read(partial(merchant_keys.by_id, key_id=key_id))
    except merchant_store.NotFound as missing:
        return visit.page("refused.html", 404, reason=f"Not found: {missing}.")

    def revoke(conn: Connection) -> tuple[dict[str, Any], dict[str, Any]]:
        revoked = merchant_keys.revoke(conn, key_id, now_ms())
        return {"revoked_at_ms": stored.revoked_at_ms}, {"revoked_at_ms": revoked.revoked_at_ms}

    await console.audited(visit, Action.KEY_REVOKE, f"key {key_id} of {stored.merchant}", revoke)
    return _to_merchant(stored.merchant)


def _to_merchant(login: str) -> Response:
    return RedirectResponse(f"/merchants/{quote(login, safe='')}", status_code=303)


ROUTES = [
    ("/merchants", "GET", merchant_list),
    ("/merchants", "POST", merchant_create),
    ("/merchants/{login}", "GET", merchant_page),
    ("/merchants/{login}/endpoints", "POST", endpoint_create),
    ("/endpoints/{endpoint_id:int}", "POST", endpoint_update),
    ("/endpoints/{endpoint_id:int}/connections", "POST", endpoint_connections),
    ("/merchants/{login}/keys", "POST", key_add),
    ("/keys/{key_id:int}/revoke", "POST", key_revoke),
]
