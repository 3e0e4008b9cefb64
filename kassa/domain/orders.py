"""Order rules of CONTRACT §7: what capture, return and void may do given an order's transactions.

Plain data in, a decision out. Callers hold the order's row lock while they ask, so the decision and
the transaction it allows are written atomically, on one node or many.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from kassa.domain.lifecycle import Stage, is_final
from kassa.domain.transactions import Direction, FollowUp, TxType, rule


class Refusal(StrEnum):
    STATE = "state"  # not allowed in the order's current state
    AMOUNT = "amount"  # more than the order allows


class OrderRuleError(Exception):
    def __init__(self, refusal: Refusal, message: str, left: int | None = None) -> None:
        super().__init__(message)
        self.refusal = refusal
        self.message = message
        self.left = left  # a refused amount's: what the order still allows (minor units), for operators


@dataclass(frozen=True, slots=True)
class TxRecord:
    tx_type: TxType
    stage: Stage
    amount: int
    settled: bool = False

    @property
    def approved(self) -> bool:
        return self.stage is Stage.APPROVED

    @property
    def open(self) -> bool:
        """Still able to end approved: not yet final (``unknown`` included)."""
        return not is_final(self.stage)


@dataclass(frozen=True, slots=True)
class OrderState:
    kind: TxType  # the order-starting transaction type
    amount: int  # the initial (authorized) amount
    multi_capture: bool
    transactions: tuple[TxRecord, ...]  # oldest first; the first is the order-starting one

    @property
    def root(self) -> TxRecord:
        return self.transactions[0]

    def allows(self, follow_up: FollowUp) -> bool:
        """Whether the kind of order allows ``follow_up`` at all (its state decides the rest)."""
        return follow_up in rule(self.kind).follow_ups

    def total(self, types: Iterable[TxType], *, include_open: bool = False) -> int:
        wanted = frozenset(types)
        return sum(
            tx.amount
            for tx in self.transactions[1:]
            if tx.tx_type in wanted and (tx.approved or (include_open and tx.open))
        )

    def any_of(self, types: Iterable[TxType], *, include_open: bool = True) -> bool:
        wanted = frozenset(types)
        return any(tx.tx_type in wanted and (tx.approved or (include_open and tx.open)) for tx in self.transactions[1:])

    @property
    def captured(self) -> int:
        """Money taken from the cardholder: an approved sale, or the approved captures of a preauth."""
        if rule(self.kind).direction is Direction.IN:  # a sale: the order's own transaction took it
            return self.amount if self.root.approved else 0
        return self.total([TxType.CAPTURE])

    @property
    def refunded(self) -> int:
        return self.total([TxType.REVERSAL])

    @property
    def given_back_left(self) -> int:
        """What is captured and not yet returned nor charged back (those in flight count as done): the most
        a further return or chargeback may take."""
        return self.captured - self.total([TxType.REVERSAL, TxType.CHARGEBACK], include_open=True)

    @property
    def ended(self) -> bool:
        """Cancelled or voided (approved, or on its way)."""
        return self.any_of([TxType.CANCEL, TxType.VOID])

    @property
    def settled(self) -> bool:
        return any(tx.settled for tx in self.transactions if rule(tx.tx_type).settles)

    @property
    def busy(self) -> bool:
        return any(tx.open for tx in self.transactions[1:])


def plan_capture(order: OrderState, amount: int | None) -> int:
    if not order.allows(FollowUp.CAPTURE):
        raise OrderRuleError(Refusal.STATE, "capture applies to a preauth order")
    if not order.root.approved:
        raise OrderRuleError(Refusal.STATE, "the preauth is not approved")
    if order.ended:
        raise OrderRuleError(Refusal.STATE, "the authorization was cancelled, voided or expired")
    if not order.multi_capture and order.any_of([TxType.CAPTURE]):
        raise OrderRuleError(Refusal.STATE, "the preauth was already captured")
    remaining = order.amount - order.total([TxType.CAPTURE], include_open=True)
    return _within(amount, remaining, "the remaining authorization")


def plan_return(order: OrderState, amount: int | None) -> tuple[TxType, int]:
    if not order.root.approved or not order.allows(FollowUp.RETURN):
        raise OrderRuleError(Refusal.STATE, "return needs an approved sale, preauth or capture")
    if order.ended:
        raise OrderRuleError(Refusal.STATE, "the order was cancelled or voided")
    if order.allows(FollowUp.CAPTURE) and not order.any_of([TxType.CAPTURE]):  # nothing taken yet: let go
        if amount is not None and amount != order.amount:
            raise OrderRuleError(Refusal.AMOUNT, "a preauth is cancelled whole: omit amount")
        return TxType.CANCEL, order.amount
    return TxType.REVERSAL, _within(amount, order.given_back_left, "what is left to return")


def plan_chargeback(order: OrderState, amount: int) -> int:
    """A chargeback the acquirer reported (CONTRACT §16): money taken that the card's issuer took back, at
    most what was captured and is not yet returned or charged back."""
    if not order.root.approved or not order.allows(FollowUp.RETURN):
        raise OrderRuleError(Refusal.STATE, "a chargeback needs an approved sale or a captured preauth")
    if amount <= 0:
        raise OrderRuleError(Refusal.AMOUNT, "the amount must be greater than zero")
    left = order.given_back_left
    if amount > left:
        message = "amount exceeds what is left to charge back (captured, not returned or charged back)"
        raise OrderRuleError(Refusal.AMOUNT, message, left=max(left, 0))
    return amount


def plan_void(order: OrderState) -> int:
    if not order.root.approved or not order.allows(FollowUp.VOID):
        raise OrderRuleError(Refusal.STATE, "void needs an approved sale, preauth or capture")
    if order.settled:
        raise OrderRuleError(Refusal.STATE, "settled transactions cannot be voided: use return")
    if order.ended:
        raise OrderRuleError(Refusal.STATE, "the order was already cancelled or voided")
    if order.busy:
        raise OrderRuleError(Refusal.STATE, "another operation on this order is in progress")
    if order.any_of([TxType.REVERSAL]):
        raise OrderRuleError(Refusal.STATE, "the order has returns: use return")
    if order.any_of([TxType.CHARGEBACK]):
        raise OrderRuleError(Refusal.STATE, "the order has a chargeback")
    return order.captured or order.amount


def plan_card_ref(order: OrderState) -> None:
    """A card reference is made from an approved sale, preauth or account verification; returns,
    captures and voids after it do not matter: the card was good."""
    if not order.allows(FollowUp.CARD_REF) or not order.root.approved:
        raise OrderRuleError(Refusal.STATE, "create-card-ref needs an approved sale, preauth or account verification")


def _within(amount: int | None, available: int, what: str) -> int:
    if available <= 0:
        raise OrderRuleError(Refusal.AMOUNT, f"nothing is left: {what} is 0")
    chosen = available if amount is None else amount
    if chosen > available:
        raise OrderRuleError(Refusal.AMOUNT, f"amount exceeds {what}")
    return chosen


def may_expire(order: OrderState) -> bool:
    """An authorization never captured, cancelled or voided, with nothing in flight."""
    return (
        order.allows(FollowUp.EXPIRY)
        and order.root.approved
        and not order.ended
        and not order.busy
        and not order.any_of([TxType.CAPTURE])
    )
