"""Starting orders through the driver-level statements, on both backends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import func, select

from kassa.domain.lifecycle import TxType
from kassa.domain.merchants import Mode
from kassa.storage import merchants as merchant_store
from kassa.storage import orders as order_store
from kassa.storage.database import Database, open_database
from kassa.storage.migrate import upgrade
from kassa.storage.tables import cards, jobs, orders, transactions, transient_secrets


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    upgrade(database_url)
    database = open_database(database_url)
    yield database
    database.close()


def _endpoint(db: Database) -> tuple[int, int]:
    def unit(conn: object) -> tuple[int, int]:
        merchant = merchant_store.create_merchant(conn, "shop", "key", False, 0)  # type: ignore[arg-type]
        spec = merchant_store.EndpointSpec(merchant.id, "USD", Mode.SANDBOX, False, "", None, None, False)
        return merchant.id, merchant_store.create_endpoint(conn, spec, 0)  # type: ignore[arg-type]

    return db.write_sync(unit)


def _sale(merchant_id: int, endpoint_id: int, client_orderid: str, serial: str) -> order_store.NewOrder:
    card = order_store.NewCard(b"ciphertext", "f" * 64, "411111", "1111", "VISA", 12, 2030, "Jane Doe")
    return order_store.NewOrder(
        merchant_id, endpoint_id, client_orderid, TxType.SALE, 1042, "USD", "a@example.com", "", "{}",
        None, None, None, None, "fingerprint", serial, card, b"cvv", 1,
    )  # fmt: skip


def _count(db: Database, table: object) -> int:
    return int(db.read_sync(lambda conn: conn.execute(select(func.count()).select_from(table)).scalar_one()))  # type: ignore[arg-type]


def test_start_order_writes_order_transaction_card_cvv_and_job(db: Database) -> None:
    merchant_id, endpoint_id = _endpoint(db)
    started = db.write_sync(lambda conn: order_store.start_order(conn, _sale(merchant_id, endpoint_id, "o-1", "s-1")))
    assert started.created
    assert [_count(db, t) for t in (orders, transactions, cards, transient_secrets, jobs)] == [1, 1, 1, 1, 1]
    snapshot = db.read_sync(lambda conn: order_store.find_order(conn, [endpoint_id], started.order_id, None))
    assert snapshot is not None and snapshot.card is not None
    assert snapshot.card["pan_ciphertext"] == b"ciphertext"
    assert snapshot.order["amount"] == 1042


def test_reused_client_orderid_finds_the_first_order_and_leaves_no_orphan_card(db: Database) -> None:
    merchant_id, endpoint_id = _endpoint(db)
    first = db.write_sync(lambda conn: order_store.start_order(conn, _sale(merchant_id, endpoint_id, "o-1", "s-1")))
    again = db.write_sync(lambda conn: order_store.start_order(conn, _sale(merchant_id, endpoint_id, "o-1", "s-2")))
    assert not again.created
    assert (again.order_id, again.serial) == (first.order_id, "s-1")
    assert [_count(db, t) for t in (orders, transactions, cards, transient_secrets, jobs)] == [1, 1, 1, 1, 1]
