"""Opening orders (through the driver-level statements) and recording their outcomes, on both backends."""

from __future__ import annotations

import dataclasses
from functools import partial

import pytest
from sqlalchemy import Connection, func, select

from kassa.core import followups, outcomes
from kassa.core.opening import open_order, opened_work
from kassa.core.outbox import Queued
from kassa.domain.lifecycle import Stage
from kassa.domain.transactions import TxType
from kassa.processors.interface import Outcome
from kassa.storage import callbacks as callback_store
from kassa.storage import jobs as job_queue
from kassa.storage import orders as order_store
from kassa.storage.callbacks import CallbackLease, DeliveryLimits
from kassa.storage.database import Database
from kassa.storage.jobs import Job, Lease
from kassa.storage.tables import cards, jobs, orders, transactions, transient_secrets
from kassa.vault.keys import control_key_context
from tests.support.databases import SHOP_CONTROL_KEY, TEST_VAULT, shop_endpoint

LIMITS = DeliveryLimits(per_destination=16, per_merchant=32)


def _endpoint(db: Database) -> tuple[int, int]:
    return db.write_sync(shop_endpoint)


def _sale(
    merchant_id: int,
    endpoint_id: int,
    client_orderid: str,
    serial: str,
    *,
    lease: Lease | None = None,
    server_callback_url: str | None = None,
    notify_url: str | None = None,
) -> order_store.NewOrder:
    card = order_store.NewCard(b"ciphertext", "f" * 64, "411111", "1111", "VISA", 12, 2030, "Jane Doe")
    return order_store.NewOrder(
        merchant_id, endpoint_id, client_orderid, TxType.SALE, 1042, "USD", "a@example.com", "", "{}",
        None, server_callback_url, notify_url, None, "fingerprint", serial, 1, card=card, cvv_ciphertext=b"cvv",
        lease=lease,
    )  # fmt: skip


def test_reused_client_orderid_of_a_rebill_keeps_the_stored_card(db: Database) -> None:
    merchant_id, endpoint_id = _endpoint(db)
    sale = db.write_sync(lambda conn: open_order(conn, _sale(merchant_id, endpoint_id, "o-1", "s-1")))
    card_id = db.read_sync(lambda conn: conn.execute(select(orders.c.card_id)).scalar_one())
    charging = _sale(merchant_id, endpoint_id, "r-1", "s-2")
    rebill = dataclasses.replace(charging, card=None, card_id=card_id, card_ref_id=7)
    first = db.write_sync(lambda conn: open_order(conn, rebill))
    again = db.write_sync(lambda conn: open_order(conn, dataclasses.replace(rebill, serial="s-3")))
    assert (first.created, again.created, again.order_id) == (True, False, first.order_id)
    assert first.order_id != sale.order_id
    assert _count(db, cards) == 1  # the card both orders charge is still there
    view = db.read_sync(lambda conn: order_store.find_view(conn, [endpoint_id], first.order_id, None))
    assert view is not None and view.card is not None and view.head.card_ref_id == 7


def _count(db: Database, table: object) -> int:
    return int(db.read_sync(lambda conn: conn.execute(select(func.count()).select_from(table)).scalar_one()))  # type: ignore[arg-type]


def test_start_order_writes_order_transaction_card_cvv_and_job(db: Database) -> None:
    merchant_id, endpoint_id = _endpoint(db)
    started = db.write_sync(lambda conn: open_order(conn, _sale(merchant_id, endpoint_id, "o-1", "s-1")))
    assert started.created
    assert [_count(db, t) for t in (orders, transactions, cards, transient_secrets, jobs)] == [1, 1, 1, 1, 1]
    view = db.read_sync(lambda conn: order_store.find_view(conn, [endpoint_id], started.order_id, None))
    assert view is not None and view.card is not None
    assert db.read_sync(lambda conn: conn.execute(select(cards.c.pan_ciphertext)).scalar_one()) == b"ciphertext"
    assert view.card.last_four == "1111" and "pan_ciphertext" not in view.card._fields  # reports carry no PAN
    assert view.head.amount == 1042


def test_reused_client_orderid_finds_the_first_order_and_leaves_no_orphan_card(db: Database) -> None:
    merchant_id, endpoint_id = _endpoint(db)
    first = db.write_sync(lambda conn: open_order(conn, _sale(merchant_id, endpoint_id, "o-1", "s-1")))
    again = db.write_sync(lambda conn: open_order(conn, _sale(merchant_id, endpoint_id, "o-1", "s-2")))
    assert not again.created
    assert (again.order_id, again.serial) == (first.order_id, "s-1")
    assert [_count(db, t) for t in (orders, transactions, cards, transient_secrets, jobs)] == [1, 1, 1, 1, 1]


def test_a_sale_started_with_a_lease_hands_its_job_over_and_no_claim_takes_it_before_the_lease_ends(
    db: Database,
) -> None:
    merchant_id, endpoint_id = _endpoint(db)
    lease = Lease("worker-a", until_ms=10_000)
    new = _sale(merchant_id, endpoint_id, "o-1", "s-1", lease=lease)
    started = db.write_sync(lambda conn: open_order(conn, new))
    assert started.job is not None and started.job.attempts == 1
    assert db.write_sync(lambda conn: job_queue.claim(conn, "worker-b", 9_999, 1000, 10)) == []
    assert db.write_sync(lambda conn: job_queue.still_held(conn, started.job, "worker-a"))  # type: ignore[arg-type]
    taken_over = db.write_sync(lambda conn: job_queue.claim(conn, "worker-b", 10_001, 1000, 10))
    assert [(job.id, job.attempts) for job in taken_over] == [(started.job.id, 2)]


def test_a_sale_hands_its_worker_exactly_what_the_worker_would_read_back(db: Database) -> None:
    merchant_id, endpoint_id = _endpoint(db)
    new = _sale(merchant_id, endpoint_id, "o-1", "s-1", lease=Lease("worker-a", until_ms=10_000))
    started = db.write_sync(lambda conn: open_order(conn, new))
    read_back = db.read_sync(lambda conn: order_store.load_authorization(conn, started.transaction_id))
    assert opened_work(new, started, "") == read_back


def test_a_repeated_client_orderid_hands_nothing_over_to_be_read_back(db: Database) -> None:
    merchant_id, endpoint_id = _endpoint(db)
    db.write_sync(lambda conn: open_order(conn, _sale(merchant_id, endpoint_id, "o-1", "s-1")))
    repeat = _sale(merchant_id, endpoint_id, "o-1", "s-2")
    again = db.write_sync(lambda conn: open_order(conn, repeat))
    assert opened_work(repeat, again, "") is None


def test_prolonging_moves_the_job_leases_of_the_owners_named_that_have_not_run_out_and_no_others(
    db: Database,
) -> None:
    merchant_id, endpoint_id = _endpoint(db)
    leases = {
        "live": Lease("worker-a", until_ms=10_000),
        "ran-out": Lease("worker-a", until_ms=4_000),
        "other": Lease("worker-b", until_ms=10_000),
    }
    for name, lease in leases.items():
        db.write_sync(partial(_open, _sale(merchant_id, endpoint_id, name, f"s-{name}", lease=lease)))
    assert db.write_sync(lambda conn: job_queue.prolong(conn, ["worker-a"], 5_000, 60_000)) == 1
    taken = db.write_sync(lambda conn: job_queue.claim(conn, "worker-c", 10_001, 10**9, 10))
    assert sorted(_client_orderid(db, job) for job in taken) == ["other", "ran-out"]
    assert db.write_sync(lambda conn: job_queue.claim(conn, "worker-c", 70_000, 1000, 10)) == []
    [live] = db.write_sync(lambda conn: job_queue.claim(conn, "worker-c", 70_001, 1000, 10))
    assert _client_orderid(db, live) == "live"


def _open(new: order_store.NewOrder, conn: Connection) -> None:
    open_order(conn, new)


def _client_orderid(db: Database, job: Job) -> str:
    query = select(orders.c.client_orderid).join(transactions).where(transactions.c.id == job.transaction_id)
    return str(db.read_sync(lambda conn: conn.execute(query).scalar_one()))


def test_a_sale_started_without_a_lease_leaves_its_job_to_the_claim(db: Database) -> None:
    merchant_id, endpoint_id = _endpoint(db)
    started = db.write_sync(lambda conn: open_order(conn, _sale(merchant_id, endpoint_id, "o-1", "s-1")))
    assert started.job is None
    claimed = db.write_sync(lambda conn: job_queue.claim(conn, "worker-b", 2, 1000, 10))
    assert [job.transaction_id for job in claimed] == [_started_transaction(db, started.order_id)]


def _started_transaction(db: Database, order_id: int) -> int:
    return db.read_sync(lambda conn: order_store.latest_transaction_id(conn, order_id))


def _approve(db: Database, order_id: int, lease: CallbackLease | None) -> Queued:
    tx_id = _started_transaction(db, order_id)
    outcome = Outcome(Stage.APPROVED, approval_code="123456")
    return db.write_sync(lambda conn: outcomes.record(conn, tx_id, outcome, 5, lease))


@pytest.mark.parametrize(
    ("urls", "handed", "claimable"),
    [
        (("http://a.example/cb", "http://b.example/notify"), ["http://a.example/cb", "http://b.example/notify"], 0),
        # One receiver for both: its events go one after the other, so the second waits for the first.
        (("http://a.example/cb", "http://a.example/cb"), ["http://a.example/cb"], 0),
    ],
)
def test_an_approved_sale_hands_over_the_callbacks_that_wait_for_no_other(
    db: Database, urls: tuple[str, str], handed: list[str], claimable: int
) -> None:
    merchant_id, endpoint_id = _endpoint(db)
    new = _sale(merchant_id, endpoint_id, "o-1", "s-1", server_callback_url=urls[0], notify_url=urls[1])
    started = db.write_sync(lambda conn: open_order(conn, new))
    queued = _approve(db, started.order_id, CallbackLease("callbacks-a", 10_000, LIMITS))
    assert queued.count == 2
    assert [due.url for due in queued.handed] == handed
    assert all(due.fields["status"] == "approved" for due in queued.handed)
    keys = {TEST_VAULT.decrypt(due.control_key_sealed, control_key_context(merchant_id)) for due in queued.handed}
    assert keys == {SHOP_CONTROL_KEY}
    claimed = db.write_sync(lambda conn: callback_store.claim(conn, "callbacks-b", 9_999, 1000, 10, LIMITS))
    assert len(claimed) == claimable


@pytest.mark.parametrize(("sale_callback_delivered", "handed"), [(False, 0), (True, 1)])
def test_a_later_transactions_callback_is_handed_over_only_once_the_earlier_one_to_its_url_is_delivered(
    db: Database, sale_callback_delivered: bool, handed: int
) -> None:
    merchant_id, endpoint_id = _endpoint(db)
    new = _sale(merchant_id, endpoint_id, "o-1", "s-1", notify_url="http://a.example/notify")
    started = db.write_sync(lambda conn: open_order(conn, new))
    lease = CallbackLease("callbacks-a", 10_000, LIMITS)
    (sale_callback,) = _approve(db, started.order_id, lease).handed
    if sale_callback_delivered:
        attempt = callback_store.Attempt(sale_callback.url, 6, 1, 200, None)
        assert db.write_sync(lambda conn: callback_store.record(conn, sale_callback, "callbacks-a", attempt, None))

    def reverse(conn: Connection) -> int:
        order = order_store.lock_order(conn, started.order_id)
        return followups.add(conn, order, TxType.REVERSAL, 1042, "s-2", 7)

    reversal = db.write_sync(reverse)
    outcome = Outcome(Stage.APPROVED)
    queued = db.write_sync(lambda conn: outcomes.record(conn, reversal, outcome, 8, lease))
    assert (queued.count, len(queued.handed)) == (1, handed)


def test_an_approved_sale_without_a_lease_leaves_its_callbacks_to_the_claim(db: Database) -> None:
    merchant_id, endpoint_id = _endpoint(db)
    new = _sale(merchant_id, endpoint_id, "o-1", "s-1", server_callback_url="http://a.example/cb")
    started = db.write_sync(lambda conn: open_order(conn, new))
    queued = _approve(db, started.order_id, None)
    assert (queued.count, queued.handed) == (1, [])
    assert len(db.write_sync(lambda conn: callback_store.claim(conn, "callbacks-b", 9_999, 1000, 10, LIMITS))) == 1


def test_an_outcome_whose_job_another_worker_took_over_writes_nothing_and_the_holders_forgets_the_cvv(
    db: Database,
) -> None:
    merchant_id, endpoint_id = _endpoint(db)
    new = _sale(merchant_id, endpoint_id, "o-1", "s-1", lease=Lease("worker-a", until_ms=10_000))
    started = db.write_sync(lambda conn: open_order(conn, new))
    [taken_over] = db.write_sync(lambda conn: job_queue.claim(conn, "worker-b", 10_001, 1000, 10))
    stale = started.job
    assert stale is not None
    approved = Outcome(Stage.APPROVED, approval_code="123456")

    def record_as(job: Job, owner: str) -> bool:
        return db.write_sync(
            lambda conn: outcomes.record_for_job(conn, job, owner, approved, 10_002, reconcile_after_ms=1)
        )[0]

    assert record_as(stale, "worker-a") is False
    assert _stage(db, started.transaction_id) == "processing" and _count(db, jobs) == _count(db, transient_secrets) == 1
    assert record_as(taken_over, "worker-b") is True
    assert _stage(db, started.transaction_id) == "approved"
    assert _count(db, jobs) == _count(db, transient_secrets) == 0  # the CVV is forgotten with the outcome


def _stage(db: Database, tx_id: int) -> str:
    query = select(transactions.c.stage).where(transactions.c.id == tx_id)
    return str(db.read_sync(lambda conn: conn.execute(query).scalar_one()))


def test_an_unknown_still_unknown_when_asked_again_changes_nothing_and_is_asked_again_later(db: Database) -> None:
    merchant_id, endpoint_id = _endpoint(db)
    started = db.write_sync(lambda conn: open_order(conn, _sale(merchant_id, endpoint_id, "o-1", "s-1")))
    [job] = db.write_sync(lambda conn: job_queue.claim(conn, "worker-a", 2, 1000, 10))
    unknown = Outcome(Stage.UNKNOWN)
    db.write_sync(lambda conn: outcomes.record_for_job(conn, job, "worker-a", unknown, 3, reconcile_after_ms=60_000))
    [reconcile] = db.write_sync(lambda conn: job_queue.claim(conn, "worker-a", 60_003, 1000, 10))
    recorded, queued = db.write_sync(
        lambda conn: outcomes.record_for_job(conn, reconcile, "worker-a", unknown, 60_004, reconcile_after_ms=60_000)
    )
    assert recorded and queued.count == 0
    assert _stage(db, started.transaction_id) == "unknown"
    due = db.read_sync(lambda conn: conn.execute(select(jobs.c.kind, jobs.c.run_at_ms)).all())
    assert [tuple(row) for row in due] == [("reconcile", 120_004)]
