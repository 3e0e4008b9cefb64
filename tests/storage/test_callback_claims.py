"""Which callbacks a dispatcher may lease (by a claim, or as they are written): only those that can start
now, within the limits of callbacks in flight per destination and per merchant; first attempts first."""

from __future__ import annotations

import uuid
from functools import partial

from sqlalchemy import Connection, func, select

from kassa.core.opening import open_order
from kassa.domain.callbacks import RetrySchedule, retry_delay_ms, unreachable
from kassa.domain.transactions import TxType
from kassa.storage import callbacks as callback_store
from kassa.storage import orders as order_store
from kassa.storage import queue_figures
from kassa.storage.callbacks import Attempt, CallbackLease, DeliveryLimits, Due
from kassa.storage.database import Database
from kassa.storage.tables import callback_attempts, endpoints, merchants
from tests.support.databases import shop_endpoint

NOW = 1_000
LEASE_MS = 15_000
SCHEDULE = RetrySchedule(base_seconds=15, factor=1.435, max_attempts=30)


def _order(conn: Connection, merchant_id: int, endpoint_id: int, name: str) -> dict[str, int]:
    card = order_store.NewCard(b"ciphertext", "f" * 64, "411111", "1111", "VISA", 12, 2030, "Jane Doe")
    new = order_store.NewOrder(
        merchant_id, endpoint_id, name, TxType.SALE, 1042, "USD", "a@example.com", "", "{}",
        None, None, None, None, "fingerprint", f"serial-{name}", 1, card=card, cvv_ciphertext=b"cvv",
    )  # fmt: skip
    order_id = open_order(conn, new).order_id
    return {"id": order_id, "merchant_id": merchant_id, "tx": order_store.latest_transaction_id(conn, order_id)}


def _shop(conn: Connection) -> tuple[int, int]:
    """The merchant ``shop`` and its endpoint, made by the first call of a test."""
    found = conn.execute(
        select(endpoints.c.merchant_id, endpoints.c.id).join(merchants).where(merchants.c.login == "shop")
    ).first()
    return shop_endpoint(conn) if found is None else (found[0], found[1])


def _queued(db: Database, urls: list[str], lease: CallbackLease | None = None) -> list[bool]:
    """One order of the shop per URL, each with a callback to it; whether each was written leased."""

    def write(conn: Connection) -> list[bool]:
        merchant_id, endpoint_id = _shop(conn)
        leased = []
        for url in urls:
            order = _order(conn, merchant_id, endpoint_id, f"o-{uuid.uuid4().hex[:12]}")
            leased.append(callback_store.add(conn, order, order["tx"], "notify", url, "{}", NOW, lease)[1])
        return leased

    return db.write_sync(write)


def _claimed(db: Database, owner: str, limits: DeliveryLimits, room: int = 100, now: int = NOW) -> list[Due]:
    return db.write_sync(lambda conn: callback_store.claim(conn, owner, now, LEASE_MS, room, limits))


def _claim(db: Database, owner: str, limits: DeliveryLimits, room: int = 100, now: int = NOW) -> list[str]:
    return [due.url for due in _claimed(db, owner, limits, room, now)]


def _answer(http_status: int | None, *, at: int, took: int = 100) -> Attempt:
    return Attempt("http://recorded.example/", at, took, http_status, None if http_status else "ConnectError")


def _record(db: Database, due: Due, owner: str, attempt: Attempt, retry_at: int | None = None) -> None:
    """Records ``attempt`` as the dispatcher does: the callback's retry, and its destination's outage."""
    ended = attempt.at_ms + attempt.latency_ms
    if retry_at is None and not attempt.delivered:
        retry_at = SCHEDULE.retry_at_ms(due.attempts + 1, ended)
    reached = not unreachable(attempt.http_status, attempt.error)
    outage = partial(SCHEDULE.outage_after, reached=reached, started_ms=attempt.at_ms, ended_ms=ended)
    assert db.write_sync(lambda conn: callback_store.record(conn, due, owner, attempt, retry_at, outage=outage))


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
    limits = DeliveryLimits(per_destination=100, per_merchant=100)
    _queued(db, ["http://a.example/retry"])
    [tried] = _claimed(db, "callbacks-a", limits)
    _record(db, tried, "callbacks-a", _answer(500, at=NOW), retry_at=NOW)  # due again at once
    _queued(db, ["http://b.example/new"])
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


def _backlog(db: Database, url: str, count: int) -> None:
    """``count`` callbacks to ``url``, each of an order of its own, written in one transaction."""

    def write(conn: Connection) -> None:
        merchant_id, endpoint_id = _shop(conn)
        for n in range(count):
            order = _order(conn, merchant_id, endpoint_id, f"backlog-{n}")
            callback_store.add(conn, order, order["tx"], "notify", url, "{}", NOW, None)

    db.write_sync(write)


def test_a_claim_leases_another_destinations_callback_before_a_full_destinations_older_backlog(db: Database) -> None:
    limits = DeliveryLimits(per_destination=2, per_merchant=1000)
    _backlog(db, "http://held.example/cb", 500)
    assert _claim(db, "callbacks-a", limits) == ["http://held.example/cb"] * 2  # its limit, in flight for now
    _queued(db, ["http://other.example/cb"])
    assert _claim(db, "callbacks-b", limits, room=1, now=NOW + 1) == ["http://other.example/cb"]


def test_a_destination_that_cannot_be_reached_gets_one_probe_per_interval_then_drains_in_order(
    db: Database,
) -> None:
    limits = DeliveryLimits(per_destination=4, per_merchant=1000)
    _backlog(db, "http://down.example/cb", 30)
    first = _claimed(db, "callbacks-a", limits)
    assert len(first) == 4
    for due in first:  # in flight together: one failure of the destination, not four
        _record(db, due, "callbacks-a", _answer(None, at=NOW))
    probe_at = NOW + 100 + retry_delay_ms(1, 15, 1.435)
    assert _claim(db, "callbacks-a", limits, now=probe_at - 1) == []
    probes = []
    for failures in (1, 2, 3):
        [probe] = _claimed(db, "callbacks-a", limits, now=probe_at)
        assert _claim(db, "callbacks-b", limits, now=probe_at) == []  # one at a time
        probes.append(probe.id)
        _record(db, probe, "callbacks-a", _answer(None, at=probe_at))
        next_probe = probe_at + 100 + retry_delay_ms(failures + 1, 15, 1.435)
        assert _claim(db, "callbacks-a", limits, now=next_probe - 1) == []
        probe_at = next_probe
    # First attempts go before retries: each probe was a callback that had not been tried.
    assert probes == sorted(probes) and probes[0] > max(due.id for due in first)
    [probe] = _claimed(db, "callbacks-a", limits, now=probe_at)
    _record(db, probe, "callbacks-a", _answer(200, at=probe_at))
    drained = [probe.id]
    while claimed := _claimed(db, "callbacks-a", limits, now=probe_at + 1):
        assert len(claimed) <= 4
        for due in claimed:
            _record(db, due, "callbacks-a", _answer(200, at=probe_at + 1))
        drained += [due.id for due in claimed]
    tried_before = sorted({due.id for due in first} | set(probes))
    untried = [n for n in drained if n not in tried_before]
    assert untried == sorted(untried)  # the queue drains longest due first
    assert sorted(drained) == sorted(set(drained)) and len(drained) == 30


def _chain(db: Database, count: int) -> int:
    """An order with ``count`` callbacks to one URL, fields ``{"n": "0"}``, ...; its id."""

    def write(conn: Connection) -> int:
        merchant_id, endpoint_id = _shop(conn)
        order = _order(conn, merchant_id, endpoint_id, "chain")
        for n in range(count):
            fields = f'{{"n": "{n}"}}'
            callback_store.add(conn, order, order["tx"], "notify", "http://shop.example/cb", fields, NOW, None)
        return order["id"]

    return db.write_sync(write)


def test_a_callback_waiting_for_an_earlier_one_of_its_order_takes_the_lane_when_that_one_is_delivered(
    db: Database,
) -> None:
    limits = DeliveryLimits(per_destination=10, per_merchant=10)
    _chain(db, 3)
    seen = []
    for _ in range(3):
        [due] = _claimed(db, "callbacks-a", limits)
        assert _claim(db, "callbacks-b", limits) == []  # the next waits while this one is pending
        seen.append(due.fields["n"])
        _record(db, due, "callbacks-a", _answer(200, at=NOW))
    assert seen == ["0", "1", "2"]


def test_a_redelivered_callback_goes_out_again_before_the_later_ones_of_its_order_to_its_url(db: Database) -> None:
    limits = DeliveryLimits(per_destination=10, per_merchant=10)
    order_id = _chain(db, 2)
    [first] = _claimed(db, "callbacks-a", limits)
    _record(db, first, "callbacks-a", _answer(200, at=NOW))
    assert db.write_sync(lambda conn: callback_store.redeliver(conn, NOW, first.id)) == 1
    seen = []
    while claimed := _claimed(db, "callbacks-a", limits):
        [due] = claimed
        seen.append(due.fields["n"])
        _record(db, due, "callbacks-a", _answer(200, at=NOW))
    assert seen == ["0", "1"]
    assert db.write_sync(lambda conn: callback_store.redeliver(conn, NOW, order_id=order_id)) == 2
    assert [due.fields["n"] for due in _claimed(db, "callbacks-a", limits)] == ["0"]


def test_a_callback_whose_lease_ran_out_is_claimed_again_and_its_destination_counts_it_free(db: Database) -> None:
    limits = DeliveryLimits(per_destination=1, per_merchant=10)
    lease = CallbackLease("callbacks-dead", NOW + LEASE_MS, limits)
    assert _queued(db, ["http://a.example/1", "http://a.example/2"], lease) == [True, False]
    assert _claim(db, "callbacks-a", limits, now=NOW + LEASE_MS) == []  # the first is still in flight
    later = NOW + LEASE_MS + 1
    assert _claim(db, "callbacks-a", limits, now=later) == ["http://a.example/1"]  # longest due first
    assert _claim(db, "callbacks-b", limits, now=later) == []


def test_prolonging_moves_the_leases_of_the_owners_named_that_have_not_run_out_and_no_others(db: Database) -> None:
    limits = DeliveryLimits(per_destination=10, per_merchant=10)
    _queued(db, ["http://a.example/live"], CallbackLease("callbacks-a", NOW + LEASE_MS, limits))
    _queued(db, ["http://a.example/ran-out"], CallbackLease("callbacks-a", NOW + 10, limits))
    _queued(db, ["http://b.example/other"], CallbackLease("callbacks-b", NOW + LEASE_MS, limits))
    moved = db.write_sync(lambda conn: callback_store.prolong(conn, ["callbacks-a"], NOW + 11, 60_000))
    assert moved == 1
    taken_for_good = db.write_sync(
        lambda conn: callback_store.claim(conn, "callbacks-c", NOW + LEASE_MS + 1, 10**9, 10, limits)
    )
    assert sorted(due.url for due in taken_for_good) == ["http://a.example/ran-out", "http://b.example/other"]
    assert _claim(db, "callbacks-c", limits, now=NOW + LEASE_MS + 60_000) == []
    assert _claim(db, "callbacks-c", limits, now=NOW + LEASE_MS + 60_001) == ["http://a.example/live"]


def test_a_claim_reads_on_past_a_page_of_destinations_that_are_full(db: Database) -> None:
    limits = DeliveryLimits(per_destination=1, per_merchant=1000)
    full = [f"http://full-{n:02}.example/cb" for n in range(40)]
    _queued(db, full + full)
    assert len(_claim(db, "callbacks-a", limits)) == 40  # one each: every destination is now full
    _queued(db, ["http://zz-last.example/cb"])  # due as long as they are, and last by name
    assert _claim(db, "callbacks-b", limits, room=1) == ["http://zz-last.example/cb"]


def test_callbacks_behind_a_destination_that_is_down_count_as_pending_but_due_only_from_its_next_probe(
    db: Database,
) -> None:
    limits = DeliveryLimits(per_destination=1, per_merchant=1000)
    _backlog(db, "http://down.example/cb", 5)
    [probe] = _claimed(db, "callbacks-a", limits)
    _record(db, probe, "callbacks-a", _answer(None, at=NOW))  # down: next probe 15 s after it ended
    probe_at = NOW + 100 + retry_delay_ms(1, 15, 1.435)
    waiting = db.read_sync(lambda conn: queue_figures.read(conn, NOW + 1_000).callbacks)
    assert (waiting.waiting, waiting.oldest_due_age_ms) == (5, 0)  # the dispatcher is not behind
    late = db.read_sync(lambda conn: queue_figures.read(conn, probe_at + 2_000).callbacks)
    assert (late.waiting, late.oldest_due_age_ms) == (5, 2_000)


def test_pending_callbacks_are_counted_up_to_the_cap_a_scrape_reads_and_past_it_read_as_the_cap(db: Database) -> None:
    _backlog(db, "http://down.example/cb", 5)
    assert db.read_sync(lambda conn: queue_figures.read(conn, NOW).callbacks.waiting) == 5
    assert db.read_sync(lambda conn: queue_figures.read(conn, NOW, counted_up_to=3).callbacks.waiting) == 3


def test_an_attempt_recorded_by_a_dispatcher_whose_lease_ran_out_and_was_taken_writes_nothing(db: Database) -> None:
    _queued(db, ["http://shop.example/cb"])
    limits = DeliveryLimits(per_destination=16, per_merchant=32)
    [stale] = _claimed(db, "callbacks-a", limits)
    [taken] = _claimed(db, "callbacks-b", limits, now=NOW + LEASE_MS + 1)
    delivered = _answer(200, at=NOW + LEASE_MS + 2)
    assert not db.write_sync(lambda conn: callback_store.record(conn, stale, "callbacks-a", delivered, None))
    assert _attempts_logged(db) == 0
    assert db.write_sync(lambda conn: callback_store.record(conn, taken, "callbacks-b", delivered, None))
    assert _attempts_logged(db) == 1


def _attempts_logged(db: Database) -> int:
    query = select(func.count()).select_from(callback_attempts)
    return int(db.read_sync(lambda conn: conn.execute(query).scalar_one()))


def _callback_wait(db: Database, now: int, per_destination: int = 2, per_merchant: int = 1000) -> int:
    limits = DeliveryLimits(per_destination, per_merchant)
    return db.read_sync(lambda conn: queue_figures.oldest_waiting_callback_age_ms(conn, now, limits))


def test_the_overload_signal_counts_a_first_attempt_waiting_at_a_destination_with_room(db: Database) -> None:
    _queued(db, ["http://idle.example/cb"])
    assert _callback_wait(db, NOW + 3_000) == 3_000


def test_the_overload_signal_leaves_out_a_destination_at_its_limit_and_one_that_is_down(db: Database) -> None:
    limits = DeliveryLimits(per_destination=2, per_merchant=1000)
    _queued(db, ["http://down.example/cb"] * 5)
    [probe] = _claimed(db, "callbacks-a", DeliveryLimits(per_destination=1, per_merchant=1000))
    _record(db, probe, "callbacks-a", _answer(None, at=NOW))  # down: its next probe is 15 s away
    _queued(db, ["http://slow.example/cb"] * 50)
    assert _claim(db, "callbacks-a", limits) == ["http://slow.example/cb"] * 2  # its limit, in flight
    # Both hold callbacks back by design: the dispatcher is not behind, whatever their backlogs.
    assert _callback_wait(db, NOW + 3_000) == 0
    assert _callback_wait(db, NOW + 3_000, per_destination=3) == 3_000  # with room, slow.example's would count


def test_the_overload_signal_leaves_out_a_merchant_at_its_limit(db: Database) -> None:
    limits = DeliveryLimits(per_destination=2, per_merchant=2)
    _queued(db, ["http://slow.example/cb"] * 2)
    assert _claim(db, "callbacks-a", limits) == ["http://slow.example/cb"] * 2  # the merchant's limit
    _queued(db, ["http://other.example/cb"])
    assert _claim(db, "callbacks-b", limits) == []  # other.example has room, its merchant none
    assert _callback_wait(db, NOW + 3_000, per_merchant=2) == 0
    assert _callback_wait(db, NOW + 3_000, per_merchant=3) == 3_000
