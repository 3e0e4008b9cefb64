"""Signing in (password, and a one-time code for admins and everyone who enrolled one) and out."""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass
from functools import partial

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from kassa.clock import date_time_text, now_ms
from kassa.console import credentials
from kassa.console.access import COOKIE, Console, Visit, action
from kassa.console.rendering import render
from kassa.domain.operators import Action, Role
from kassa.ratelimit import address_key, retry_after
from kassa.storage import audit_log, sign_in_addresses
from kassa.storage import operators as operator_store
from kassa.storage.operators import Credentials
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

    @property
    def address_key(self) -> str:
        return address_key(self.address)[:64]


async def sign_in(console: Console, request: Request) -> Response:
    """Counted before the password is checked (for its address and its operator), decided after it in one
    transaction with what it changes: attempts sent at once all count, and none is let in on a state
    another changed meanwhile. Every refusal but the address's answers the same, whatever its reason."""
    form = await form_fields(request) or {}
    pre = request.cookies.get(PRE_COOKIE, "")
    if not pre or not credentials.csrf_matches(pre, form.get("csrf", "")):
        return await sign_in_form(console, request, "The form expired: please sign in again.", 403)
    address = request.client.host if request.client else ""
    attempt = _Attempt(form.get("email", "").strip().lower(), form.get("password", ""), form.get("code", ""), address)
    refused, begun = await console.write(partial(_begin, console=console, attempt=attempt, now=now_ms()))
    if refused is not None:
        return await _too_many(console, request, refused.wait_ms)
    # Argon2 takes tens of milliseconds by design: off the event loop. Against a decoy when there is nothing
    # to check (no such operator, disabled, locked out), so that the time taken tells none of them apart.
    stored = None if begun is None else begun.password_hash
    right = await asyncio.to_thread(credentials.password_matches, stored, attempt.password, console.password_cost)
    checked = None if begun is None else _checked(begun, right, attempt.code, now_ms())
    # Redone only once the sign-in is right, password and code: otherwise its time would tell a right password.
    rehash = None
    if checked is not None and checked.right:
        cost = console.password_cost
        rehash = await asyncio.to_thread(
            credentials.rehashed, checked.credentials.password_hash, attempt.password, cost
        )
    token = credentials.new_session_token()
    finish = partial(
        _finish, console=console, attempt=attempt, checked=checked, rehash=rehash, token=token, now=now_ms()
    )
    if not await console.write(finish):
        return await sign_in_form(console, request, _WRONG, 401)
    response = RedirectResponse(_next(form.get("next", "/")), status_code=303)
    _cookie(response, request, COOKIE, token)
    response.delete_cookie(PRE_COOKIE, path="/")
    return response


def _begin(
    conn: Connection, console: Console, attempt: _Attempt, now: int
) -> tuple[sign_in_addresses.Refused | None, Credentials | None]:
    """The address's refusal, or the credentials of the sign-in now counted (None: nothing to sign in)."""
    limit = console.address_attempts
    refused = sign_in_addresses.take(conn, attempt.address_key, now, console.address_interval_ms, limit)
    if refused is not None:
        if refused.first:  # not every refusal: a flood would fill the append-only log
            _refused(conn, attempt, "address limit", now, until=date_time_text(now + refused.wait_ms))
        return refused, None
    return None, operator_store.begin_signin(conn, console.services.vault, attempt.email, now)


async def _too_many(console: Console, request: Request, wait_ms: int) -> Response:
    minutes = -(-wait_ms // 60_000)
    problem = f"Too many failed sign-ins from your address: try again in {minutes} minute{'s' * (minutes > 1)}."
    response = await sign_in_form(console, request, problem, 429)
    response.headers["retry-after"] = retry_after(wait_ms)
    return response


@dataclass(frozen=True, slots=True)
class _Checked:
    """A sign-in's credentials against what was typed: ``right`` when the password and, where one is
    needed, the code are (as far as what was read knows); ``step``, the code's TOTP step (None: no code)."""

    credentials: Credentials
    right: bool
    step: int | None


def _checked(begun: Credentials, password_right: bool, code: str, now: int) -> _Checked:
    secret = begun.totp_secret
    if not password_right or (secret is None and begun.operator.role is Role.ADMIN):
        return _Checked(begun, False, None)
    if secret is None:
        return _Checked(begun, True, None)
    step = credentials.totp_step(secret, code, now // 1000, begun.totp_last_step)
    return _Checked(begun, step is not None, step)


def _finish(
    conn: Connection,
    console: Console,
    attempt: _Attempt,
    checked: _Checked | None,
    rehash: str | None,
    token: str,
    now: int,
) -> bool:
    """Lets the sign-in in or counts its failure, with its audit entries, in one transaction; let in, the
    password's hash is replaced by ``rehash`` (one at the cost now set) when there is one."""
    if checked is None:
        _refused(conn, attempt, _not_begun(conn, attempt.email), now)
        return False
    if checked.right and _let_in(conn, console, attempt, checked, token, now):
        if rehash is not None:
            operator_store.replace_hash(conn, checked.credentials.operator.id, rehash)
        return True
    reason = "right, but locked meanwhile or sign-ins at once" if checked.right else "wrong password or code"
    _refused(conn, attempt, reason, now)
    operator_id = checked.credentials.operator.id
    until = now + console.lockout_ms
    count = operator_store.lock_if_failed(conn, operator_id, console.lockout_attempts, until)
    if count is not None:
        after = {"locked_until": date_time_text(until), "failed_signins": count}
        target = f"operator {operator_id}"
        lock = audit_log.Entry(attempt.email, Action.OPERATOR_LOCK.code, target, after=after, address=attempt.address)
        audit_log.append(conn, lock, now)
    return False


def _let_in(conn: Connection, console: Console, attempt: _Attempt, checked: _Checked, token: str, now: int) -> bool:
    """A session, and the address's attempt given back, if the operator's row still lets this sign-in in."""
    sign_in_addresses.hold(conn, attempt.address_key)
    if not operator_store.accept_signin(conn, checked.credentials, checked.step, console.lockout_attempts):
        return False
    sign_in_addresses.give_back(conn, attempt.address_key, console.address_interval_ms)
    # Sessions that ran out are forgotten here: sign-ins are rare, and nothing else needs them gone sooner.
    operator_store.prune_sessions(conn, now - console.idle_ms, now - console.lifetime_ms)
    operator_store.open_session(conn, credentials.token_hash(token), checked.credentials.operator.id, now)
    entry = audit_log.Entry(attempt.email, Action.SIGN_IN.code, "", audit_log.DONE, address=attempt.address)
    audit_log.append(conn, entry, now)
    return True


def _not_begun(conn: Connection, email: str) -> str:
    """Why a sign-in was not counted: for the audit log alone, never the answer."""
    try:
        found = operator_store.by_email(conn, email)
    except operator_store.NoOperator:
        return "no such operator"
    return "disabled" if found.disabled else "locked"


def _refused(conn: Connection, attempt: _Attempt, reason: str, now: int, **more: str) -> None:
    actor = attempt.email[:254] or "-"
    why = {"reason": reason, **more}
    entry = audit_log.Entry(actor, Action.SIGN_IN.code, "", audit_log.REFUSED, after=why, address=attempt.address)
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
