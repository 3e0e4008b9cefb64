"""Opening a payout (CONTRACT §13), or a transfer or eligibility check, which go somewhere as a payout
does: its order, first transaction and destination, and the reservation of its amount from the
merchant's available balance (for the types that take from it), in one database transaction. A payout
the balance does not cover is declined at once with 116 and moves nothing; its order exists, with its
callbacks."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from dataclasses import dataclass

import orjson
from sqlalchemy import Connection

from kassa.core import opening, outcomes, recurring, risk
from kassa.core.followups import OrderRef, locked_order
from kassa.core.outbox import NOTHING_QUEUED, Queued
from kassa.domain import cards, destinations, ledger
from kassa.domain.action_codes import ActionCode
from kassa.domain.destinations import Kind
from kassa.domain.lifecycle import Stage, status_of
from kassa.domain.orders import OrderRuleError, Refusal
from kassa.domain.transactions import TxType, rule
from kassa.processors.interface import Outcome
from kassa.storage import jobs as job_queue
from kassa.storage import ledger as ledger_store
from kassa.storage import orders as order_store
from kassa.storage import payouts as payout_store
from kassa.storage.jobs import Job, JobKind, Lease
from kassa.storage.orders import NewOrder, Started
from kassa.storage.payouts import NewDestination
from kassa.storage.prepared import Record
from kassa.vault.keys import Vault, destination_context

NOT_COVERED = Outcome(
    Stage.DECLINED,
    ActionCode.INSUFFICIENT_FUNDS,
    ActionCode.INSUFFICIENT_FUNDS.message + " on the merchant's balance",
)


def sealed(vault: Vault, merchant_id: int, kind: Kind, details: destinations.Destination) -> NewDestination:
    """A checked destination as stored: its fields under the vault, its number masked (a card number as
    BIN and last four, as cards are shown)."""
    number = destinations.number_of(details)
    masked = cards.mask_pan(number) if kind is Kind.CARD else destinations.mask_account(number)
    ciphertext = vault.encrypt(orjson.dumps(details).decode(), destination_context(merchant_id))
    return NewDestination(kind.value, ciphertext, masked)


@dataclass(frozen=True, slots=True)
class OpenedPayout:
    started: Started
    queued: Queued = NOTHING_QUEUED  # the decline's callbacks, when the balance did not cover it


def open_payout(
    conn: Connection, new: NewOrder, destination: NewDestination | None, lent_by: Collection[int] = ()
) -> OpenedPayout:
    """Opens the payout ``new`` describes (to its card, or to ``destination``), or finds the one its
    client_orderid opened before: then nothing is written. ``lent_by``: the recurring payments whose cards
    it uses; a new payout is refused (``PaymentEnded``) when one has ended, while a repeat of one opened
    before gets its first answer whatever happened to the payment since."""
    ended = recurring.lend_cards(conn, lent_by)
    started = opening.insert_rows(conn, new)
    if not started.created:
        return OpenedPayout(started)
    if ended is not None:
        raise ended  # the unit of work is rolled back: nothing of the refused transfer is written
    order_id, tx_id = started.order_id, started.transaction_id
    if destination is not None:
        payout_store.add_destination(conn, order_id, destination)
    order = order_store.lock_order(conn, order_id)  # with the mode it was written in: whose balance it draws on
    if (declined := _declined_uncovered(conn, order, new.tx_type, tx_id, new.amount, new.now_ms)) is not None:
        # A payout form's page then shows the outcome and takes the recipient back to the merchant.
        return OpenedPayout(opening.open_form(conn, new, started) if new.hosted else started, declined)
    # Screened once its amount is reserved: a filtered payout gives it back as any failed one does.
    rules = risk.rules_for(conn, new.merchant_id, new.endpoint_id)
    return OpenedPayout(opening.screened_then_next(conn, new, started, rules))


def _declined_uncovered(
    conn: Connection, order: Record, tx_type: TxType, tx_id: int, amount: int, now_ms: int
) -> Queued | None:
    """Reserves what the transaction's acceptance takes from the available balance (nothing for a
    check); when the balance does not cover it, the transaction is declined (116) instead: its callbacks."""
    reservation = ledger.posting(rule(tx_type).on_opened, amount, ledger.Balances(), multi_capture=False)
    if not reservation or ledger_store.post_if_covered(conn, order, tx_id, reservation, now_ms):
        return None
    return outcomes.record(conn, tx_id, NOT_COVERED, now_ms)


@dataclass(frozen=True, slots=True)
class Paid:
    """payout-pay's answer: the payout transaction (made now, or by the first payout-pay of the order)."""

    order_id: int
    endpoint_id: int
    serial: str
    job: Job | None = None
    queued: Queued = NOTHING_QUEUED


def pay(conn: Connection, ref: OrderRef, serial: str, now_ms: int, lease: Lease | None) -> Paid:
    """Adds the payout to an order payout-check registered, once its check was approved, reserving its
    amount as a one-step payout does; a second call answers the first's payout (CONTRACT §13)."""
    order = locked_order(conn, ref)
    if TxType(order["tx_type"]) is not TxType.PAYOUT_CHECK:
        raise OrderRuleError(Refusal.STATE, "the order is not a payout registered by payout-check")
    check, *later = order_store.transactions_of(conn, order["id"])
    if later:
        return Paid(order["id"], order["endpoint_id"], later[0]["serial_number"])
    if Stage(check["stage"]) is not Stage.APPROVED:
        checked = status_of(Stage(check["stage"])).value
        raise OrderRuleError(Refusal.STATE, f"the payout's check is {checked}: only an approved check is paid")
    tx_id = order_store.insert_transaction(
        conn, order["id"], TxType.PAYOUT, order["amount"], order["currency"], serial, now_ms
    )
    paid = Paid(order["id"], order["endpoint_id"], serial)
    if (declined := _declined_uncovered(conn, order, TxType.PAYOUT, tx_id, order["amount"], now_ms)) is not None:
        return dataclasses.replace(paid, queued=declined)
    job = job_queue.add(conn, JobKind.PROCESS, tx_id, run_at_ms=now_ms, now_ms=now_ms, lease=lease)
    return dataclasses.replace(paid, job=job)
