"""A copy of the database neither signs requests nor opens customer pages: control keys are stored
encrypted with the vault, browser-session tokens only as their SHA-256 (and sealed for the gateway to
repeat its own links). Rows an older Kassa wrote in clear are sealed when the gateway starts."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from alembic import command

from kassa.storage.migrate import alembic_config
from tests.support.databases import run_sql
from tests.support.gateway import TLS, Gateway, Merchant


def _cells(database_url: str, table: str) -> list[str]:
    """Every value of ``table`` as text (bytes decoded leniently), to look for a secret in."""
    rows = run_sql(database_url, f"SELECT * FROM {table}")
    return [bytes(v).decode("latin-1") if isinstance(v, bytes | memoryview) else str(v) for row in rows for v in row]


def _holds(database_url: str, table: str, secret: str) -> bool:
    return any(secret in cell for cell in _cells(database_url, table))


def _form_token(m: Merchant, client_orderid: str) -> tuple[str, str]:
    data = m.sale_fields(client_orderid, redirect_url="https://shop.example/return")
    for card_field in ("credit_card_number", "card_printed_name", "expire_month", "expire_year", "cvv2"):
        del data[card_field]
    answer = m.gateway.post(f"/api/v2/sale-form/{m.endpoint_id}", data).json()
    assert answer["type"] == "async-form-response", answer
    return answer["redirect-url"], answer["redirect-url"].rsplit("/", 1)[1]


def test_merchants_table_holds_no_plaintext_control_key_and_the_key_still_signs(shared_gateway: Gateway) -> None:
    login, key = f"m-{uuid.uuid4().hex[:10]}", f"at-rest-{uuid.uuid4().hex}"
    shared_gateway.cli("merchant", "create", "--login", login, "--control-key", key)
    endpoint = shared_gateway.cli("endpoint", "create", "--merchant", login, "--currency", "USD")
    assert not _holds(shared_gateway.database_url, "merchants", key)
    merchant = Merchant(shared_gateway, login, key, endpoint["id"])
    order = merchant.sale("rest-1").json()["paynet-order-id"]
    assert merchant.wait_final(order)["status"] == "approved"
    listed = {m["login"]: m for m in shared_gateway.cli("merchant", "list")}
    assert listed[login]["control_key"] == key  # the operator still reads it back


def test_browser_sessions_table_holds_no_usable_token_and_the_pages_still_open(merchant: Merchant) -> None:
    url, token = _form_token(merchant, "rest-form-1")
    assert not _holds(merchant.gateway.database_url, "browser_sessions", token)
    assert httpx.get(url, verify=TLS).status_code == 200
    repeated = _form_token(merchant, "rest-form-1")[0]  # the same request answers the same address
    assert repeated == url

    order = merchant.sale("rest-3ds-1", cvv2="321").json()["paynet-order-id"]
    step = merchant.wait_stage(order, leaving="sale_processing")
    checkout = step["redirect-to"]
    assert not _holds(merchant.gateway.database_url, "browser_sessions", checkout.rsplit("/", 1)[1])
    assert httpx.get(checkout, verify=TLS).status_code == 200
    assert merchant.wait_stage(order, leaving="sale_processing")["redirect-to"] == checkout


def _legacy_rows(database_url: str, key: str, token: str) -> int:
    """A merchant, an endpoint and an open hosted form as Kassa before the sealing wrote them (schema
    0006, in clear); returns the endpoint's id. Ids come from the database (PostgreSQL's sequences)."""
    command.upgrade(alembic_config(database_url), "0006")
    merchant = "(SELECT id FROM merchants WHERE login = 'old')"
    endpoint = f"(SELECT id FROM endpoints WHERE merchant_id = {merchant})"
    order = "(SELECT id FROM orders WHERE client_orderid = 'old-1')"
    statements = [
        f"INSERT INTO merchants (login, control_key, classic, created_at_ms) VALUES ('old', '{key}', false, 0)",
        "INSERT INTO endpoints (merchant_id, kind, currency, mode, classic, descriptor, multi_capture, enabled,"
        f" created_at_ms) VALUES ({merchant}, 'endpoint', 'USD', 'sandbox', false, '', false, true, 0)",
        "INSERT INTO orders (merchant_id, endpoint_id, client_orderid, tx_type, amount, currency, email,"
        " order_desc, customer, request_fingerprint, created_at_ms)"
        f" VALUES ({merchant}, {endpoint}, 'old-1', 'sale', 1000, 'USD', '', '', '{{}}', 'f', 0)",
        "INSERT INTO transactions (order_id, serial_number, tx_type, stage, amount, currency, created_at_ms,"
        f" updated_at_ms) VALUES ({order}, '{uuid.uuid4()}', 'sale', 'processing', 1000, 'USD', 0, 0)",
        "INSERT INTO browser_sessions (token, kind, order_id, transaction_id, expires_at_ms, created_at_ms)"
        f" VALUES ('{token}', 'form', {order}, (SELECT id FROM transactions WHERE order_id = {order}),"
        " 9999999999999, 0)",
    ]
    for statement in statements:
        run_sql(database_url, statement)
    return int(run_sql(database_url, f"SELECT {endpoint}")[0][0])


@pytest.mark.empty_database
def test_rows_written_in_clear_before_the_upgrade_are_sealed_at_start_and_keep_working(
    database_url: str, gateway_factory: Callable[..., Gateway]
) -> None:
    key, token = f"legacy-{uuid.uuid4().hex}", "legacy-token-" + uuid.uuid4().hex
    endpoint_id = _legacy_rows(database_url, key, token)
    gateway = gateway_factory()
    assert not _holds(database_url, "merchants", key)
    assert not _holds(database_url, "browser_sessions", token)
    assert httpx.get(f"{gateway.base}/form/{token}", verify=TLS).status_code == 200
    merchant = Merchant(gateway, "old", key, endpoint_id)
    answer: Any = merchant.sale("after-upgrade-1").json()
    assert answer["type"] == "async-response", answer
    assert merchant.wait_final(answer["paynet-order-id"])["status"] == "approved"
