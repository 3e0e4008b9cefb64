"""The callback outbox's statements, outside any server: writing a callback leased (the hand-over every
outcome with a callback URL makes) and a claim while callbacks are held back by their merchant's limit.
Run: ``python -m bench.outbox [orders]`` (3,000 by default), on SQLite and on PostgreSQL."""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from typing import Any

from sqlalchemy import Connection, text

from kassa.core.opening import open_order
from kassa.domain.transactions import TxType
from kassa.storage import callbacks as store
from kassa.storage import orders as order_store
from kassa.storage.callbacks import CallbackLease, DeliveryLimits
from kassa.storage.database import open_database
from kassa.storage.migrate import upgrade
from tests.support.databases import fresh_postgres, shop_endpoint

LIMITS = DeliveryLimits(per_destination=16, per_merchant=32)
FOREVER, EXPIRED = 10**15, 0


def _orders(conn: Connection, count: int) -> list[dict[str, Any]]:
    merchant_id, endpoint_id = shop_endpoint(conn)
    card = order_store.NewCard(b"card", "f" * 64, "411111", "1111", "VISA", 12, 2030, "Jane Doe")
    found = []
    for n in range(count):
        new = order_store.NewOrder(
            merchant_id, endpoint_id, f"o-{n}", TxType.SALE, 1042, "USD", "a@example.com", "", "{}",
            None, None, None, None, "fingerprint", f"serial-{n}", 1, card=card, cvv_ciphertext=b"cvv",
        )  # fmt: skip
        order_id = open_order(conn, new).order_id
        found.append(
            {"id": order_id, "merchant_id": merchant_id, "tx": order_store.latest_transaction_id(conn, order_id)}
        )
    return found


def measure(url: str, count: int) -> None:
    upgrade(url)
    db = open_database(url, threads=1)
    orders = db.write_sync(lambda conn: _orders(conn, count))
    writes = []
    for n, order in enumerate(orders):
        # 2% stay in flight for good (their merchant is over its limit); the others' leases have ended.
        lease = CallbackLease("callbacks-a", FOREVER if n % 50 == 0 else EXPIRED, LIMITS)
        url_n = f"http://shop-{n % 50}.example/cb"

        def write(
            conn: Connection, order: dict[str, Any] = order, url_n: str = url_n, lease: CallbackLease = lease
        ) -> float:
            started = time.perf_counter()
            store.add(conn, order, order["tx"], "server_callback", url_n, "{}", 1_000, lease)
            return time.perf_counter() - started

        writes.append(db.write_sync(write))
    if db.dialect == "postgresql":
        db.write_sync(lambda conn: conn.execute(text("ANALYZE callbacks")))
    claims = []
    for _ in range(5):

        def claim(conn: Connection) -> float:
            started = time.perf_counter()
            store.claim(conn, "callbacks-b", 2_000, 15_000, 16, LIMITS)
            return time.perf_counter() - started

        claims.append(db.write_sync(claim))
    print(
        f"{db.dialect}: a callback written leased {statistics.median(writes) * 1e6:.0f} µs (median); "
        f"a claim with {count - count // 50:,} due, held back {statistics.median(claims) * 1e3:.1f} ms (median)"
    )
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("orders", type=int, nargs="?", default=3000)
    count = parser.parse_args().orders
    measure(f"sqlite:///{tempfile.mkdtemp(prefix='kassa-outbox-')}/kassa.db", count)
    with fresh_postgres("kassa_outbox") as url:
        measure(url, count)


if __name__ == "__main__":
    main()
