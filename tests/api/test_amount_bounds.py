"""Amounts are bounded so that every sum the ledger makes fits its columns on SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from tests.support.gateway import Merchant
from tests.support.operations import LEDGER_OK, final, ledger_check

LARGEST_KWD = "1000000000.000"  # 10^12 fils


def test_amount_above_the_largest_is_refused_naming_amount(make_merchant: Callable[..., Merchant]) -> None:
    shop = make_merchant("KWD")
    for amount in ("999999999999999.999", "1000000000.001"):
        answer = shop.sale(f"o-{uuid.uuid4().hex[:10]}", amount=amount)
        assert answer.status_code == 400, answer.text
        body = answer.json()
        assert body["error-code"] == "1"
        assert body["error-message"] == "amount must be at most 1000000000.000 KWD"


def test_many_sales_at_the_largest_amount_keep_the_ledger_commands_working(
    make_merchant: Callable[..., Merchant],
) -> None:
    shop = make_merchant("KWD")
    for _ in range(12):
        assert final(shop, shop.sale(f"o-{uuid.uuid4().hex[:10]}", amount=LARGEST_KWD))["status"] == "approved"
    [balance] = shop.gateway.cli("ledger", "balance", "--merchant", shop.login)
    assert balance == {
        "currency": "KWD",
        "mode": "sandbox",
        "held": "0.000",
        "captured_unsettled": "12000000000.000",
        "settled": "0.000",
        "reserved": "0.000",
    }
    assert ledger_check(shop) == LEDGER_OK
