"""Recurring payments (CONTRACT §13): making one, and running its schedule.

The scheduler runs three steps each tick, each a batch per database transaction:

- ``charge_due``: a payment whose next regular charge is due gets it. The try is claimed (the unique key
  of payment, charge number and try number) and its sale order opened, and the payment moved on to its
  next due time, all in one database transaction: a charge is made once, whatever the number of processes,
  and a crash before the commit leaves nothing behind but a charge still due.
- ``observe_outcomes``: a try whose sale reached a final status is counted; a failed one is tried again
  (``Retries``) while the payment is active.
- ``retry_due``: a failed try whose retry is due gets its next try, made like a regular charge.

Each change locks the payments first (several in the order of their ids), then the charge, so two processes
never act on one payment at once, nor wait on each other in a cycle.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection

from kassa import crashpoints, randomness
from kassa.core import opening, outcomes, rebills
from kassa.core.errors import PaymentEnded
from kassa.core.followups import OrderRef, card_reference
from kassa.domain.cards import Expiry
from kassa.domain.lifecycle import FINAL_STAGES, Stage
from kassa.domain.recurring import (
    EXPIRED_CARD_CODE,
    EXPIRED_CARD_MESSAGE,
    ChargeState,
    Period,
    Retries,
    Schedule,
    Status,
    charge_client_orderid,
    date_of,
)
from kassa.domain.transactions import TxType
from kassa.processors.interface import Outcome
from kassa.storage import orders as order_store
from kassa.storage import recurring as store
from kassa.storage.orders import NewCard, NewOrder, Started
from kassa.storage.prepared import Record
from kassa.storage.recurring import NewPayment

BATCH = 100
# Outcomes that end a try; ``unknown`` is not one: reconciliation turns it into one of these.
_ENDING = [stage.value for stage in FINAL_STAGES]


@dataclass(frozen=True, slots=True)
class Created:
    payment_id: int
    created: bool  # False: the client_orderid had made one before, which is this
    request_fingerprint: str | None


def create(conn: Connection, new: NewPayment, card: NewCard | None = None) -> Created:
    """A recurring payment on ``new.card_id``, or on ``card`` stored with it; or the one its client_orderid
    made before (then nothing is written)."""
    if card is not None:
        new = dataclasses.replace(new, card_id=order_store.insert_card(conn, card, new.merchant_id, new.now_ms))
    payment_id = store.insert_payment(conn, new)
    if payment_id is not None:
        crashpoints.reached(crashpoints.RECURRING_PAYMENT_WRITTEN)
        return Created(payment_id, True, new.request_fingerprint)
    if card is not None and new.card_id is not None:
        order_store.delete_card(conn, new.card_id)
    assert new.client_orderid is not None, "only a client_orderid can have been used before"
    found = store.by_client_orderid(conn, new.endpoint_id, new.client_orderid)
    if found is None:
        raise RuntimeError("client_orderid conflicts with a recurring payment that cannot be found")
    return Created(found["id"], False, found["request_fingerprint"])


@dataclass(frozen=True, slots=True)
class Tokenised:
    card_ref_id: int
    recurring_payment_id: int
    pan_fingerprint: str  # the card's keyed fingerprint, for the reference's unique id


def tokenise(conn: Connection, ref: OrderRef, now_ms: int) -> Tokenised:
    """create-card-ref v4: the order's card reference (as v2 makes it) and a recurring payment without
    schedule on it, both made by the first call and the same after (the order's lock serializes calls)."""
    ref_id = card_reference(conn, ref, now_ms)
    origin = store.tokenised(conn, ref_id)
    payment_id = origin["recurring_payment_id"]
    if payment_id is None:
        new = NewPayment(
            origin["merchant_id"],
            origin["endpoint_id"],
            now_ms,
            card_id=origin["card_id"],
            card_ref_id=ref_id,
            origin_card_ref_id=ref_id,
        )
        payment_id = store.insert_payment(conn, new)
        assert payment_id is not None, "the order's lock is held: no other call can have made it"
    return Tokenised(ref_id, payment_id, origin["pan_fingerprint"])


def schedule_of(payment: Record) -> Schedule | None:
    if payment["period"] is None:
        return None
    finish = payment["finish_date"]
    return Schedule(
        Period(payment["period"]),
        payment["interval"],
        datetime.date.fromisoformat(payment["start_date"]),
        datetime.date.fromisoformat(finish) if finish else None,
        payment["max_count"],
    )


def charge_due(conn: Connection, now_ms: int) -> int:
    """The next regular charge of up to ``BATCH`` payments whose charge is due; returns how many were made.
    A payment several charges behind (the scheduler was stopped) gets one per call, each its own order."""
    payments = store.due(conn, now_ms, BATCH)
    for payment in payments:
        schedule = schedule_of(payment)
        assert schedule is not None, "only a scheduled payment has a charge due"
        n = payment["charges_made"] + 1
        goes_on = _make_try(conn, payment, n, 0, payment["next_charge_at_ms"], now_ms)
        crashpoints.reached(crashpoints.RECURRING_CHARGE_OPENED)
        if goes_on:
            following = schedule.due_ms(n + 1)
            store.update_payment(conn, payment["id"], now_ms, charges_made=n, next_charge_at_ms=following)
            _finish_if_done(conn, payment["id"], now_ms)
    return len(payments)


def observe_outcomes(conn: Connection, now_ms: int, retries: Retries) -> int:
    """Up to ``BATCH`` open tries whose sale has ended: counted, or given a retry; returns how many were
    looked at (fewer than ``BATCH``: no more are waiting)."""
    ended = store.settled_open_charges(conn, _ENDING, BATCH)
    for row, payment, charge in _locked(conn, ended, ChargeState.OPEN):
        if Stage(row["stage"]) is Stage.APPROVED:
            store.set_charge(conn, charge["id"], state=ChargeState.APPROVED.value)
            store.count_outcome(conn, payment["id"], approved=True, now_ms=now_ms)
        else:
            _failed(conn, payment, charge, now_ms, retries)
        _finish_if_done(conn, payment["id"], now_ms)
    return len(ended)


def _failed(conn: Connection, payment: Record, charge: Record, now_ms: int, retries: Retries) -> None:
    retry_at = retries.next_at(charge["try_number"], charge["created_at_ms"])
    if retry_at is not None and payment["status"] == Status.ACTIVE:
        store.set_charge(conn, charge["id"], state=ChargeState.RETRY_DUE.value, retry_at_ms=retry_at)
    else:
        _declined(conn, payment["id"], charge["id"], now_ms)


def _declined(conn: Connection, payment_id: int, charge_id: int, now_ms: int) -> None:
    """The charge ended without approval, and no try of it is left."""
    store.set_charge(conn, charge_id, state=ChargeState.DECLINED.value)
    store.count_outcome(conn, payment_id, approved=False, now_ms=now_ms)


def retry_due(conn: Connection, now_ms: int) -> int:
    """The next try of up to ``BATCH`` failed tries whose retry is due; returns how many were looked at."""
    due = store.retries_due(conn, now_ms, BATCH)
    for _row, payment, charge in _locked(conn, due, ChargeState.RETRY_DUE):
        store.set_charge(conn, charge["id"], state=ChargeState.DECLINED.value, retry_at_ms=None)
        _make_try(conn, payment, charge["number"], charge["try_number"] + 1, charge["retry_at_ms"], now_ms)
    return len(due)


def _locked(conn: Connection, rows: Sequence[Record], state: ChargeState) -> Iterator[tuple[Record, Record, Record]]:
    """Each row with its payment and its charge, locked (the payments first, in id order), when the charge
    is still in ``state``: another process may have moved it on since the rows were read."""
    payments = store.lock_all(conn, {row["recurring_payment_id"] for row in rows})
    for row in rows:
        charge = store.lock_charge(conn, row["id"])
        if charge["state"] == state:
            yield row, payments[row["recurring_payment_id"]], charge


def _make_try(conn: Connection, payment: Record, n: int, try_number: int, due_at_ms: int, now_ms: int) -> bool:
    """Try ``try_number`` of charge ``n``: claimed, then its sale order opened. A card expired by the due
    date is not sent to the acquirer: the order is declined at once (its callbacks go out; unless a risk
    rule filtered it) and the payment stops, ``expired``; False then, True when the payment goes on."""
    charge_id = store.claim_try(conn, payment["id"], n, try_number, due_at_ms, now_ms)
    if charge_id is None:
        return True  # made before, by another process or before a crash: its transaction committed
    expiry = Expiry(*store.card_expiry(conn, payment["card_id"]))
    card = rebills.StoredCard(payment["card_id"], payment["card_ref_id"], expiry)
    started = opening.open_order(conn, rebills.charge_on(_charge_order(payment, n, try_number, now_ms), card))
    if not started.created:  # the merchant used this client_orderid for an order of its own
        _declined(conn, payment["id"], charge_id, now_ms)
        return True
    store.set_charge(conn, charge_id, order_id=started.order_id)
    if not card.expired_by(date_of(due_at_ms)):
        return True
    if not started.decided:  # a risk rule's filtered outcome stands; the payment stops all the same
        # The processing job finds the sale final and ends without reaching the acquirer (``Worker._load``).
        declined = Outcome(Stage.DECLINED, EXPIRED_CARD_CODE, EXPIRED_CARD_MESSAGE)
        outcomes.record(conn, started.transaction_id, declined, now_ms)
    _stop(conn, payment["id"], Status.EXPIRED, now_ms)
    return False


def _charge_order(payment: Record, n: int, try_number: int, now_ms: int) -> NewOrder:
    """The sale of one try, on the payment's endpoint, amount and callbacks (before ``rebills.charge_on``)."""
    return NewOrder(
        merchant_id=payment["merchant_id"],
        endpoint_id=payment["endpoint_id"],
        client_orderid=charge_client_orderid(payment["client_orderid"], n, try_number),
        tx_type=TxType.SALE,
        amount=payment["amount"],
        currency=payment["currency"],
        email=payment["email"],
        order_desc=payment["order_desc"],
        customer="{}",
        redirect_url=None,
        server_callback_url=payment["server_callback_url"],
        notify_url=payment["notify_url"],
        merchant_data=payment["merchant_data"],
        # No request's fingerprint (those are 64 hex digits): a merchant's request that repeats this
        # client_orderid is refused as a duplicate with different fields (code 4).
        request_fingerprint=f"recurring/{payment['id']}/{n}/{try_number}",
        serial=randomness.uuid4(),
        now_ms=now_ms,
        recurring_payment_id=payment["id"],
    )


def _finish_if_done(conn: Connection, payment_id: int, now_ms: int) -> None:
    """An active payment whose schedule has no charge left and whose tries are all over is finished."""
    payment = store.lock(conn, payment_id)
    if payment is None or payment["status"] != Status.ACTIVE or payment["period"] is None:
        return
    if payment["next_charge_at_ms"] is None and not store.has_pending_tries(conn, payment_id):
        store.update_payment(conn, payment_id, now_ms, status=Status.FINISHED.value)


def cancel(conn: Connection, payment_id: int, now_ms: int) -> Record | None:
    """Stops an active payment: no charge or retry is made after this (a try whose order is processing
    still ends as the acquirer decides). A payment that has ended already is left as it is."""
    payment = store.lock(conn, payment_id)
    if payment is None:
        return None
    if payment["status"] == Status.ACTIVE:
        _stop(conn, payment_id, Status.CANCELLED, now_ms)
    return store.payment(conn, payment_id)


def lend_cards(conn: Connection, payment_ids: Collection[int]) -> PaymentEnded | None:
    """Before an order that uses the cards of ``payment_ids`` (a transfer from or to them) is written: the
    payments, locked until it is, so that a cancel comes wholly before it or wholly after it; and the
    refusal (``PaymentEnded``) the order gets if it is new and a payment is no longer active: after a
    cancel its card is used for nothing."""
    for payment_id, payment in store.lock_all(conn, set(payment_ids)).items():
        if payment["status"] != Status.ACTIVE:
            return PaymentEnded(payment_id, payment["status"])
    return None


def charge_now(conn: Connection, new: NewOrder) -> Started:
    """A charge of the recurring payment ``new`` names, made now at the merchant's request (CONTRACT §17's
    process-recurring-payments): its order opened as a rebill's, outside the payment's schedule and
    retries; or the order its client_orderid opened before. A new charge of a payment that has ended is
    refused (``PaymentEnded``), nothing written."""
    assert new.recurring_payment_id is not None, "a charge names its payment"
    ended = lend_cards(conn, [new.recurring_payment_id])
    started = opening.open_order(conn, new)
    if started.created and ended is not None:
        raise ended  # the unit of work is rolled back
    return started


def _stop(conn: Connection, payment_id: int, status: Status, now_ms: int) -> None:
    dropped = store.drop_retries(conn, payment_id)
    store.update_payment(conn, payment_id, now_ms, status=status.value, next_charge_at_ms=None)
    store.count_outcome(conn, payment_id, approved=False, now_ms=now_ms, count=dropped)
