"""Refusals the API answers with: each carries the CONTRACT §12 error code and its HTTP status."""

from __future__ import annotations

from enum import IntEnum


class Code(IntEnum):
    FIELD = 1
    SIGNATURE = 2
    ENDPOINT = 3
    DUPLICATE = 4
    NOT_FOUND = 5
    STATE = 6
    AMOUNT = 7
    CURRENCY = 8
    ACCEPT = 9
    REPLAY = 10
    RATE = 11
    INTERNAL = 500


class ApiError(Exception):
    """A refused request. ``message`` is shown to the merchant, so it never carries secrets or card data."""

    def __init__(
        self,
        code: Code,
        message: str,
        *,
        http_status: int = 400,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.http_status = http_status
        self.headers = headers or {}

    @property
    def response_type(self) -> str:
        return "error" if self.code >= Code.INTERNAL else "validation-error"


def field_error(field: str, problem: str) -> ApiError:
    return ApiError(Code.FIELD, f"{field} {problem}")


def internal_error() -> ApiError:
    return ApiError(Code.INTERNAL, "internal error", http_status=500)
