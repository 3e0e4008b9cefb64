"""The sandbox acquirer of CONTRACT §9: the outcome is decided by the card's CVV2, or, for operations
without one, by the last three digits of the card number; a card payment the card would pass is declined
for insufficient funds when its amount says so (``triggers.short_of_funds``)."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
from typing import assert_never

from kassa.domain import destinations
from kassa.domain.action_codes import ActionCode
from kassa.domain.destinations import BankAccount, CardNumber, EWallet, Phone
from kassa.domain.lifecycle import Stage
from kassa.processors.interface import (
    Authorize,
    Capture,
    Card,
    Credit,
    Destination,
    Outcome,
    Refund,
    Request,
    Reverse,
    Transfer,
    Verify,
)
from kassa.sandbox.triggers import Trigger, short_of_funds, trigger_of


class SandboxProcessor:
    def __init__(self, latency_ms: int = 0) -> None:
        self._latency = latency_ms / 1000

    async def process(self, request: Request, *, first: bool = False) -> Outcome:
        if self._latency:
            await asyncio.sleep(self._latency)
        match request:
            case Capture() | Reverse() | Refund():  # on an authorization that exists: always accepted
                return _approved(processor_tx_id(request.order_id), request.serial)
            case Authorize() | Verify() | Transfer():
                text, has_cvv = _card_trigger(request.card)
            case Credit():
                text, has_cvv = _destination_trigger(request.destination)
            case _:
                assert_never(request)
        outcome = decide(trigger_of(text), has_cvv, request.order_id, request.serial)
        if (
            isinstance(request, Authorize)
            and outcome.stage is Stage.APPROVED
            and short_of_funds(request.amount, has_cvv)
        ):
            return _declined(ActionCode.INSUFFICIENT_FUNDS, outcome.processor_tx_id or "")
        return _with_name_check(request, outcome)

    async def reconcile(self, request: Request) -> Outcome:
        """The sandbox acquirer settles every ``unknown`` to approved once asked (the delay before it
        is asked is the reconciliation job's schedule)."""
        return _approved(processor_tx_id(request.order_id), request.serial)


def _with_name_check(request: Request, outcome: Outcome) -> Outcome:
    """A phone payout's check asks the instant payment scheme whose the number is: the sandbox's scheme
    knows every number by the name the merchant sent, and answers it masked."""
    if not isinstance(request, Credit) or not request.check_only or not isinstance(request.destination, Phone):
        return outcome
    if outcome.stage is not Stage.APPROVED:
        return outcome
    return dataclasses.replace(outcome, recipient_name=destinations.mask_name(request.destination.receiver_name))


def _card_trigger(card: Card) -> tuple[str, bool]:
    """The CVV2 when there is one, else the number's last three digits; and whether it was a CVV2."""
    return (card.cvv, True) if card.cvv else (card.pan[-3:], False)


def _destination_trigger(destination: Destination) -> tuple[str, bool]:
    match destination:
        case Card():
            return _card_trigger(destination)
        case BankAccount() | EWallet() | Phone() | CardNumber():
            return destinations.trigger_digits(destinations.number_of(destination)), False
        case _:
            assert_never(destination)


def decide(trigger: Trigger | None, has_cvv: bool, order_id: int, serial: str) -> Outcome:
    tx_id = processor_tx_id(order_id)
    match trigger:
        case None:  # not in the table: a CVV2 is declined, a number's last digits approve
            return _declined(ActionCode.DO_NOT_HONOUR, tx_id) if has_cvv else _approved(tx_id, serial)
        case Trigger.APPROVE | Trigger.APPROVE_FOUR_DIGITS | Trigger.APPROVE_WITHOUT_3DS:
            return _approved(tx_id, serial)
        case (
            Trigger.CHALLENGE
            | Trigger.CHALLENGE_1
            | Trigger.METHOD_FRICTIONLESS
            | Trigger.METHOD_CHALLENGE
            | Trigger.ATTEMPTED
            | Trigger.REJECTED
        ):  # authorization comes only once the authentication allowed it
            return _approved(tx_id, serial)
        case Trigger.UNKNOWN:
            return Outcome(Stage.UNKNOWN, processor_tx_id=tx_id)
        case Trigger.FILTERED:
            return Outcome(Stage.FILTERED, "555", "Refused by fraud rules", processor_tx_id=tx_id)
        case Trigger.ACQUIRER_ERROR:
            return Outcome(Stage.ERROR, "500", "Acquirer failure", processor_tx_id=tx_id)
        case Trigger.EXPIRED_CARD | Trigger.INSUFFICIENT_FUNDS | Trigger.NOT_PERMITTED | Trigger.STOLEN_CARD:
            return _declined(ActionCode(trigger.value), tx_id)
        case _:
            assert_never(trigger)


def processor_tx_id(order_id: int) -> str:
    """The sandbox acquirer's transaction id (CONTRACT §9)."""
    return f"PNTEST-{order_id}"


def _approved(tx_id: str, serial: str) -> Outcome:
    # Stable per transaction, so a retried authorization answers the same codes.
    digest = int(hashlib.sha256(serial.encode()).hexdigest(), 16)
    return Outcome(
        Stage.APPROVED,
        approval_code=f"{digest % 1_000_000:06d}",
        processor_rrn=f"{digest % 10**12:012d}",
        processor_tx_id=tx_id,
    )


def _declined(code: ActionCode, tx_id: str) -> Outcome:
    return Outcome(Stage.DECLINED, code, code.message, processor_tx_id=tx_id)
