"""Refusals as exceptions: one class per ``error-code`` of CONTRACT §12, each carrying the code, the field
(code 1 names it), the message and the serial number of the refused request."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kassa_client.models import Status


class KassaError(Exception):
    """A ``validation-error`` or ``error`` answer. ``raw`` holds every field of the answer."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "",
        field: str | None = None,
        serial_number: str = "",
        http_status: int = 0,
        merchant_order_id: str = "",
        retry_after: float | None = None,
        raw: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(f"[{code}] {message}" if code else message)
        self.message = message
        self.code = code
        self.field = field
        self.serial_number = serial_number
        self.http_status = http_status
        self.merchant_order_id = merchant_order_id
        self.retry_after = retry_after
        self.raw = dict(raw or {})


class ValidationError(KassaError):
    """Code 1: a field is missing or malformed; ``field`` names it."""


class SignatureError(KassaError):
    """Code 2: the control or OAuth signature does not match."""


class AuthenticationError(KassaError):
    """Code 3: unknown endpoint or group, the login does not own it, or it is disabled."""


class DuplicateError(KassaError):
    """Code 4: the client_orderid or Idempotency-Key was used with different fields."""


class NotFoundError(KassaError):
    """Code 5: no such order, card reference or recurring payment for this merchant."""


class InvalidStateError(KassaError):
    """Code 6: the operation is not allowed in the order's current state."""


class AmountError(KassaError):
    """Code 7: the amount exceeds what the order or the endpoint allows."""


class CurrencyError(KassaError):
    """Code 8: the endpoint does not serve the currency."""


class AcceptError(KassaError):
    """Code 9: the Accept header is missing or wrong (a classic client against a merchant without classic
    compatibility)."""


class ReplayError(KassaError):
    """Code 10: OAuth timestamp out of window or nonce replayed."""


class RateLimitError(KassaError):
    """Code 11 (HTTP 429); ``retry_after`` in seconds when the gateway said."""


class ServerError(KassaError):
    """Code 500 or any answer the client cannot read as the contract's (an HTTP 5xx, a proxy's page)."""


class FinalStatusTimeout(KassaError):
    """``wait_for_final`` gave up: the order was still not final. ``last`` is its latest status."""

    last: Status | None = None


BY_CODE: dict[str, type[KassaError]] = {
    "1": ValidationError,
    "2": SignatureError,
    "3": AuthenticationError,
    "4": DuplicateError,
    "5": NotFoundError,
    "6": InvalidStateError,
    "7": AmountError,
    "8": CurrencyError,
    "9": AcceptError,
    "10": ReplayError,
    "11": RateLimitError,
    "500": ServerError,
}
