"""Rules shared by handlers of several operation families."""

from __future__ import annotations

from kassa.api.context import Reply
from kassa.api.errors import ApiError, Code
from kassa.domain.merchants import Endpoint


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
