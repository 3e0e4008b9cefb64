"""Rules shared by handlers of several operation families."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection

from kassa.api.context import Reply
from kassa.api.errors import ApiError, Code
from kassa.domain.merchants import Endpoint
from kassa.domain.orders import OrderRuleError, Refusal
from kassa.storage import orders as order_store
from kassa.storage.prepared import Record

_REFUSAL_CODES = {Refusal.STATE: Code.STATE, Refusal.AMOUNT: Code.AMOUNT}


def refusal(refused: OrderRuleError) -> ApiError:
    """An order rule's refusal as the merchant gets it (codes 6 and 7)."""
    return ApiError(_REFUSAL_CODES[refused.refusal], refused.message)


def serving_endpoint(addressed: Endpoint, currency: str) -> Endpoint:
    """The endpoint that takes a request in ``currency``: the addressed one, or the group's member."""
    endpoint = addressed.for_currency(currency)
    if endpoint is None:
        raise ApiError(Code.CURRENCY, f"currency {currency} is not served by endpoint {addressed.id}")
    return endpoint


def async_reply(serial: str, client_orderid: str, order_id: int, endpoint_id: int) -> Reply:
    """The acknowledgement of an operation accepted for asynchronous processing."""
    return {
        "type": "async-response",
        "status": "processing",
        "serial-number": serial,
        "merchant-order-id": client_orderid,
        "paynet-order-id": str(order_id),
        "end-point-id": str(endpoint_id),
    }


def locked_order(conn: Connection, endpoint_ids: Sequence[int], order_id: int, client_orderid: str) -> Record:
    """The order a follow-up names by ``orderid`` and ``client_orderid``, locked until the transaction ends."""
    order = order_store.order_for_merchant(conn, endpoint_ids, order_id)
    if order is None or order["client_orderid"] != client_orderid:
        raise ApiError(Code.NOT_FOUND, "no such order for this endpoint and client_orderid")
    return order_store.lock_order(conn, order_id)


def card_fields(card: Record) -> Reply:
    """What may be shown of a stored card (BIN and last four at most), named as status reports it."""
    fields = {
        "bin": card["bin"],
        "last-four-digits": card["last_four"],
        "card-exp-month": f"{card['exp_month']:02d}",
        "card-exp-year": str(card["exp_year"]),
        "cardholder-name": card["holder_name"],
        "card-type": card["brand"] or "",
    }
    return {name: value for name, value in fields.items() if value}
