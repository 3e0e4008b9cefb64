"""What the acquirer is asked for one transaction: its typed request (``processors.interface``), made from
what a worker read (``storage.orders.AuthorizationWork``), with the card and destination opened by the
vault. The transaction type's flow (``domain.transactions``) picks the request type."""

from __future__ import annotations

from typing import Any, assert_never

import orjson

from kassa.domain import destinations, rebills
from kassa.domain.rebills import Scenario
from kassa.domain.transactions import Direction, Flow, TxType, rule
from kassa.processors.interface import (
    Authorize,
    Capture,
    Card,
    CardholderRequest,
    Credit,
    Initiator,
    Original,
    Refund,
    Request,
    Reverse,
    ThreeDSResult,
    Transfer,
    Verify,
)
from kassa.storage.orders import AuthorizationWork
from kassa.storage.prepared import Record
from kassa.vault.keys import Vault, cvv_context, destination_context, pan_context


class NotProcessable(ValueError):
    """The stored transaction lacks what its flow needs (a card, an original): a fault, not a decline."""


def request_of(work: AuthorizationWork, vault: Vault) -> Request:
    tx, order = work.transaction, work.order
    row = rule(TxType(tx["tx_type"]))
    base: dict[str, Any] = {
        "order_id": order["id"],
        "serial": tx["serial_number"],
        "amount": tx["amount"],
        "currency": tx["currency"],
        "descriptor": order["descriptor"],
    }
    card, destination = _card(work, vault), _destination(work, vault)
    three_ds = _three_ds(work.authentication)
    match row.flow:
        case Flow.AUTHORIZE:
            capture = row.direction is Direction.IN
            return Authorize(**base, card=_needed(card), capture=capture, initiator=initiator(order), three_ds=three_ds)
        case Flow.VERIFY:
            return Verify(**base, card=_needed(card), initiator=initiator(order), three_ds=three_ds)
        case Flow.CAPTURE:
            return Capture(**base, original=_original(work), card=card)
        case Flow.REVERSE:
            return Reverse(**base, original=_original(work), card=card)
        case Flow.REFUND:
            return Refund(**base, original=_original(work), card=card)
        case Flow.CREDIT | Flow.CHECK:
            to = card or destination
            if to is None:
                raise NotProcessable("a payout without a destination")
            return Credit(**base, destination=to, check_only=row.flow is Flow.CHECK)
        case Flow.TRANSFER:
            if not isinstance(destination, destinations.CardNumber):
                raise NotProcessable("a transfer without a receiving card")
            card = _needed(card)
            return Transfer(**base, card=card, destination=destination, initiator=initiator(order), three_ds=three_ds)
        case Flow.NONE:
            raise NotProcessable(f"{tx['tx_type']} is not sent to an acquirer")
        case _:
            assert_never(row.flow)


def authenticable(request: Request) -> CardholderRequest | None:
    """``request``, when its cardholder is there to be authenticated (3-D Secure): a card payment of the
    cardholder's own (the types whose rule says ``cardholder_present``), not a rebill or a recurring
    charge, where nobody could answer."""
    if isinstance(request, Authorize | Verify | Transfer) and request.initiator is Initiator.CARDHOLDER:
        return request
    return None


_SCENARIOS = {Scenario.REGULAR: Initiator.RECURRING, Scenario.IRREGULAR: Initiator.UNSCHEDULED}


def initiator(order: Record) -> Initiator:
    """A recurring payment's charge, a rebill on a stored card (recurring or unscheduled as its
    ``recurrent_scenario`` says; unscheduled without one), or the cardholder's own payment."""
    if not rebills.merchant_initiated(order["card_ref_id"], order["recurring_payment_id"]):
        return Initiator.CARDHOLDER
    if order["recurrent_scenario"] is not None:
        return _SCENARIOS[Scenario(order["recurrent_scenario"])]
    return Initiator.RECURRING if order["recurring_payment_id"] is not None else Initiator.UNSCHEDULED


def _needed(card: Card | None) -> Card:
    if card is None:
        raise NotProcessable("a card payment without a card")
    return card


def _original(work: AuthorizationWork) -> Original:
    found = work.original
    if found is None:
        raise NotProcessable("a follow-up without the authorization it acts on")
    return Original(found["serial_number"], found["amount"], found["approval_code"], found["processor_rrn"])


def _three_ds(record: Record | None) -> ThreeDSResult | None:
    if record is None or record["trans_status"] not in ("Y", "A"):
        return None
    return ThreeDSResult(
        record["version"], record["trans_status"], record["eci"], record["authentication_value"], record["ds_trans_id"]
    )


def _card(work: AuthorizationWork, vault: Vault) -> Card | None:
    """The order's card, opened, with the CVV kept for its authorization."""
    card = work.card
    if card is None:
        return None
    cvv = None
    if work.cvv_ciphertext is not None:
        cvv = vault.decrypt(work.cvv_ciphertext, cvv_context(work.transaction["serial_number"]))
    return Card(
        pan=vault.decrypt(card["pan_ciphertext"], pan_context(work.order["merchant_id"])),
        exp_month=card["exp_month"],
        exp_year=card["exp_year"],
        holder_name=card["holder_name"],
        brand=card["brand"],
        cvv=cvv,
    )


def _destination(work: AuthorizationWork, vault: Vault) -> destinations.Destination | None:
    """Where a payout or transfer goes when it is not (only) the order's card, opened."""
    if work.destination is None:
        return None
    context = destination_context(work.order["merchant_id"])
    details = vault.decrypt(work.destination["details_ciphertext"], context)
    return destinations.unsealed(work.destination["kind"], orjson.loads(details))
