"""Who is asking: the console session behind a request's cookie, the role its page or action needs,
the CSRF token its form must carry, and the audit log entry every action (done or refused) leaves."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from kassa.clock import now_ms
from kassa.console import credentials
from kassa.console.rendering import render
from kassa.domain.operators import Action, Role
from kassa.runtime import Services
from kassa.storage import audit_log
from kassa.storage import operators as operator_store
from kassa.storage.operators import Operator
from kassa.web.forms import form_fields

COOKIE = "kassa_console"
T = TypeVar("T")
_TOUCH_EVERY_MS = 60_000  # a session's last request is written at most once a minute


@dataclass(frozen=True, slots=True)
class Visit:
    """A signed-in request: the operator, the session's token (for CSRF) and the posted form, if any."""

    request: Request
    operator: Operator
    token: str
    form: dict[str, str]

    @property
    def csrf(self) -> str:
        return credentials.csrf_token(self.token)

    @property
    def address(self) -> str:
        return self.request.client.host if self.request.client else ""

    def page(self, template: str, status: int = 200, **context: Any) -> Response:
        return render(template, status, me=self.operator, csrf=self.csrf, Role=Role, **context)

    def page_of(self, template: str, context: dict[str, Any], status: int = 200) -> Response:
        return self.page(template, status, **context)


Handler = Callable[["Console", Visit], Awaitable[Response]]


class Console:
    """What every console handler shares: the gateway's services and the rules of sessions."""

    def __init__(self, services: Services) -> None:
        self.services = services
        settings = services.settings
        self.idle_ms = int(settings.console_idle_minutes * 60_000)
        self.lifetime_ms = int(settings.console_session_hours * 3_600_000)
        self.lockout_attempts = settings.console_lockout_attempts
        self.password_cost = settings.password_cost
        self.lockout_ms = int(settings.console_lockout_minutes * 60_000)
        self.address_attempts = settings.console_address_attempts
        # One more attempt every interval: the whole allowance refills in KASSA_CONSOLE_ADDRESS_MINUTES.
        self.address_interval_ms = max(1, int(settings.console_address_minutes * 60_000 / self.address_attempts))

    async def read(self, unit: Callable[[Connection], T]) -> T:
        return await self.services.db.read(unit)

    async def write(self, unit: Callable[[Connection], T]) -> T:
        return await self.services.db.write(unit)

    async def visit(self, request: Request) -> Visit | None:
        """The signed-in operator behind the request, or None (no cookie, unknown, expired, disabled)."""
        token = request.cookies.get(COOKIE)
        if not token:
            return None
        token_hash = credentials.token_hash(token)
        session = await self.read(partial(operator_store.session_of, token_hash=token_hash))
        now = now_ms()
        if session is None:
            return None
        expired = now - session.last_seen_at_ms > self.idle_ms or now - session.created_at_ms > self.lifetime_ms
        if expired or session.operator.disabled:
            await self.write(partial(operator_store.end_session, token_hash=token_hash))
            return None
        if now - session.last_seen_at_ms > _TOUCH_EVERY_MS:
            await self.write(partial(operator_store.touch_session, token_hash=token_hash, now_ms=now))
        return Visit(request, session.operator, token, {})

    async def audit(self, visit: Visit | None, action: Action, target: str, outcome: str, **change: Any) -> None:
        entry = _entry(visit, action, target, outcome, change.get("before"), change.get("after"))
        await self.write(partial(audit_log.append, entry=entry, now_ms=now_ms()))

    async def audited(
        self, visit: Visit, action: Action, target: str, change: Callable[[Connection], tuple[Any, Any]]
    ) -> None:
        """Runs ``change`` (which returns what was before and what is after) and appends its audit entry
        in the same transaction: no change without its entry, no entry without its change."""

        def unit(conn: Connection) -> None:
            before, after = change(conn)
            entry = _entry(visit, action, target, audit_log.DONE, before, after)
            audit_log.append(conn, entry, now_ms())

        await self.write(unit)


def _entry(visit: Visit | None, action: Action, target: str, outcome: str, before: Any, after: Any) -> audit_log.Entry:
    actor = visit.operator.email if visit else "-"
    address = visit.address if visit else ""
    return audit_log.Entry(actor, action.code, target, outcome, before, after, address)


def sign_in_again(request: Request) -> Response:
    return RedirectResponse(f"/sign-in?next={request.url.path}", status_code=303)


def page(least: Role = Role.VIEWER) -> Callable[[Handler], Callable[[Console, Request], Awaitable[Response]]]:
    """A page to read: a signed-in operator of ``least`` role or above, else sign-in or 403."""

    def wrap(handler: Handler) -> Callable[[Console, Request], Awaitable[Response]]:
        async def run(console: Console, request: Request) -> Response:
            visit = await console.visit(request)
            if visit is None:
                return sign_in_again(request)
            if visit.operator.role.rank < least.rank:
                return visit.page("refused.html", 403, reason="Your role cannot open this page.")
            return await handler(console, visit)

        return run

    return wrap


def action(act: Action) -> Callable[[Handler], Callable[[Console, Request], Awaitable[Response]]]:
    """A form that changes something: signed in, the CSRF token of this session, a role that may take
    ``act``; a refusal for role or token is audited and answered 403."""

    def wrap(handler: Handler) -> Callable[[Console, Request], Awaitable[Response]]:
        async def run(console: Console, request: Request) -> Response:
            visit = await console.visit(request)
            if visit is None:
                return sign_in_again(request)
            form = await form_fields(request)
            visit = Visit(request, visit.operator, visit.token, form or {})
            target = request.url.path
            if form is None or not credentials.csrf_matches(visit.token, form.get("csrf", "")):
                await console.audit(visit, act, target, audit_log.REFUSED, after={"reason": "csrf"})
                return visit.page("refused.html", 403, reason="The form expired or did not come from this console.")
            if not visit.operator.role.may(act):
                await console.audit(visit, act, target, audit_log.REFUSED, after={"reason": "role"})
                reason = f"Your role ({visit.operator.role.value}) cannot do this."
                return visit.page("refused.html", 403, reason=reason)
            return await handler(console, visit)

        return run

    return wrap
