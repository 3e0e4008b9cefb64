"""Operators and the console, driven as an operator would: operators made with ``kassa operator create``,
signed in through the sign-in form (with httpx, or in Chromium with Playwright)."""

from __future__ import annotations

import asyncio
import itertools
import random
import re
import time
import uuid
from dataclasses import dataclass, field

import httpx
import pyotp
from playwright.sync_api import Page

from tests.support.gateway import TEST_PASSWORD_COST, TLS, Gateway

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@dataclass
class Login:
    email: str
    password: str
    totp_secret: str | None
    last_step: int = field(default=0)

    def code(self) -> str:
        """A one-time code not used before (each is accepted once): this 30-second step's, or the next
        one's when this one was used (the console accepts a neighbouring step for clock drift)."""
        if self.totp_secret is None:
            return ""
        step = max(int(time.time()) // 30, self.last_step + 1)
        self.last_step = step
        return pyotp.TOTP(self.totp_secret).at(step * 30)


def new_operator(gateway: Gateway, role: str, *, totp: bool = False, cost: str = TEST_PASSWORD_COST) -> Login:
    """An operator written straight to the gateway's database (the rows ``kassa operator create`` writes;
    tests/ops covers the command): a command's start-up cost a second a test. Its hash is of ``cost``,
    by default the one test gateways are set to."""
    from kassa.console import credentials
    from kassa.domain.operators import PasswordCost, Role
    from kassa.settings import Settings
    from kassa.storage import operators as store
    from kassa.storage.database import open_database
    from kassa.vault.keys import load_vault

    email = f"{role}-{uuid.uuid4().hex[:8]}@ops.example"
    password = credentials.new_password()
    secret = credentials.new_totp_secret() if totp or role == "admin" else None
    vault = load_vault(Settings.from_env(gateway.env).vault_source)
    password_hash = credentials.hash_password(password, PasswordCost.parse(cost))
    db = open_database(gateway.database_url, threads=1)
    try:
        db.write_sync(
            lambda conn: store.create(conn, vault, email, Role(role), password_hash, secret, int(time.time() * 1000))
        )
    finally:
        db.close()
    return Login(email, password, secret)


def hash_cost_of(gateway: Gateway, email: str) -> str:
    """The Argon2id cost the operator's stored password hash was made at, as the hash writes it."""
    from kassa.settings import Settings
    from kassa.storage import operators as store
    from kassa.storage.database import open_database
    from kassa.vault.keys import load_vault

    vault = load_vault(Settings.from_env(gateway.env).vault_source)
    db = open_database(gateway.database_url, threads=1)
    try:
        found = db.read_sync(lambda conn: store.credentials_of(conn, vault, email))
    finally:
        db.close()
    assert found is not None
    return found.password_hash.split("$")[3]


# The addresses of 198.18.0.0/15 (kept for tests) whose last number is 1 to 254, handed out in turn from a
# random start: drawn at random, two of the hundreds a test process uses met now and then, and one test's
# failed sign-in counted against another's allowance.
_ADDRESS_SPAN = 2 * 256 * 254
_addresses = itertools.count(random.randrange(_ADDRESS_SPAN))


def new_address() -> str:
    """A client address of its own, sent as ``X-Forwarded-For``: the test runner's 127.0.0.1 is a trusted
    proxy by default. Tests' failed sign-ins then count against their own address's limit, not one all tests
    share."""
    second, rest = divmod(next(_addresses) % _ADDRESS_SPAN, 256 * 254)
    third, fourth = divmod(rest, 254)
    return f"198.{18 + second}.{third}.{fourth + 1}"


def csrf_of(html: str) -> str:
    found = _CSRF.search(html)
    assert found, "no CSRF token on the page"
    return found[1]


class _AsBrowsersReconnect(httpx.HTTPTransport):
    """Sends a request once more, on a new connection, when the server closed the kept-alive connection it
    went out on without answering, as browsers do: the server closes a connection idle for its keep-alive
    timeout (uvicorn's 5 s), and a request sent at that moment is never read. A client kept for the session
    (``console_as``) idles that long between tests."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return super().handle_request(request)
        except httpx.RemoteProtocolError:
            return super().handle_request(request)


class ConsoleClient:
    """The console over HTTP, as a browser without JavaScript uses it."""

    def __init__(self, gateway: Gateway, *, address: str | None = None) -> None:
        self.address = address or new_address()
        headers = {"X-Forwarded-For": self.address}
        self.http = httpx.Client(
            base_url=gateway.console,
            follow_redirects=False,
            timeout=30,
            headers=headers,
            transport=_AsBrowsersReconnect(verify=TLS),
        )

    def sign_in(self, login: Login, *, password: str | None = None, code: str | None = None) -> httpx.Response:
        form = self.http.get("/sign-in")
        fields = {
            "csrf": csrf_of(form.text),
            "email": login.email,
            "password": login.password if password is None else password,
            "code": login.code() if code is None else code,
            "next": "/",
        }
        return self.http.post("/sign-in", data=fields)

    def get(self, path: str, **params: str) -> httpx.Response:
        return self.http.get(path, params=params)

    def post(self, path: str, fields: dict[str, str], *, from_page: str | None = None) -> httpx.Response:
        """Posts a form with the CSRF token of ``from_page`` (default: the console's overview)."""
        token = csrf_of(self.get(from_page or "/").text)
        return self.http.post(path, data={"csrf": token, **fields})

    def close(self) -> None:
        self.http.close()


@dataclass
class SignIn:
    """One sign-in of a burst: ``login``'s own password and a fresh code unless others are given."""

    login: Login
    password: str | None = None
    code: str | None = None
    address: str | None = None  # default: an address of its own


def sign_in_together(gateway: Gateway, attempts: list[SignIn]) -> list[httpx.Response]:
    """Each attempt from a client of its own: every sign-in form is fetched first, then all are posted at
    once. The answers in the order of ``attempts``."""
    fields = [
        {"email": a.login.email, "password": a.login.password if a.password is None else a.password,
         "code": a.login.code() if a.code is None else a.code, "next": "/"}
        for a in attempts
    ]  # fmt: skip

    async def burst() -> list[httpx.Response]:
        clients = [
            httpx.AsyncClient(
                base_url=gateway.console,
                timeout=300,
                headers={"X-Forwarded-For": a.address or new_address()},
                verify=TLS,
            )
            for a in attempts
        ]
        try:
            forms = await asyncio.gather(*(client.get("/sign-in") for client in clients))
            posts = (
                client.post("/sign-in", data={**f, "csrf": csrf_of(form.text)})
                for client, form, f in zip(clients, forms, fields, strict=True)
            )
            return list(await asyncio.gather(*posts))
        finally:
            await asyncio.gather(*(client.aclose() for client in clients))

    return asyncio.run(burst())


def sign_in_page(page: Page, gateway: Gateway, login: Login) -> None:
    """Signs in through the form in Chromium; ends on the overview."""
    page.goto(f"{gateway.console}/sign-in")
    page.get_by_label("Email").fill(login.email)
    page.get_by_label("Password").fill(login.password)
    if login.totp_secret:
        page.get_by_label("One-time code").fill(login.code())
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{gateway.console}/")
