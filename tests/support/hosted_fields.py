"""Hosted Fields as a merchant's server and the gateway's iframes use them (CONTRACT §18): the ephemeral
ticket and the v4 sale signed with RSA-SHA256 by oauthlib, and the tokenization the card-number iframe
posts (JSON, on the gateway's origin)."""

from __future__ import annotations

import datetime
import uuid

import httpx

from tests.support.gateway import TLS, Merchant
from tests.support.oauth import key_pair, register_key, signed_post

TEST_CARD = "4444 4444 4444 4448"  # CONTRACT §18's sandbox card


def v4_merchant(m: Merchant) -> Merchant:
    """``m`` with the test RSA key registered, as a merchant using Hosted Fields has."""
    register_key(m.gateway, m.login, key_pair()[1])
    return m


def future_expiry(years: int = 3) -> str:
    """MM/YY, as the expiry field takes it."""
    return f"12/{(datetime.date.today().year + years) % 100:02d}"


def v4_post(m: Merchant, operation: str, fields: list[tuple[str, str]], key: str | None = None) -> httpx.Response:
    """An RSA-SHA256 signed v4 request without Accept header, as the original gateway's integrations send;
    on a gateway whose clock moves, signed at its time."""
    url = f"{m.gateway.base}/api/v4/{operation}/{m.endpoint_id}"
    timestamp = m.gateway.advance(0) // 1000 if m.gateway.extra_env.get("KASSA_TEST_CLOCK") else None
    pem = key or key_pair()[0]
    return signed_post(url, fields, login=m.login, private_key_pem=pem, headers={}, timestamp=timestamp)


def ephemeral_ticket(m: Merchant) -> str:
    answer = v4_post(m, "tokenize/create-ephemeral-ticket", [])
    assert answer.status_code == 200, answer.text
    return str(answer.json()["ephemeralTicket"])


def tokenize(
    m: Merchant, ticket: str, *, pan: str = TEST_CARD, exp: str | None = None, cvv: str = "123"
) -> httpx.Response:
    body = {"ticket": ticket, "endpointId": str(m.endpoint_id), "pan": pan, "exp": exp or future_expiry(), "cvv": cvv}
    return httpx.post(f"{m.gateway.base}/hosted-fields/v1/tokenize", json=body, timeout=30, verify=TLS)


def token_for(m: Merchant, *, cvv: str = "123") -> str:
    answer = tokenize(m, ephemeral_ticket(m), cvv=cvv)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["token"])


def sale_fields(token: str, client_orderid: str | None = None, **extra: str) -> list[tuple[str, str]]:
    fields = {
        "client_orderid": client_orderid or f"hf-{uuid.uuid4().hex[:10]}",
        "order_desc": "Hosted Fields order",
        "amount": "10.42",
        "currency": "USD",
        "hosted_fields_token": token,
        "card_printed_name": "Jane Doe",
        "email": "payer@example.com",
        "ipaddress": "203.0.113.7",
        **extra,
    }
    return list(fields.items())


def sale(m: Merchant, token: str, client_orderid: str | None = None, **extra: str) -> httpx.Response:
    return v4_post(m, "sale", sale_fields(token, client_orderid, **extra))


def status(m: Merchant, order_id: str) -> dict[str, str]:
    answer = v4_post(m, "status", [("login", m.login), ("orderid", order_id)])
    assert answer.status_code == 200, answer.text
    return dict(answer.json())
