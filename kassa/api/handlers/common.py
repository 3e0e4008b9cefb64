"""Rules shared by handlers of several operation families."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Connection

from kassa.api import signatures
from kassa.api.answers import Accepted, CardShown
from kassa.api.context import OperationRequest
from kassa.api.errors import ApiError, Code, field_error
from kassa.core.errors import FieldMismatch, NoSuchOrder, NotWaiting, SignatureMismatch
from kassa.core.followups import OrderRef
from kassa.domain.merchants import Endpoint
from kassa.domain.money import Currency
from kassa.domain.order_view import CardView
from kassa.domain.orders import OrderRuleError, Refusal

T = TypeVar("T")

_REFUSAL_CODES = {Refusal.STATE: Code.STATE, Refusal.AMOUNT: Code.AMOUNT}


def order_ref(req: OperationRequest) -> OrderRef:
    """The order a request names by ``orderid`` and ``client_orderid``, on the endpoints it may use."""
    return OrderRef(req.endpoint.member_ids(), req.values["orderid"], req.values["client_orderid"])


async def change_order(req: OperationRequest, change: Callable[[Connection], T]) -> T:
    """Runs a state change of ``kassa.core`` on an order; its refusals as the merchant gets them."""
    try:
        return await req.write(change)
    except SignatureMismatch:
        raise signatures.mismatch(req.op) from None
    except NoSuchOrder as missing:
        raise ApiError(Code.NOT_FOUND, str(missing)) from None
    except OrderRuleError as refused:  # codes 6 and 7
        raise ApiError(_REFUSAL_CODES[refused.refusal], refused.message) from None
    except FieldMismatch as mismatch:
        raise field_error(mismatch.field, mismatch.problem) from None
    except NotWaiting as refused:
        raise ApiError(Code.STATE, str(refused)) from None


def serving_endpoint(addressed: Endpoint, currency: str) -> Endpoint:
    """The endpoint that takes a request in ``currency``: the addressed one, or the group's member."""
    endpoint = addressed.for_currency(currency)
    if endpoint is None:
        raise ApiError(Code.CURRENCY, f"currency {currency} is not served by endpoint {addressed.id}")
    return endpoint


def serving_within_limits(req: OperationRequest, cur: Currency) -> Endpoint:
    """The endpoint that takes the request's ``amount`` in ``cur``, refused (code 7) beyond its limits."""
    endpoint = serving_endpoint(req.endpoint, cur.code)
    if problem := endpoint.amount_limit_problem(req.values["amount"]):
        raise ApiError(Code.AMOUNT, problem)
    return endpoint


def async_reply(serial: str, client_orderid: str, order_id: int, endpoint_id: int) -> Accepted:
    """The acknowledgement of an operation accepted for asynchronous processing."""
    return Accepted(
        status="processing",
        serial_number=serial,
        merchant_order_id=client_orderid,
        paynet_order_id=str(order_id),
        end_point_id=str(endpoint_id),
    )


def card_fields(card: CardView) -> CardShown:
    """What may be shown of a stored card (BIN and last four at most), named as status reports it."""
    return CardShown(
        bin=card.bin,
        last_four_digits=card.last_four,
        card_exp_month=f"{card.exp_month:02d}",
        card_exp_year=str(card.exp_year),
        cardholder_name=card.holder_name or None,
        card_type=card.brand or None,
    )
