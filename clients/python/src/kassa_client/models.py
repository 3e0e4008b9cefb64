"""The answers of CONTRACT §5 as frozen dataclasses: kebab-case wire names become snake_case attributes,
amounts ``Decimal``; every field as received, known or not, stays in ``raw``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar

FINAL_STATUSES = frozenset({"approved", "declined", "filtered", "error"})
_AMOUNTS = frozenset({"amount", "initial_amount", "captured_amount", "refunded_amount"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    type: str = ""
    serial_number: str = ""
    raw: Mapping[str, str] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class AsyncResponse(Answer):
    """``async-response``: accepted; the outcome comes through status and callback."""

    status: str = ""
    merchant_order_id: str = ""
    paynet_order_id: str = ""
    end_point_id: str = ""
    payout_id: str = ""  # v4 payout and payout-by-ref
    transaction_id: str = ""  # v4 transfer-by-ref

    @property
    def orderid(self) -> str:
        return self.paynet_order_id


@dataclass(frozen=True, slots=True, kw_only=True)
class FormRedirect(AsyncResponse):
    """``async-form-response``: send the customer's browser to ``redirect_url`` (the hosted page)."""

    redirect_url: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Status(Answer):
    """``status-response``. While 3-D Secure waits for the customer, ``redirect_to`` and ``html`` take the
    browser there, and the step's raw data (``acs_url``, ``creq``, ``threeds_*``...) serve merchant-hosted 3DS."""

    status: str = ""
    merchant_order_id: str = ""
    paynet_order_id: str = ""
    transaction_type: str = ""
    order_stage: str = ""
    amount: Decimal | None = None
    currency: str = ""
    end_point_id: str = ""
    by_request_sn: str = ""
    card_type: str = ""
    bin: str = ""
    last_four_digits: str = ""
    card_exp_month: str = ""
    card_exp_year: str = ""
    cardholder_name: str = ""
    email: str = ""
    phone: str = ""
    approval_code: str = ""
    processor_rrn: str = ""
    processor_tx_id: str = ""
    descriptor: str = ""
    card_ref_id: str = ""
    recurring_payment_id: str = ""
    initial_amount: Decimal | None = None
    captured_amount: Decimal | None = None
    refunded_amount: Decimal | None = None
    paynet_processing_date: str = ""
    error_message: str = ""
    error_code: str = ""
    destination_type: str = ""  # a payout that goes to no card: its kind, its number masked, the payee's name
    destination_account: str = ""
    recipient_name: str = ""
    html: str = ""
    redirect_to: str = ""
    threeds_version: str = ""
    threeds_server_trans_id: str = ""
    threeds_method_url: str = ""
    threeds_method_data: str = ""
    acs_url: str = ""
    creq: str = ""
    pareq: str = ""
    md: str = ""

    @property
    def is_final(self) -> bool:
        """approved, declined, filtered or error: nothing more will change this transaction."""
        return self.status in FINAL_STATUSES

    @property
    def orderid(self) -> str:
        return self.paynet_order_id


@dataclass(frozen=True, slots=True, kw_only=True)
class CardRef(Answer):
    """``create-card-ref-response``; v4 adds ``unq_card_ref_id`` and ``recurring_payment_id``."""

    status: str = ""
    merchant_order_id: str = ""
    paynet_order_id: str = ""
    card_ref_id: str = ""
    unq_card_ref_id: str = ""
    recurring_payment_id: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CardInfo(Answer):
    """``get-card-info-response``: never more of the number than BIN and last four."""

    card_printed_name: str = ""
    bin: str = ""
    last_four_digits: str = ""
    expire_month: str = ""
    expire_year: str = ""
    card_type: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecurringPayment(Answer):
    """``create-recurring-payment-response``."""

    status: str = ""
    recurring_payment_id: str = ""
    merchant_order_id: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class EphemeralTicket(Answer):
    """A Hosted Fields ticket: one tokenization within 15 minutes, safe to put in a page."""

    ephemeral_ticket: str = ""


A = TypeVar("A", bound=Answer)


def parse(kind: type[A], values: Mapping[str, Any]) -> A:
    """``values`` (a flat wire mapping) as ``kind``: names matched after ``-`` → ``_`` (and camelCase
    ``ephemeralTicket``), amounts as Decimal, everything kept in ``raw``."""
    raw = {str(name): "" if value is None else str(value) for name, value in values.items()}
    names = {f.name for f in dataclasses.fields(kind)} - {"raw"}
    known: dict[str, Any] = {}
    for name, value in raw.items():
        attribute = _snake(name)
        if attribute in names:
            known[attribute] = _decimal(value) if attribute in _AMOUNTS else value
    return kind(raw=raw, **known)


def _snake(name: str) -> str:
    name = name.replace("-", "_")
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


def _decimal(value: str) -> Decimal | None:
    try:
        return Decimal(value) if value else None
    except InvalidOperation:
        return None
