"""Operators (admins manage them) and the audit log (admins read and filter it)."""

from __future__ import annotations

import asyncio
from functools import partial

from sqlalchemy import Connection
from starlette.responses import RedirectResponse, Response

from kassa.clock import now_ms
from kassa.console import credentials
from kassa.console.access import Console, Visit, action, page
from kassa.domain.operators import READ_AUDIT_LOG, Action, Role
from kassa.storage import audit_log
from kassa.storage import operators as operator_store
from kassa.storage.operators import Operator

PAGE_SIZE = 50


@page(Role.ADMIN)
async def operator_list(console: Console, visit: Visit) -> Response:
    return await _operators(console, visit)


async def _hashed(console: Console, password: str) -> str:
    """Off the event loop, which the API shares: a hash takes as long as ``KASSA_PASSWORD_COST`` makes it."""
    return await asyncio.to_thread(credentials.hash_password, password, console.password_cost)


@action(Action.OPERATOR_CREATE)
async def operator_create(console: Console, visit: Visit) -> Response:
    email, role_name = visit.form.get("email", "").strip().lower(), visit.form.get("role", "")
    if "@" not in email or role_name not in {r.value for r in Role}:
        return await _operators(console, visit, 400, problem="An operator needs an email address and a role.")
    role = Role(role_name)
    password = credentials.new_password()
    secret = credentials.new_totp_secret() if role is Role.ADMIN or visit.form.get("totp") else None
    vault = console.services.vault
    password_hash = await _hashed(console, password)

    def create(conn: Connection) -> tuple[None, dict[str, str]]:
        operator_store.create(conn, vault, email, role, password_hash, secret, now_ms())
        return None, {"email": email, "role": role.value, "totp": "yes" if secret else "no"}

    await console.audited(visit, Action.OPERATOR_CREATE, email, create)
    created = {"email": email, "password": password, "totp": secret}
    if secret:
        created["uri"] = credentials.totp_uri(secret, email)
    return await _operators(console, visit, created=created)


@action(Action.OPERATOR_DISABLE)
async def operator_disable(console: Console, visit: Visit) -> Response:
    operator_id = int(visit.request.path_params["operator_id"])

    def disable(conn: Connection) -> tuple[dict[str, bool], dict[str, bool]]:
        operator_store.disable(conn, operator_id, now_ms())
        return {"disabled": False}, {"disabled": True}

    await console.audited(visit, Action.OPERATOR_DISABLE, f"operator {operator_id}", disable)
    return RedirectResponse("/operators", status_code=303)


@action(Action.OPERATOR_RESET)
async def operator_reset(console: Console, visit: Visit) -> Response:
    """A new password shown once; the operator is unlocked and re-enabled, and their sessions end."""
    operator_id = int(visit.request.path_params["operator_id"])
    password = credentials.new_password()
    password_hash = await _hashed(console, password)

    def reset(conn: Connection) -> tuple[dict[str, object], None]:
        found = operator_store.by_id(conn, operator_id)
        operator_store.reset_password(conn, operator_id, password_hash)
        before = {"email": found.email, "disabled": found.disabled, "locked": found.locked(now_ms())}
        return {**before, "failed_signins": found.failed_signins}, None

    await console.audited(visit, Action.OPERATOR_RESET, f"operator {operator_id}", reset)
    found = await console.read(operator_store.listing)
    email = next((o.email for o in found if o.id == operator_id), "")
    created = {"email": email, "password": password, "totp": None}
    return _page(visit, found, created=created)


@action(Action.OPERATOR_UNLOCK)
async def operator_unlock(console: Console, visit: Visit) -> Response:
    """Ends a lockout at once, password unchanged: for an operator who mistyped, not one whose password
    may be known (reset that instead)."""
    operator_id = int(visit.request.path_params["operator_id"])

    try:
        unlock = partial(operator_store.unlock, operator_id=operator_id)
        await console.audited(visit, Action.OPERATOR_UNLOCK, f"operator {operator_id}", unlock)
    except operator_store.NoOperator:
        return visit.page("refused.html", 404, reason="No such operator.")
    return RedirectResponse("/operators", status_code=303)


async def _operators(console: Console, visit: Visit, status: int = 200, **shown: object) -> Response:
    return _page(visit, await console.read(operator_store.listing), status, **shown)


def _page(visit: Visit, found: list[Operator], status: int = 200, **shown: object) -> Response:
    """The Operators page: every operator with its state now, and what the action that answers shows."""
    context = {"operators": found, "roles": list(Role), "created": None, "now": now_ms(), **shown}
    return visit.page_of("operators.html", context, status)


@page(READ_AUDIT_LOG)
async def audit(console: Console, visit: Visit) -> Response:
    query = visit.request.query_params
    actor, act = query.get("actor") or None, query.get("action") or None
    before = query.get("before")
    before_id = int(before) if before and before.isdigit() else None
    rows = await console.read(
        partial(audit_log.entries, actor=actor, action=act, before_id=before_id, limit=PAGE_SIZE + 1)
    )
    more = rows[PAGE_SIZE]["id"] if len(rows) > PAGE_SIZE else None
    actions = sorted(a.code for a in Action)
    shown = dict(rows=rows[:PAGE_SIZE], more=more, actor=actor or "", action=act or "", actions=actions)
    return visit.page_of("audit.html", shown)


ROUTES = [
    ("/operators", "GET", operator_list),
    ("/operators", "POST", operator_create),
    ("/operators/{operator_id:int}/disable", "POST", operator_disable),
    ("/operators/{operator_id:int}/reset-password", "POST", operator_reset),
    ("/operators/{operator_id:int}/unlock", "POST", operator_unlock),
    ("/audit", "GET", audit),
]
