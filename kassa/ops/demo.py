"""The sandbox demo merchant that ``make serve`` creates on first start, and the banner it prints."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import click
from sqlalchemy import Connection

from kassa.clock import now_ms
from kassa.domain.merchants import Mode
from kassa.domain.money import currency, format_amount
from kassa.runtime import open_store
from kassa.settings import Settings
from kassa.signing.control import control_of
from kassa.storage import balances, merchant_keys
from kassa.storage import ledger as ledger_store
from kassa.storage import merchants as merchant_store
from kassa.vault.keys import Vault, load_vault

DEMO_LOGIN = "demo"
DEMO_BALANCE = 1_000_000  # 10,000.00 USD


@dataclass(frozen=True, slots=True)
class Demo:
    login: str
    control_key: str
    endpoint_id: int
    keys: int = 0  # RSA public keys in force for the sandbox
    available: int = 0  # USD minor units the demo's payouts may draw on


def ensure(settings: Settings) -> Demo:
    vault = load_vault(settings.vault_key, settings.vault_key_file)
    db = open_store(settings, vault, threads=1)
    try:
        return db.write_sync(lambda conn: _ensure(conn, vault))
    finally:
        db.close()


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


def _available(conn: Connection, merchant_id: int) -> int:
    return next((b.available for b in balances.of_merchant(conn, merchant_id) if b.currency == "USD"), 0)


def announce(demo: Demo, settings: Settings, host: str, port: int) -> None:
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
