"""Card references (CONTRACT §13): create-card-ref stores the card of an approved order for reuse,
get-card-info shows what may be shown of it, make-rebill charges it with no cardholder present."""

from __future__ import annotations

from kassa.api.context import OperationRequest, Reply
from kassa.api.errors import ApiError, Code, field_error
from kassa.api.handlers.common import card_fields, change_order, order_ref, serving_within_limits
from kassa.api.handlers.payments import new_order, open_order
from kassa.clock import now_ms, today
from kassa.core import followups, rebills, recurring
from kassa.domain.money import Currency
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
    shown = {_CARD_INFO_NAMES[name]: value for name, value in card_fields(card).items()}
    return {"serial-number": req.serial, **shown}


async def make_rebill(req: OperationRequest) -> Reply:
    """A new sale order on the stored card; the CVV, when sent, goes to the acquirer but starts no 3-D
    Secure: nobody is there to answer a challenge."""
    cur: Currency = req.values["currency"]
    endpoint = serving_within_limits(req, cur)
    stored = await usable_card(req)
    return await open_order(req, rebills.sale_on(new_order(req, TxType.SALE, endpoint.id, cur), stored))


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
