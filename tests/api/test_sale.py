"""Sale end to end over HTTP: the sandbox outcome table of CONTRACT §9, reached by polling status."""

from __future__ import annotations

import uuid

import pytest

from tests.support.gateway import Merchant

AMEX = "378282246310005"


@pytest.mark.parametrize(
    ("cvv2", "card", "status", "code"),
    [
        ("123", "4111111111111111", "approved", None),
        ("1234", AMEX, "approved", None),
        ("111", "4111111111111111", "approved", None),
        ("217", "4111111111111111", "unknown", None),
        ("555", "4111111111111111", "filtered", "555"),
        ("500", "4111111111111111", "error", "500"),
        ("101", "4111111111111111", "declined", "101"),
        ("116", "4111111111111111", "declined", "116"),
        ("119", "4111111111111111", "declined", "119"),
        ("209", "4111111111111111", "declined", "209"),
        ("999", "4111111111111111", "declined", "100"),
        ("325", "4111111111111111", "approved", None),
        ("326", "4111111111111111", "declined", "100"),
    ],
)
def test_sandbox_outcome_is_decided_by_cvv(
    merchant: Merchant, cvv2: str, card: str, status: str, code: str | None
) -> None:
    accepted = merchant.sale(f"o-{uuid.uuid4().hex[:8]}", cvv2=cvv2, credit_card_number=card)
    assert accepted.status_code == 200, accepted.text
    body = accepted.json()
    assert body["type"] == "async-response"
    assert body["status"] == "processing"
    final = merchant.wait_final(body["paynet-order-id"])
    assert final["status"] == status
    assert final.get("error-code") == code
    assert final["order-stage"] == f"sale_{status}"
    if code:
        assert final["error-message"]
