"""A Python client for Kassa and any gateway of its API (see README.md)."""

from kassa_client.callbacks import Redirect, Verdict, hosted_form_redirect, verify_callback, verify_redirect
from kassa_client.client import AsyncKassa, Kassa
from kassa_client.errors import (
    AcceptError,
    AmountError,
    AuthenticationError,
    CurrencyError,
    DuplicateError,
    FinalStatusTimeout,
    InvalidStateError,
    KassaError,
    NotFoundError,
    RateLimitError,
    ReplayError,
    ServerError,
    SignatureError,
    ValidationError,
)
from kassa_client.models import (
    Answer,
    AsyncResponse,
    CardInfo,
    CardRef,
    EphemeralTicket,
    FormRedirect,
    RecurringPayment,
    Status,
)
from kassa_client.money import from_minor, to_minor

__all__ = [
    "AcceptError", "AmountError", "Answer", "AsyncKassa", "AsyncResponse", "AuthenticationError", "CardInfo",
    "CardRef", "CurrencyError", "DuplicateError", "EphemeralTicket", "FinalStatusTimeout", "FormRedirect",
    "InvalidStateError", "Kassa", "KassaError", "NotFoundError", "RateLimitError", "RecurringPayment", "Redirect",
    "ReplayError", "ServerError", "SignatureError", "Status", "ValidationError", "Verdict", "from_minor",
    "hosted_form_redirect", "to_minor", "verify_callback", "verify_redirect",
]  # fmt: skip
