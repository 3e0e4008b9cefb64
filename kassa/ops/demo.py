"""The sandbox demo merchant that ``make serve`` creates on first start, and the banner it prints."""

from __future__ import annotations

import base64
import dataclasses
import secrets
from dataclasses import dataclass

import click
from sqlalchemy import Connection

from kassa.clock import now_ms
from kassa.console import credentials
from kassa.domain.acquirers import SANDBOX_NAME, LinkSettings
from kassa.domain.merchants import Mode
from kassa.domain.money import currency, format_amount
from kassa.domain.operators import PasswordCost, Role
from kassa.domain.routing import Entry
from kassa.settings import Settings
from kassa.signing.control import control_of
from kassa.storage import acquirers as acquirer_store
from kassa.storage import balances, merchant_keys
from kassa.storage import ledger as ledger_store
from kassa.storage import merchants as merchant_store
from kassa.storage import operators as operator_store
from kassa.storage.sealing import open_store
from kassa.vault.keys import Vault, load_vault

DEMO_LOGIN = "demo"
DEMO_BALANCE = 1_000_000  # 10,000.00 USD
DEMO_OPERATOR = "admin@demo.kassa.local"
DEMO_ACQUIRER = "demo-acquirer"  # the connection `kassa serve --demo --demo-acquirer HOST:PORT` routes to
CONSOLE = ("127.0.0.1", 8081)
OPS = ("127.0.0.1", 8082)


@dataclass(frozen=True, slots=True)
class Demo:
    login: str
    control_key: str
    endpoint_id: int
    keys: int = 0  # RSA public keys in force for the sandbox
    available: int = 0  # USD minor units the demo's payouts may draw on
    operator: DemoOperator | None = None


@dataclass(frozen=True, slots=True)
class DemoOperator:
    """The console's first admin. Its password and one-time code secret are derived from the vault key,
    so every start prints the same ones without storing them in clear; ``current`` is False once someone
    reset the password."""

    email: str
    password: str
    totp_secret: str
    current: bool


def ensure(settings: Settings, acquirer: tuple[str, int] | None = None) -> Demo:
    """The demo merchant, made on first start; its payments go to ``acquirer``, an ISO 8583 host (``kassa
    acquirer-sim``), when given, else to the built-in sandbox."""
    vault = load_vault(settings.vault_source)
    db = open_store(settings, vault, threads=1)
    try:
        merchant = db.write_sync(lambda conn: _routed(conn, vault, _ensure(conn, vault), acquirer))
        operator = db.write_sync(lambda conn: _operator(conn, vault, settings.password_cost))
        return dataclasses.replace(merchant, operator=operator)
    finally:
        db.close()


def _operator(conn: Connection, vault: Vault, cost: PasswordCost) -> DemoOperator:
    password = base64.urlsafe_b64encode(bytes.fromhex(vault.fingerprint("kassa-demo-operator/password"))[:15])
    secret = base64.b32encode(bytes.fromhex(vault.fingerprint("kassa-demo-operator/totp"))[:20]).decode()
    demo = DemoOperator(DEMO_OPERATOR, password.decode(), secret, True)
    found = operator_store.credentials_of(conn, vault, DEMO_OPERATOR)
    if found is None:
        password_hash = credentials.hash_password(demo.password, cost)
        operator_store.create(conn, vault, DEMO_OPERATOR, Role.ADMIN, password_hash, secret, now_ms())
        return demo
    current = credentials.password_matches(found.password_hash, demo.password, cost) and found.totp_secret == secret
    return dataclasses.replace(demo, current=current)


def _ensure(conn: Connection, vault: Vault) -> Demo:
    now = now_ms()
    try:
        merchant = merchant_store.merchant_by_login(conn, vault, DEMO_LOGIN)
    except merchant_store.NotFound:
        merchant = merchant_store.create_merchant(conn, vault, DEMO_LOGIN, secrets.token_hex(16), False, now)
    endpoints = merchant_store.list_endpoints(conn, vault)
    owned = [e for e in endpoints if e.merchant.id == merchant.id and not e.is_group]
    if owned:
        keys = len(merchant_keys.active_pems(conn, merchant.id, Mode.SANDBOX))
        return Demo(merchant.login, merchant.control_key, owned[0].id, keys, _available(conn, merchant.id))
    spec = merchant_store.EndpointSpec(merchant.id, "USD", Mode.SANDBOX, False, "KASSA DEMO", None, None, True)
    endpoint_id = merchant_store.create_endpoint(conn, spec, now)
    # Sandbox money, so that a payout tried first is approved rather than declined for an empty balance.
    ledger_store.adjust(conn, merchant.id, "USD", DEMO_BALANCE, "sandbox money for the demo's payouts", now)
    return Demo(merchant.login, merchant.control_key, endpoint_id, 0, DEMO_BALANCE)


def _routed(conn: Connection, vault: Vault, demo: Demo, acquirer: tuple[str, int] | None) -> Demo:
    """The demo endpoint routed to the sandbox, or to the connection ``demo-acquirer`` at ``acquirer``."""
    if acquirer is None:
        acquirer_store.set_route(conn, demo.endpoint_id, [Entry(SANDBOX_NAME)])
        return demo
    host, port = acquirer
    link = LinkSettings(host, port, False, "1", "DEMO0001", "KASSA DEMO     ", "5999")
    try:
        acquirer_store.set_link(conn, acquirer_store.by_name(conn, DEMO_ACQUIRER).id, link, now_ms())
    except acquirer_store.NoConnection:
        acquirer_store.create(conn, vault, DEMO_ACQUIRER, link, None, now_ms())
    acquirer_store.set_route(conn, demo.endpoint_id, [Entry(DEMO_ACQUIRER)])
    return demo


def _available(conn: Connection, merchant_id: int) -> int:
    return next((b.available for b in balances.of_merchant(conn, merchant_id) if b.currency == "USD"), 0)


def announce(
    demo: Demo,
    settings: Settings,
    host: str,
    port: int,
    console: tuple[str, int] | None,
    ops: tuple[str, int] | None,
) -> None:
    base = f"http://{host}:{port}{settings.prefix}"
    client_orderid = "demo-1"
    control = control_of([str(demo.endpoint_id), client_orderid, "1042", "cardholder@example.com"], demo.control_key)
    fields = (
        f"client_orderid={client_orderid}&order_desc=Demo+order&amount=10.42&currency=USD"
        "&email=cardholder@example.com&ipaddress=203.0.113.7&credit_card_number=4111111111111111"
        f"&card_printed_name=Jane+Doe&expire_month=12&expire_year=2030&cvv2=123&control={control}"
    )
    status_fields = f"login={demo.login}&client_orderid={client_orderid}"
    status_control = control_of([demo.login, client_orderid, ""], demo.control_key)
    click.echo(
        "\n".join(
            [
                "Kassa sandbox is ready.",
                f"  login:        {demo.login}",
                f"  control key:  {demo.control_key}",
                f"  endpoint id:  {demo.endpoint_id} (USD, sandbox)",
                "A sale:",
                f"  curl -s -H 'Accept: application/vnd.pay+json' -d '{fields}' {base}/api/v2/sale/{demo.endpoint_id}",
                "Its status:",
                f"  curl -s -H 'Accept: application/vnd.pay+json' -d '{status_fields}&control={status_control}'"
                f" {base}/api/v2/status/{demo.endpoint_id}",
                *_oauth_lines(demo),
                *_console_lines(demo.operator, console),
                *_ops_lines(ops),
                "",
            ]
        )
    )


def _oauth_lines(demo: Demo) -> list[str]:
    """How to sign with OAuth: HMAC-SHA1 needs nothing more; RSA-SHA256 needs a key the merchant makes,
    so the demo shows the commands rather than making a private key nobody asked for."""
    lines = [
        "OAuth 1.0a (payout, the v4 operations): scripts in docs/api.md, Signing with OAuth.",
        "  HMAC-SHA1: the control key above.",
        f"  Payouts draw on the sandbox balance: {format_amount(demo.available, currency('USD'))} USD available"
        f" (kassa balance show|credit --merchant {demo.login}).",
    ]
    if demo.keys:
        return [
            *lines,
            f"  RSA-SHA256: {demo.keys} sandbox key(s) registered (kassa key list --merchant {demo.login}).",
        ]
    return [
        *lines,
        "  RSA-SHA256: make a key pair and register its public half:",
        "    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out demo-private.pem",
        "    openssl pkey -in demo-private.pem -pubout -out demo-public.pem",
        f"    kassa key add --merchant {demo.login} --mode sandbox --pem demo-public.pem",
    ]


def _ops_lines(ops: tuple[str, int] | None) -> list[str]:
    if ops is None:
        return []
    host, port = ops
    return [f"Metrics and health: http://{host}:{port}/metrics, /livez, /readyz (docs/operations.md)"]


def _console_lines(operator: DemoOperator | None, console: tuple[str, int] | None) -> list[str]:
    if operator is None or console is None:
        return []
    host, port = console
    lines = [f"Operator console: http://{host}:{port}/ (this machine only)"]
    if not operator.current:
        return [*lines, f"  {operator.email}: its password was changed (kassa operator reset-password)."]
    code = f".venv/bin/python -c 'import pyotp; print(pyotp.TOTP(\"{operator.totp_secret}\").now())'"
    return [
        *lines,
        f"  email:     {operator.email} (admin)",
        f"  password:  {operator.password}",
        f"  one-time code: add the secret {operator.totp_secret} to an authenticator app, or: {code}",
    ]
