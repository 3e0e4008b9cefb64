"""Which callbacks a dispatcher may lease (by a claim, or as they are written): only those that can start
now, within the limits of callbacks in flight per destination and per merchant; first attempts first."""

from __future__ import annotations

from sqlalchemy import Connection, update

from kassa.core.opening import open_order
from kassa.domain.transactions import TxType
from kassa.storage import callbacks as callback_store
from kassa.storage import orders as order_store
from kassa.storage.callbacks import CallbackLease, DeliveryLimits
from kassa.storage.database import Database
from kassa.storage.tables import callbacks
from tests.support.databases import shop_endpoint

NOW = 1_000
LEASE_MS = 15_000


def _order(conn: Connection, merchant_id: int, endpoint_id: int, name: str) -> dict[str, int]:
    card = order_store.NewCard(b"ciphertext", "f" * 64, "411111", "1111", "VISA", 12, 2030, "Jane Doe")
    new = order_store.NewOrder(
        merchant_id, endpoint_id, name, TxType.SALE, 1042, "USD", "a@example.com", "", "{}",
        None, None, None, None, "fingerprint", f"serial-{name}", 1, card=card, cvv_ciphertext=b"cvv",
    )  # fmt: skip
    order_id = open_order(conn, new).order_id
    return {"id": order_id, "merchant_id": merchant_id, "tx": order_store.latest_transaction_id(conn, order_id)}


def _queued(db: Database, urls: list[str], lease: CallbackLease | None = None) -> list[bool]:
    """A shop with one order per URL, each with a callback to it; whether each was written leased."""

    def write(conn: Connection) -> list[bool]:
        merchant_id, endpoint_id = shop_endpoint(conn)
        leased = []
        for n, url in enumerate(urls):
            order = _order(conn, merchant_id, endpoint_id, f"o-{n}")
            leased.append(callback_store.add(conn, order, order["tx"], "notify", url, "{}", NOW, lease)[1])
        return leased

    return db.write_sync(write)


def _claim(db: Database, owner: str, limits: DeliveryLimits, room: int = 100, now: int = NOW) -> list[str]:
    claimed = db.write_sync(lambda conn: callback_store.claim(conn, owner, now, LEASE_MS, room, limits))
    return [due.url for due in claimed]


def test_claim_leaves_callbacks_over_their_destinations_limit_unclaimed(db: Database) -> None:
    _queued(db, ["http://slow.example/a"] * 5 + ["http://fast.example/b", "https://slow.example/c"])
    limits = DeliveryLimits(per_destination=2, per_merchant=100)
    first = _claim(db, "callbacks-a", limits)
    assert sorted(first) == [
        "http://fast.example/b", "http://slow.example/a", "http://slow.example/a", "https://slow.example/c",
    ]  # fmt: skip
    # Another process counts the callbacks in flight alike: nothing more to slow.example:80 for now.
    assert _claim(db, "callbacks-b", limits) == []
    # With room for three, one more: two are in flight.
    assert _claim(db, "callbacks-b", DeliveryLimits(per_destination=3, per_merchant=100)) == ["http://slow.example/a"]


def test_claim_leaves_callbacks_over_their_merchants_limit_unclaimed(db: Database) -> None:
    _queued(db, [f"http://host-{n}.example/cb" for n in range(5)])
    assert len(_claim(db, "callbacks-a", DeliveryLimits(per_destination=100, per_merchant=3))) == 3
    assert _claim(db, "callbacks-b", DeliveryLimits(per_destination=100, per_merchant=3)) == []


def test_claim_takes_no_more_than_the_room_given_and_first_attempts_before_retries(db: Database) -> None:
    _queued(db, ["http://a.example/retry", "http://b.example/new"])
    db.write_sync(
        lambda conn: conn.execute(
            update(callbacks)
            .where(callbacks.c.url == "http://a.example/retry")
            .values(attempts=3, next_attempt_at_ms=0)
        )
    )
    limits = DeliveryLimits(per_destination=100, per_merchant=100)
    assert _claim(db, "callbacks-a", limits, room=1) == ["http://b.example/new"]
    assert _claim(db, "callbacks-a", limits, room=1) == ["http://a.example/retry"]


def test_a_callback_is_written_leased_only_while_its_destination_and_merchant_have_room(db: Database) -> None:
    lease = CallbackLease("callbacks-a", NOW + LEASE_MS, DeliveryLimits(per_destination=2, per_merchant=3))
    urls = [
        "http://a.example/1",
        "http://a.example/2",
        "http://a.example/3",
        "http://b.example/1",
        "http://c.example/1",
    ]
    assert _queued(db, urls, lease) == [True, True, False, True, False]
