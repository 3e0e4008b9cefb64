"""The keyword arguments of each operation, as TypedDicts (``Unpack``-ed into the clients' methods).
Names are the wire's with ``-`` written ``_`` (``destination_card_ref_id``); the client sends the
contract's spelling. ``amount`` is major units (``Decimal``, ``str`` or whole ``int``) or ``amount_minor``
integer minor units, with ``currency``. ``extra`` passes fields this client does not know, as they are."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, Required, TypedDict

from kassa_client.money import Amount

Text = str | int


class Common(TypedDict, total=False):
    idempotency_key: str  # the Idempotency-Key header: a repeat within 24 h gets the first answer
    extra: Mapping[str, str]


class _Urls(TypedDict, total=False):
    redirect_url: str
    server_callback_url: str
    notify_url: str
    merchant_data: str


class _Money(TypedDict, total=False):
    amount: Amount
    amount_minor: int
    currency: str


class _Customer(TypedDict, total=False):
    order_desc: str
    ipaddress: str
    first_name: str
    last_name: str
    ssn: str
    birthday: str
    address1: str
    city: str
    state: str
    zip_code: str
    country: str
    phone: str
    cell_phone: str
    email: str
    site_url: str
    purpose: str
    preferred_language: str


class _Card(TypedDict, total=False):
    credit_card_number: str
    card_printed_name: str
    expire_month: Text
    expire_year: Text
    cvv2: str


class FormFields(Common, _Urls, _Money, _Customer, total=False):
    client_orderid: Required[str]


class SaleFields(FormFields, _Card, total=False):
    pass


class TransferFormFields(FormFields, total=False):
    destination_card_no: str
    destination_card_ref_id: str


class OrderFields(Common, total=False):
    orderid: Required[str]
    client_orderid: str


class FollowUpFields(OrderFields, total=False):
    """capture and return: without amount, the whole remainder."""

    amount: Amount
    amount_minor: int
    currency: str
    comment: str


class StatusFields(Common, total=False):
    orderid: str
    client_orderid: str
    by_request_sn: str


class CardInfoFields(Common, total=False):
    cardrefid: Required[str]


class RebillFields(Common, _Urls, _Money, total=False):
    client_orderid: Required[str]
    cardrefid: Required[str]
    order_desc: str
    ipaddress: str
    cvv2: str
    comment: str
    enumerate_amounts: Sequence[Amount]
    recurrent_scenario: Literal["REGULAR", "IRREGULAR"]


class MethodResultFields(OrderFields, total=False):
    threeDSServerTransID: Required[str]
    threeDSCompInd: Required[Literal["Y", "N", "U"]]
    browserAcceptHeader: str
    browserIP: str
    browserJavaEnabled: str
    browserJavascriptEnabled: str
    browserLanguage: str
    browserColorDepth: str
    browserScreenHeight: str
    browserScreenWidth: str
    browserTZ: str
    browserUserAgent: str


class CresFields(OrderFields, total=False):
    cres: Required[str]


class ParesFields(OrderFields, total=False):
    pares: Required[str]
    md: str


class _Destination(TypedDict, total=False):
    payout_method: Literal["card", "bank", "ewallet", "phone"]
    credit_card_number: str
    expire_month: Text
    expire_year: Text
    card_printed_name: str
    destination_card_ref_id: str
    account_number: str
    bank_name: str
    routing_number: str
    bank_bic: str
    iban: str
    account_name: str
    bank_branch: str
    bank_province: str
    bank_city: str
    ewallet_type: str
    ewallet_wallet: str
    receiver_phone: str
    receiver_bank_id: str
    receiver_name: str


class PayoutFields(Common, _Urls, _Money, _Customer, _Destination, total=False):
    client_orderid: Required[str]


class PayoutByRefFields(Common, _Urls, _Money, _Customer, total=False):
    client_orderid: Required[str]
    destination_card_ref_id: Required[str]


class BankWireFields(Common, _Urls, _Money, total=False):
    client_orderid: Required[str]
    payer_fullname: Required[str]
    recipient_name: Required[str]
    recipient_account_number: Required[str]
    recipient_bank_bic: Required[str]
    recipient_bank_name: str
    vat_amount: Amount
    purpose: str
    order_desc: str
    ipaddress: str


class TransferByRefFields(Common, _Urls, _Money, total=False):
    client_orderid: Required[str]
    destination_card_ref_id: Required[str]
    source_card_ref_id: str
    cvv2: str
    order_desc: str
    ipaddress: str


class TransferByRefV4Fields(Common, _Urls, _Money, total=False):
    client_orderid: Required[str]
    destination_card_no: str
    destination_card_ref_id: str
    order_desc: str
    ipaddress: str


class TransferFields(Common, _Urls, _Money, _Card, total=False):
    client_orderid: Required[str]
    order_desc: str
    ipaddress: str
    card_recurring_payment_id: str
    deposit2card: bool
    destination_card_no: str
    destination_card_recurring_payment_id: str


class PanEligibilityFields(Common, _Urls, total=False):
    client_orderid: Required[str]
    sending_card_ref_id: str
    receiving_card_ref_id: str
    credit_card_number: str
    currency: str


class SaleV4Fields(SaleFields, total=False):
    hosted_fields_token: str
    customer_browser_info: bool
    customer_browser_javascript_enabled: bool
    customer_browser_java_enabled: bool
    customer_browser_accept_language: str
    customer_browser_color_depth: Text
    customer_browser_screen_width: Text
    customer_browser_screen_height: Text
    customer_browser_time_zone: Text
    customer_browser_accept_header: str
    customer_browser_user_agent: str


class RecurringFields(Common, _Urls, _Money, total=False):
    client_orderid: Required[str]
    cardrefid: str
    credit_card_number: str
    card_printed_name: str
    expire_month: Text
    expire_year: Text
    order_desc: str
    email: str
    period: Literal["day", "week", "month", "year"]
    interval: Text
    start_date: str
    finish_date: str
    max_count: Text


class ProcessRecurringFields(Common, _Urls, _Money, total=False):
    recurring_payment_id: Required[str]
    client_orderid: str
    order_desc: str
    ipaddress: str


HYPHENATED = frozenset(
    {
        "by-request-sn", "source-card-ref-id", "destination-card-ref-id", "payer-fullname", "recipient-name",
        "recipient-account-number", "recipient-bank-bic", "recipient-bank-name", "vat-amount",
        "destination-card-no", "recurring-payment-id", "sending-card-ref-id", "receiving-card-ref-id",
        "start-date", "finish-date", "max-count",
    }
)  # fmt: skip
"""Wire names the contract spells with hyphens (v2 reads them only so; v4 either way)."""
