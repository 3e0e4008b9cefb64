"""The processor interface: what the engine asks of an acquirer connector, and what it gets back.

The sandbox acquirer implements it; a real connector would too. The transaction's serial number is
the idempotency key a connector passes on, so a retried job never charges twice at the acquirer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kassa.domain.lifecycle import TxType
from kassa.domain.threeds import ThreeDSPath
from kassa.storage.orders import Outcome


@dataclass(frozen=True, slots=True)
class CardDetails:
    pan: str
    exp_month: int
    exp_year: int
    holder_name: str
    cvv: str | None  # absent for card-not-present charges (rebills, recurring)


@dataclass(frozen=True, slots=True)
class AuthorizationRequest:
    order_id: int
    serial: str
    tx_type: TxType
    amount: int
    currency: str
    card: CardDetails | None
    cardholder_present: bool = True  # False for a rebill: no 3-D Secure, nobody could answer it


class Processor(Protocol):
    async def three_ds_path(self, request: AuthorizationRequest) -> ThreeDSPath | None:
        """How the card's issuer wants the cardholder authenticated, or None (not enrolled)."""

    async def process(self, request: AuthorizationRequest) -> Outcome:
        """Runs one transaction (authorization, capture, reversal, ...) at the acquirer."""

    async def reconcile(self, request: AuthorizationRequest) -> Outcome:
        """Asks the acquirer for the final outcome of a transaction that ended ``unknown``."""
