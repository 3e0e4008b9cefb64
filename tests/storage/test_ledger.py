"""Ledger sums are exact however many entries they add: SQLite's SUM stops at 64 bits."""

from __future__ import annotations

from sqlalchemy import Connection

from kassa.domain.ledger import Account
from kassa.domain.merchants import Mode
from kassa.storage import ledger, merchants
from kassa.storage.database import Database
from kassa.storage.tables import orders
from tests.support.databases import TEST_VAULT


def _order(conn: Connection) -> tuple[int, dict[str, object]]:
    merchant = merchants.create_merchant(conn, TEST_VAULT, "big", "k" * 32, False, 0)
    spec = merchants.EndpointSpec(merchant.id, "KWD", Mode.SANDBOX, False, "", None, None, False)
    endpoint_id = merchants.create_endpoint(conn, spec, 0)
    row = {
        "merchant_id": merchant.id, "endpoint_id": endpoint_id, "client_orderid": "o-1", "tx_type": "sale",
        "amount": 10**12, "currency": "KWD", "request_fingerprint": "f", "created_at_ms": 0,
    }  # fmt: skip
    order_id = conn.execute(orders.insert().values(row)).inserted_primary_key[0]
    return merchant.id, {"id": order_id, "merchant_id": merchant.id, "currency": "KWD"}


def test_merchant_balance_beyond_64_bits_is_summed_exactly(db: Database) -> None:
    def write(conn: Connection) -> int:
        merchant_id, order = _order(conn)
        for _ in range(12):  # 12 * 10^18 > 2^63: more than SQLite's SUM holds
            ledger.post(conn, order, None, [(Account.EXTERNAL, -(10**18)), (Account.CAPTURED, 10**18)], 0)
        return merchant_id

    merchant_id = db.write_sync(write)
    [balance] = db.read_sync(lambda conn: ledger.merchant_balances(conn, merchant_id))
    assert (balance.captured, balance.held, balance.settled) == (12 * 10**18, 0, 0)
