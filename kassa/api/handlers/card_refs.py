"""Card references (CONTRACT §13, §17): create-card-ref stores the card of an approved order for reuse,
get-card-info shows what may be shown of it, make-rebill (and make-rebill-sale) charges it and
make-rebill-preauth holds an amount on it, with no cardholder present."""

from __future__ import annotations

import dataclasses

from kassa.api.context import OperationRequest, Reply
from kassa.api.errors import ApiError, Code, field_error
from kassa.api.handlers.common import card_fields, change_order, order_ref, serving_within_limits
from kassa.api.handlers.payments import new_order, open_order
from kassa.clock import now_ms, today
from kassa.core import followups, rebills, recurring
from kassa.domain.money import Currency
from kassa.domain.order_view import CardView
from kassa.domain.rebills import kept
from kassa.domain.transactions import TxType
from kassa.storage import card_refs as card_ref_store
from kassa.storage.prepared import Record
from kassa.vault.keys import card_ref_unique_id

_MAX_REF_DIGITS = 18  # an int64 id
# get-card-info names the card fields status reports (CONTRACT §5) its own way.
_CARD_INFO_NAMES = {
    "cardholder-name": "card-printed-name",
    "bin": "bin",
    "last-four-digits": "last-four-digits",
    "card-exp-month": "expire-month",
    "card-exp-year": "expire-year",
    "card-type": "card-type",
}


async def create_card_ref(req: OperationRequest) -> Reply:
    ref, now = order_ref(req), now_ms()
    ref_id = await change_order(req, lambda conn: followups.card_reference(conn, ref, now))
    return _card_ref_reply(req, ref_id)


async def create_card_ref_v4(req: OperationRequest) -> Reply:
    """v2's reference, with its unique id and the recurring payment (no schedule) that tokenises the card,
    usable later where a ``card_recurring_payment_id`` is asked for; the same ids for every call."""
    ref, now = order_ref(req), now_ms()
    made = await change_order(req, lambda conn: recurring.tokenise(conn, ref, now))
    return {
        **_card_ref_reply(req, made.card_ref_id),
        "unq-card-ref-id": card_ref_unique_id(req.services.vault, req.merchant_id, made.pan_fingerprint),
        "recurring-payment-id": str(made.recurring_payment_id),
    }


def _card_ref_reply(req: OperationRequest, ref_id: int) -> Reply:
    return {
        "serial-number": req.serial,
        "status": "approved",
        "merchant-order-id": req.values["client_orderid"],
        "paynet-order-id": str(req.values["orderid"]),
        "card-ref-id": str(ref_id),
    }


async def get_card_info(req: OperationRequest) -> Reply:
    _ref_id, card = await stored_card(req)
    shown = {_CARD_INFO_NAMES[name]: value for name, value in card_fields(CardView.of(card)).items()}
    return {"serial-number": req.serial, **shown}


async def make_rebill(req: OperationRequest) -> Reply:
    """A new sale order on the stored card (make-rebill, make-rebill-sale)."""
    return await _rebill(req, TxType.SALE)


async def make_rebill_preauth(req: OperationRequest) -> Reply:
    """A new preauth order on the stored card, captured, voided or returned as any preauth."""
    return await _rebill(req, TxType.PREAUTH)


async def _rebill(req: OperationRequest, tx_type: TxType) -> Reply:
    """An order of ``tx_type`` charging the stored card, at ``amount`` and then at each enumerated amount
    until one is approved, sent as ``recurrent_scenario`` says. The CVV, when sent, goes to the acquirer
    but starts no 3-D Secure: nobody is there to answer a challenge."""
    values = req.values
    cur: Currency = values["currency"]
    endpoint = serving_within_limits(req, cur)
    lower: tuple[int, ...] = values.get("enumerate_amounts", ())
    if lower and (problem := endpoint.amount_limit_problem(lower[-1])):
        raise ApiError(Code.AMOUNT, f"enumerate_amounts: {problem}")
    stored = await usable_card(req)
    new = rebills.charge_on(new_order(req, tx_type, endpoint.id, cur), stored)
    scenario: str | None = values.get("recurrent_scenario")
    return await open_order(req, dataclasses.replace(new, recurrent_scenario=scenario, enumerate_amounts=kept(lower)))


async def usable_card(req: OperationRequest, field: str = "cardrefid") -> rebills.StoredCard:
    """The card the request's reference (``field``) names, to charge or pay to: refused when it has expired."""
    ref_id, card = await stored_card(req, field)
    stored = rebills.StoredCard.of(card, ref_id)
    if stored.expired_by(today()):
        raise field_error(field, "names a card that has expired")
    return stored


async def stored_card(req: OperationRequest, field: str = "cardrefid") -> tuple[int, Record]:
    """The reference the request's ``field`` names, and its card; code 5 when it is not this merchant's."""
    text: str = req.values[field]
    if not (text.isascii() and text.isdigit() and len(text) <= _MAX_REF_DIGITS):
        raise _no_such_reference()
    ref_id, merchant_id = int(text), req.merchant_id
    card = await req.services.db.read(lambda conn: card_ref_store.card_of(conn, merchant_id, ref_id))
    if card is None:
        raise _no_such_reference()
    return ref_id, card


def _no_such_reference() -> ApiError:
    return ApiError(Code.NOT_FOUND, "no such card reference for this merchant")
