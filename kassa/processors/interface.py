"""The processor interface: what the engine asks of an acquirer connector, and what it gets back.

The sandbox acquirer implements it; a real connector would too. The request carries the transaction and
the payment instrument it runs on; the transaction's serial number is the idempotency key a connector
passes on, so a retried job never charges twice at the acquirer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kassa.domain.destinations import BankAccount, CardNumber, EWallet, Phone
from kassa.domain.lifecycle import Stage
from kassa.domain.threeds_protocol import ThreeDSPath
from kassa.domain.transactions import TxType


@dataclass(frozen=True, slots=True)
class Card:
    pan: str
    exp_month: int
    exp_year: int
    holder_name: str
    cvv: str | None  # absent for card-not-present charges (rebills, recurring)


# What a transaction can run on: a card, or where a payout goes. A processor's ``match`` over it ends in
# ``assert_never``, so a new variant is handled everywhere before it type-checks.
Instrument = Card | BankAccount | EWallet | Phone | CardNumber


@dataclass(frozen=True, slots=True)
class TransactionRequest:
    order_id: int
    serial: str
    tx_type: TxType
    amount: int
    currency: str
    instrument: Instrument | None  # None for follow-ups, which act on the order's authorization
    cardholder_present: bool = True  # False for a rebill: no 3-D Secure, nobody could answer it
    destination: Instrument | None = None  # a card-to-card transfer's receiving card


@dataclass(frozen=True, slots=True)
class Outcome:
    """The acquirer's answer for one transaction."""

    stage: Stage
    error_code: str | None = None
    error_message: str | None = None
    approval_code: str | None = None
    processor_rrn: str | None = None
    processor_tx_id: str | None = None
    recipient_name: str | None = None  # a payout check's: the receiver's name the scheme holds, masked


class Processor(Protocol):
    async def three_ds_path(self, request: TransactionRequest) -> ThreeDSPath | None:
        """How the card's issuer wants the cardholder authenticated, or None (not enrolled)."""

    async def process(self, request: TransactionRequest) -> Outcome:
        """Runs one transaction (authorization, capture, reversal, ...) at the acquirer."""

    async def reconcile(self, request: TransactionRequest) -> Outcome:
        """Asks the acquirer for the final outcome of a transaction that ended ``unknown``."""
