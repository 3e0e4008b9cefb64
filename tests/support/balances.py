"""Merchants' sandbox balances for tests of what draws on them, written and read straight in the gateway's
database (what ``kassa balance credit`` and ``kassa balance show`` do; tests/api/test_payouts.py and
tests/ops cover the commands themselves): a command's start-up is half a second of CPU a call."""

from __future__ import annotations

import time
from typing import Any

from kassa.domain import money
from kassa.domain.merchants import Mode
from kassa.storage import balances as balance_store
from kassa.storage import ledger as ledger_store
from kassa.storage import merchants as merchant_store
from kassa.storage.database import open_database
from tests.support.gateway import Merchant


def credit(m: Merchant, amount: str) -> None:
    """Credits ``amount`` (major units) of the merchant's currency to its sandbox balance."""
    minor = money.parse_amount(amount, money.currency(m.currency))

    def change(conn: Any) -> None:
        merchant_id = merchant_store.merchant_id(conn, m.login)
        assert ledger_store.adjust(conn, merchant_id, m.currency, minor, "test", int(time.time() * 1000))

    db = open_database(m.gateway.database_url, threads=1)
    try:
        db.write_sync(change)
    finally:
        db.close()


def available(m: Merchant) -> str:
    """The merchant's available sandbox balance in its currency, as ``kassa balance show`` prints it."""
    db = open_database(m.gateway.database_url, threads=1)
    try:
        rows = db.read_sync(lambda conn: balance_store.of_merchant(conn, merchant_store.merchant_id(conn, m.login)))
    finally:
        db.close()
    found = [b for b in rows if b.currency == m.currency and b.mode is Mode.SANDBOX]
    return money.format_amount(found[0].available, money.currency(m.currency)) if found else "none"
