"""The expiry scan reads open authorizations only: captured, cancelled or busy orders are left alone."""

from __future__ import annotations

import pytest
from sqlalchemy import Connection

from kassa.core import followups, outcomes, settlement
from kassa.core.opening import open_order
from kassa.domain.lifecycle import Stage
from kassa.domain.transactions import TxType
from kassa.processors.interface import Outcome
from kassa.storage import orders as order_store
from kassa.storage import settlement as settlement_store
from kassa.storage.database import Database
from kassa.storage.orders import NewCard, NewOrder
from tests.support.databases import shop_endpoint


def _approved_preauth(conn: Connection, ids: tuple[int, int], name: str, at_ms: int) -> int:
    card = NewCard(b"ciphertext", "f" * 64, "411111", "1111", "VISA", 12, 2030, "Jane Doe")
    new = NewOrder(
        ids[0], ids[1], name, TxType.PREAUTH, 1000, "USD", "", "", "{}", None, None, None, None, "fp", f"s-{name}",
        at_ms, card=card,
    )  # fmt: skip
    started = open_order(conn, new)
    outcomes.record(conn, started.transaction_id, Outcome(Stage.APPROVED), at_ms)
    return started.order_id


def _then(conn: Connection, order_id: int, tx_type: TxType, stage: Stage | None, serial: str) -> None:
    order = order_store.lock_order(conn, order_id)
    tx_id = followups.add(conn, order, tx_type, 1000, serial, 10)
    if stage is not None:
        outcomes.record(conn, tx_id, Outcome(stage), 11)


def test_only_authorizations_with_nothing_but_failed_attempts_after_them_are_read(db: Database) -> None:
    def unit(conn: Connection) -> tuple[dict[str, int], list[tuple[int, int]]]:
        ids = shop_endpoint(conn)
        orders = {name: _approved_preauth(conn, ids, name, 1) for name in ("open", "captured", "cancelled", "busy")}
        orders["declined-capture"] = _approved_preauth(conn, ids, "declined-capture", 1)
        orders["recent"] = _approved_preauth(conn, ids, "recent", 500)
        _then(conn, orders["captured"], TxType.CAPTURE, Stage.APPROVED, "c1")
        _then(conn, orders["cancelled"], TxType.CANCEL, Stage.APPROVED, "c2")
        _then(conn, orders["busy"], TxType.CAPTURE, None, "c3")
        _then(conn, orders["declined-capture"], TxType.CAPTURE, Stage.DECLINED, "c4")
        return orders, settlement_store.open_authorizations(conn, 100, 0, 10)

    orders, found = db.write_sync(unit)
    assert [order_id for _, order_id in found] == [orders["open"], orders["declined-capture"]]


def test_expiry_goes_through_the_open_authorizations_in_batches(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settlement, "EXPIRY_BATCH", 2)

    def unit(conn: Connection) -> list[list[int]]:
        ids = shop_endpoint(conn)
        opened = [_approved_preauth(conn, ids, f"o-{n}", 1) for n in range(5)]
        batches, after = [], 0
        while True:
            expired, after = settlement.expire_authorizations(conn, 1000, 100, after)
            batches.append(expired)
            if not after:
                assert sorted(order for batch in batches for order in batch) == opened
                return batches

    assert [len(batch) for batch in db.write_sync(unit)] == [2, 2, 1]
