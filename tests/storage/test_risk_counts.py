"""Velocity counts as stored, on both backends: a sale is counted under several keys in one statement and
their counts are read in one, each over its own window, as a number of sales or their amount, in the
order asked."""

from __future__ import annotations

import pytest
from sqlalchemy import Connection

from kassa.domain.risk import Kind, Mode, Per, Velocity
from kassa.storage import risk as store
from kassa.storage.database import Database
from tests.support.databases import shop_endpoint

CARD, EMAIL = -(2**63), 2**63 - 1  # the keys' extremes


@pytest.fixture
def limits(db: Database) -> tuple[int, int]:
    """Two limits on one merchant: a count per card and a sum per e-mail address."""

    def made(conn: Connection) -> tuple[int, int]:
        merchant_id, _ = shop_endpoint(conn)
        count = store.NewRule(
            Kind.COUNT, Mode.ENFORCE, merchant_id, None, (), Velocity(Per.CARD, 5, 3_600_000), "", "t"
        )
        total = store.NewRule(
            Kind.SUM, Mode.ENFORCE, merchant_id, None, (), Velocity(Per.EMAIL, 9000, 3_600_000, "USD"), "", "t"
        )
        return store.create(conn, count, 0), store.create(conn, total, 0)

    return db.write_sync(made)


def test_a_sale_is_counted_under_each_key_and_read_back_by_number_or_amount_in_the_order_asked(
    db: Database, limits: tuple[int, int]
) -> None:
    count, total = limits
    db.write_sync(lambda conn: store.count_sales(conn, [(count, CARD, 0), (total, EMAIL, 0)], 1042))
    db.write_sync(lambda conn: store.count_sales(conn, [(count, CARD, 0), (total, EMAIL, 300_000)], 958))
    asked = [(total, EMAIL, 0, True), (count, CARD, 0, False), (total, EMAIL, 300_000, False), (count, EMAIL, 0, True)]
    assert db.read_sync(lambda conn: store.totals(conn, asked)) == [2000, 2, 1, 0]


def test_a_keys_count_starts_at_the_first_bucket_asked(db: Database, limits: tuple[int, int]) -> None:
    count, _ = limits

    def three_buckets(conn: Connection) -> None:
        for bucket in (0, 300_000, 600_000):
            store.count_sales(conn, [(count, CARD, bucket)], 100)

    db.write_sync(three_buckets)
    assert db.read_sync(lambda conn: store.totals(conn, [(count, CARD, 300_000, False)])) == [2]
    assert db.read_sync(lambda conn: store.totals(conn, [(count, CARD, 300_000, True)])) == [200]
    assert db.read_sync(lambda conn: store.totals(conn, [(count, CARD, 600_001, False)])) == [0]
