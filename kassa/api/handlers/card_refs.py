"""Card references (CONTRACT §13, §17): create-card-ref stores the card of an approved order for reuse,
get-card-info shows what may be shown of it, make-rebill (and make-rebill-sale) charges it and
make-rebill-preauth holds an amount on it, with no cardholder present."""

from __future__ import annotations

import dataclasses

from kassa.api.answers import Accepted, CardInfo, CardReference, CardReferenceV4
from kassa.api.context import OperationRequest
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


async def create_card_ref(req: OperationRequest) -> CardReference:
    ref, now = order_ref(req), now_ms()
    ref_id = await change_order(req, lambda conn: followups.card_reference(conn, ref, now))
    return _card_ref_reply(req, ref_id)


async def create_card_ref_v4(req: OperationRequest) -> CardReferenceV4:
    """v2's reference, with its unique id and the recurring payment (no schedule) that tokenises the card,
    usable later where a ``card_recurring_payment_id`` is asked for; the same ids for every call."""
    ref, now = order_ref(req), now_ms()
    made = await change_order(req, lambda conn: recurring.tokenise(conn, ref, now))
    return CardReferenceV4(
        **_card_ref_reply(req, made.card_ref_id).attributes(),
        unq_card_ref_id=card_ref_unique_id(req.services.vault, req.merchant_id, made.pan_fingerprint),
        recurring_payment_id=str(made.recurring_payment_id),
    )


def _card_ref_reply(req: OperationRequest, ref_id: int) -> CardReference:
    return CardReference(
        serial_number=req.serial,
        status="approved",
        merchant_order_id=req.values["client_orderid"],
        paynet_order_id=str(req.values["orderid"]),
        card_ref_id=str(ref_id),
    )


async def get_card_info(req: OperationRequest) -> CardInfo:
    """The card status reports (CONTRACT §5), its fields named get-card-info's way."""
    _ref_id, card = await stored_card(req)
    shown = card_fields(CardView.of(card))
    return CardInfo(
        serial_number=req.serial,
        bin=shown.bin,
        last_four_digits=shown.last_four_digits,
        expire_month=shown.card_exp_month,
        expire_year=shown.card_exp_year,
        card_printed_name=shown.cardholder_name,
        card_type=shown.card_type,
    )


async def make_rebill(req: OperationRequest) -> Accepted:
    """A new sale order on the stored card (make-rebill, make-rebill-sale)."""
    return await _rebill(req, TxType.SALE)


async def make_rebill_preauth(req: OperationRequest) -> Accepted:
    """A new preauth order on the stored card, captured, voided or returned as any preauth."""
    return await _rebill(req, TxType.PREAUTH)


async def _rebill(req: OperationRequest, tx_type: TxType) -> Accepted:
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
