"""A charge of a stored card with no cardholder present (CONTRACT §13, §17): make-rebill's sale or
preauth, and each charge of a recurring payment. Both open it as ``charge_on`` describes, through
``opening.open_order``; a rebill that enumerates amounts tries the next one after a decline (``next_try``)."""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass

from sqlalchemy import Connection

from kassa.domain import cards, rebills
from kassa.domain.lifecycle import Stage
from kassa.domain.transactions import Flow, TxType, rule
from kassa.processors.interface import Outcome
from kassa.storage import jobs as job_queue
from kassa.storage import orders as order_store
from kassa.storage.jobs import JobKind
from kassa.storage.orders import NewOrder
from kassa.storage.prepared import Record


@dataclass(frozen=True, slots=True)
class StoredCard:
    card_id: int
    ref_id: int | None  # the card reference charged, when the charge names one
    expiry: cards.Expiry

    @classmethod
    def of(cls, card: Record, ref_id: int | None) -> StoredCard:
        """From a card row (``id``, ``exp_month``, ``exp_year``)."""
        return cls(card["id"], ref_id, cards.Expiry(card["exp_month"], card["exp_year"]))

    def expired_by(self, date: datetime.date) -> bool:
        return self.expiry.passed(date)


def charge_on(new: NewOrder, card: StoredCard) -> NewOrder:
    """``new`` (a sale or a preauth) as a charge of ``card``: the stored card is charged, no card is stored
    again."""
    return dataclasses.replace(new, card=None, card_id=card.card_id, card_ref_id=card.ref_id)


def next_try(conn: Connection, order: Record, transaction: Record, outcome: Outcome, now_ms: int) -> bool:
    """After ``outcome`` of a rebill's authorization still processing (the order and its transaction
    locked): when it is a decline and the order enumerates a lower amount, that amount is the order's and
    the transaction's, and the transaction is processed again, nothing recorded of the decline; True then.
    A try that ended otherwise (``unknown`` included, whatever reconciliation makes of it) ends the rebill;
    a follow-up of the rebill (a capture, a return, a void) declined is recorded as declined."""
    if outcome.stage is not Stage.DECLINED or Stage(transaction["stage"]) is not Stage.PROCESSING:
        return False
    if rule(TxType(transaction["tx_type"])).flow is not Flow.AUTHORIZE:
        return False
    amount = rebills.next_amount(order["enumerate_amounts"], transaction["amount"])
    if amount is None:
        return False
    order_store.set_amount(conn, order["id"], transaction["id"], amount, now_ms)
    job_queue.add(conn, JobKind.PROCESS, transaction["id"], run_at_ms=now_ms, now_ms=now_ms)
    return True
