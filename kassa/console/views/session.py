"""Signing in (password, and a one-time code for admins and everyone who enrolled one) and out."""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass
from functools import partial

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from kassa.clock import now_ms
from kassa.console import credentials
from kassa.console.access import COOKIE, Console, Visit, action
from kassa.console.rendering import render
from kassa.domain.operators import Action, Role
from kassa.storage import audit_log
from kassa.storage import operators as operator_store
from kassa.web.forms import form_fields

PRE_COOKIE = "kassa_console_pre"  # the sign-in form's own CSRF secret, before there is a session
_WRONG = "Wrong email, password or code."


def _cookie(response: Response, request: Request, name: str, value: str, max_age: int | None = None) -> None:
    secure = request.url.scheme == "https"
    response.set_cookie(name, value, max_age=max_age, path="/", secure=secure, httponly=True, samesite="strict")


async def sign_in_form(console: Console, request: Request, problem: str = "", status: int = 200) -> Response:
    pre = secrets.token_urlsafe(24)
    nxt = _next(request.query_params.get("next", "/"))
    response = render("sign_in.html", status, csrf=credentials.csrf_token(pre), problem=problem, next=nxt)
    _cookie(response, request, PRE_COOKIE, pre, max_age=3600)
    return response


def _next(path: str) -> str:
    """Only a path of this console: never another site (an open redirect)."""
    return path if path.startswith("/") and not path.startswith("//") and "\\" not in path else "/"


@dataclass(frozen=True, slots=True)
class _Attempt:
    email: str
    password: str
    code: str
    address: str


async def sign_in(console: Console, request: Request) -> Response:
    form = await form_fields(request) or {}
    pre = request.cookies.get(PRE_COOKIE, "")
    if not pre or not credentials.csrf_matches(pre, form.get("csrf", "")):
        return await sign_in_form(console, request, "The form expired: please sign in again.", 403)
    address = request.client.host if request.client else ""
    attempt = _Attempt(form.get("email", "").strip().lower(), form.get("password", ""), form.get("code", ""), address)
    problem, operator_id, step = await _check(console, attempt)
    if problem:
        return await sign_in_form(console, request, problem, 401)
    assert operator_id is not None
    token = credentials.new_session_token()
    opened = partial(_open, console=console, attempt=attempt, operator_id=operator_id, step=step, token=token)
    await console.write(opened)
    response = RedirectResponse(_next(form.get("next", "/")), status_code=303)
    _cookie(response, request, COOKIE, token)
    response.delete_cookie(PRE_COOKIE, path="/")
    return response


async def _check(console: Console, attempt: _Attempt) -> tuple[str, int | None, int | None]:
    """A refusal's message, or the operator and the TOTP step of the accepted code."""
    vault = console.services.vault
    found = await console.read(partial(operator_store.credentials_of, vault=vault, email=attempt.email))
    stored = None if found is None else found.password_hash
    # Argon2 takes tens of milliseconds by design: off the event loop.
    right = await asyncio.to_thread(credentials.password_matches, stored, attempt.password)
    if found is None:
        await _refused(console, attempt, "no such operator")
        return _WRONG, None, None
    now = now_ms()
    operator = found.operator
    if operator.disabled:
        await _refused(console, attempt, "disabled")
        return _WRONG, None, None
    if operator.locked(now):
        await _refused(console, attempt, "locked")
        return "Too many failed sign-ins: this account is locked for a while (an admin can reset it).", None, None
    step = None
    needs_code = found.totp_secret is not None or operator.role is Role.ADMIN
    if right and needs_code:
        secret, last = found.totp_secret, found.totp_last_step
        step = None if secret is None else credentials.totp_step(secret, attempt.code, now // 1000, last)
        right = step is not None
    if not right:
        locked = await console.write(partial(_failed, operator_id=operator.id, console=console, now=now))
        await _refused(console, attempt, "locked now" if locked else "wrong password or code")
        return _WRONG, None, None
    return "", operator.id, step


def _failed(conn: Connection, operator_id: int, console: Console, now: int) -> bool:
    settings = console.services.settings
    lock_ms = int(settings.console_lockout_minutes * 60_000)
    return operator_store.failed_signin(conn, operator_id, settings.console_lockout_attempts, lock_ms, now)


async def _refused(console: Console, attempt: _Attempt, reason: str) -> None:
    actor = attempt.email[:254] or "-"
    why = {"reason": reason}
    entry = audit_log.Entry(actor, Action.SIGN_IN.code, "", audit_log.REFUSED, None, why, attempt.address)
    await console.write(partial(audit_log.append, entry=entry, now_ms=now_ms()))


def _open(
    conn: Connection, console: Console, attempt: _Attempt, operator_id: int, step: int | None, token: str
) -> None:
    now = now_ms()
    # Sessions that ran out are forgotten here: sign-ins are rare, and nothing else needs them gone sooner.
    operator_store.prune_sessions(conn, now - console.idle_ms, now - console.lifetime_ms)
    operator_store.signed_in(conn, operator_id, step)
    operator_store.open_session(conn, credentials.token_hash(token), operator_id, now)
    entry = audit_log.Entry(attempt.email, Action.SIGN_IN.code, "", audit_log.DONE, address=attempt.address)
    audit_log.append(conn, entry, now)


@action(Action.SIGN_OUT)
async def sign_out(console: Console, visit: Visit) -> Response:
    token_hash = credentials.token_hash(visit.token)

    def end(conn: Connection) -> tuple[None, None]:
        operator_store.end_session(conn, token_hash)
        return None, None

    await console.audited(visit, Action.SIGN_OUT, "", end)
    response = RedirectResponse("/sign-in", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


ROUTES = [
    ("/sign-in", "GET", sign_in_form),
    ("/sign-in", "POST", sign_in),
    ("/sign-out", "POST", sign_out),
]
