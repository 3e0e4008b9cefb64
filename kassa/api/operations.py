"""The operation table: one row per operation of SPEC.md drives routing, field checks, signing, the
answer's type and the OpenAPI document. Adding an operation is adding a row and, when it does
something new, a handler.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from kassa.api import fields as f
from kassa.api.context import Handler
from kassa.api.fields import Field
from kassa.api.handlers import card_refs, followups, payments, status, threeds
from kassa.signing import control
from kassa.signing.control import ControlFormula


class OAuth(StrEnum):
    HMAC_SHA1 = "HMAC-SHA1"
    RSA_SHA256 = "RSA-SHA256"


Signing = ControlFormula | OAuth


@dataclass(frozen=True, slots=True)
class Operation:
    path: str  # below the prefix, without the endpoint id: "/api/v2/sale"
    code: str  # SPEC.md's operation code
    request_schema: str
    response_schema: str
    signing: Signing
    fields: tuple[Field, ...]
    handler: Handler | None
    summary: str
    # v4 spells names either way: "credit-card-number" and "credit_card_number" both mean the declared
    # field. Built once with the row, since every field of every request is looked up here.
    spellings: Mapping[str, str] = field(default_factory=dict)

    def canonical(self, name: str) -> str:
        """The declared spelling of a field name: aliases first, then (v4) hyphen/underscore variants."""
        name = ALIASES.get(name, name)
        if self.spellings:
            return self.spellings.get(name.replace("-", "_"), name)
        return name


ALIASES = {
    "client-order-id": "client_orderid",
    "client-orderid": "client_orderid",
    "cRes": "cres",
    "paRes": "pares",
    "PaRes": "pares",
}

# Field groups shared by several schemas.
LOGIN = Field("login", f.text(64), True, "merchant login")
CONTROL = Field("control", f.text(40), True, "SHA-1 control signature")
CLIENT_ORDERID = Field("client_orderid", f.text(128), True, "the merchant's order id")
ORDERID = Field("orderid", f.order_id, True, "the gateway's order id (paynet-order-id)")
CURRENCY = Field("currency", f.currency_code, True, "ISO 4217 alpha-3")
AMOUNT = Field("amount", f.amount(), True, "decimal amount in major units")
OPTIONAL_CURRENCY = Field("currency", f.currency_code, False, "ISO 4217 alpha-3")
OPTIONAL_AMOUNT = Field("amount", f.amount(), False, "decimal amount in major units; omitted: all")
ORDER_DESC = Field("order_desc", f.text(1024), False, "order description")
IPADDRESS = Field("ipaddress", f.ip_address, False, "the customer's IP address")

CUSTOMER = (
    Field("first_name", f.text(64)),
    Field("last_name", f.text(64)),
    Field("ssn", f.digits(9)),
    Field("birthday", f.text(8)),
    Field("address1", f.text(256)),
    Field("city", f.text(64)),
    Field("state", f.text(64)),
    Field("zip_code", f.text(16)),
    Field("country", f.text(2)),
    Field("phone", f.text(32)),
    Field("cell_phone", f.text(32)),
    Field("email", f.email, False, "customer e-mail; part of the control formula"),
    Field("site_url", f.url),
    Field("purpose", f.text(256)),
    Field("preferred_language", f.text(2)),
)
CARD = (
    Field("credit_card_number", f.card_number, True, "card number (PAN)"),
    Field("card_printed_name", f.text(128), False, "cardholder name"),
    Field("expire_month", f.expire_month, True, "MM"),
    Field("expire_year", f.expire_year, True, "YY or YYYY"),
    Field("cvv2", f.cvv, True, "card security code"),
)
URLS = (
    Field("redirect_url", f.url, False, "where the customer returns after a browser step"),
    Field("server_callback_url", f.url, False, "receives the outcome of the started transaction"),
    Field("notify_url", f.url, False, "receives the outcome of every transaction of the order"),
    Field("merchant_data", f.text(1024), False, "echoed in callbacks as merchantdata"),
)

ORDER_START = (CLIENT_ORDERID, ORDER_DESC, CURRENCY, AMOUNT, IPADDRESS, *CUSTOMER)
SALE_FIELDS = (*ORDER_START, *CARD, *URLS, CONTROL)
FORM_FIELDS = (*ORDER_START, *URLS, CONTROL)
VERIFY_START = (
    CLIENT_ORDERID,
    ORDER_DESC,
    Field("currency", f.currency_code, False, "ISO 4217 alpha-3; default: the endpoint's"),
    Field("amount", f.amount(positive=False), False, "absent or zero"),
    IPADDRESS,
    *CUSTOMER,
)
VERIFY_FIELDS = (*VERIFY_START, *CARD, *URLS, CONTROL)
VERIFY_FORM_FIELDS = (*VERIFY_START, *URLS, CONTROL)
CAPTURE_FIELDS = (
    LOGIN,
    CLIENT_ORDERID,
    ORDERID,
    OPTIONAL_CURRENCY,
    OPTIONAL_AMOUNT,
    Field("comment", f.text(256)),
    CONTROL,
)
ORDER_REF_FIELDS = (LOGIN, CLIENT_ORDERID, ORDERID, CONTROL)
STATUS_FIELDS = (
    LOGIN,
    Field("client_orderid", f.text(128), False, "the merchant's order id"),
    Field(
        "orderid",
        f.order_id,
        False,
        "the gateway's order id; empty string in the control formula when absent",
    ),
    Field("by-request-sn", f.serial, False, "serial number of the transaction to report"),
    CONTROL,
)
THREEDS_UPLOAD_FIELDS = (LOGIN, CLIENT_ORDERID, ORDERID, CONTROL)
PAYOUT_DESTINATION = (
    Field("payout_method", f.choice("card", "bank", "ewallet", "phone")),
    Field("credit_card_number", f.card_number),
    Field("destination-card-ref-id", f.text(20)),
    Field("account_number", f.text(34)),
    Field("bank_name", f.text(128)),
    Field("routing_number", f.digits(9)),
    Field("bank_bic", f.text(11)),
    Field("iban", f.text(34)),
    Field("ewallet_type", f.text(32)),
    Field("ewallet_wallet", f.text(128)),
    Field("receiver_phone", f.text(16)),
    Field("receiver_bank_id", f.text(32)),
    Field("receiver_name", f.text(128)),
)
PAYOUT_FIELDS = (CLIENT_ORDERID, ORDER_DESC, CURRENCY, AMOUNT, IPADDRESS, *PAYOUT_DESTINATION, *URLS)
CARDREF_V4_FIELDS = (CLIENT_ORDERID, ORDERID)
TRANSFER_FIELDS = (
    CLIENT_ORDERID,
    ORDER_DESC,
    CURRENCY,
    AMOUNT,
    IPADDRESS,
    Field("credit_card_number", f.card_number),
    Field("card_printed_name", f.text(128)),
    Field("expire_month", f.expire_month),
    Field("expire_year", f.expire_year),
    Field("cvv2", f.cvv),
    Field("card_recurring_payment_id", f.digits(20)),
    Field("deposit2card", f.choice("true", "false")),
    Field("destination-card-no", f.card_number),
    Field("destination_card_recurring_payment_id", f.digits(20)),
    *URLS,
)


def _op(
    path: str,
    code: str,
    request_schema: str,
    response_schema: str,
    signing: Signing,
    fields: tuple[Field, ...],
    handler: Handler | None,
    summary: str,
) -> Operation:
    return Operation(
        path,
        code,
        request_schema,
        response_schema,
        signing,
        fields,
        handler,
        summary,
        {spec.name.replace("-", "_"): spec.name for spec in fields} if path.startswith("/api/v4/") else {},
    )


UPLOAD_CRES_FIELDS = (*THREEDS_UPLOAD_FIELDS, Field("cres", f.text(8192), True, "the CRes, base64url"))
BROWSER_FIELDS = tuple(
    Field(name, f.text(2048))
    for name in (
        "browserAcceptHeader", "browserIP", "browserJavaEnabled", "browserJavascriptEnabled", "browserLanguage",
        "browserColorDepth", "browserScreenHeight", "browserScreenWidth", "browserTZ", "browserUserAgent",
    )
)  # fmt: skip
UPLOAD_METHOD_FIELDS = (
    *THREEDS_UPLOAD_FIELDS,
    Field("threeDSServerTransID", f.serial, True),
    Field("threeDSCompInd", f.choice("Y", "N", "U"), True),
    *BROWSER_FIELDS,
)
UPLOAD_PARES_FIELDS = (*THREEDS_UPLOAD_FIELDS, Field("pares", f.text(16384), True), Field("md", f.text(1024)))
CARD_INFO_FIELDS = (LOGIN, Field("cardrefid", f.text(20), True), CONTROL)
REBILL_FIELDS = (
    CLIENT_ORDERID, LOGIN, Field("cardrefid", f.text(20), True), ORDER_DESC, CURRENCY, AMOUNT, IPADDRESS,
    Field("cvv2", f.digits(4)), Field("comment", f.text(256)), *URLS, CONTROL,
)  # fmt: skip
RECURRING_FIELDS = (
    CLIENT_ORDERID, Field("cardrefid", f.text(20)), ORDER_DESC, CURRENCY, AMOUNT, Field("email", f.email),
    Field("period", f.choice("day", "week", "month", "year")), Field("interval", f.digits(4)),
    Field("start-date", f.text(10)), Field("finish-date", f.text(10)), Field("max-count", f.digits(6)), *URLS,
)  # fmt: skip
PAYOUT_PAY_FIELDS = (CLIENT_ORDERID, ORDERID, LOGIN)
PAN_ELIGIBILITY_FIELDS = (
    CLIENT_ORDERID, Field("sending-card-ref-id", f.text(20)), Field("credit_card_number", f.card_number), *URLS,
)  # fmt: skip

SALE_FORM, ASYNC, CARD_REF = "AsyncCheckoutFormRedirect", "AsyncResponse", "CardRefAsyncResponse"

# fmt: off
OPERATIONS: tuple[Operation, ...] = (
    # path, operation code, request schema, response schema, signing, fields, handler, summary
    _op("/api/3ds/v1/upload-cres-result", "TDS_UPLOAD_CRES_RESULT", "TdsCResResultRequest", ASYNC,
        control.ORDER_REF, UPLOAD_CRES_FIELDS, threeds.upload_cres_result, "Upload the CRes of a 3DS 2.x challenge"),
    _op("/api/3ds/v1/upload-method-url-result", "TDS_UPLOAD_METHOD_URL_RESULT", "TdsMethodUrlResultRequest", ASYNC,
        control.ORDER_REF, UPLOAD_METHOD_FIELDS, threeds.upload_method_url_result, "Upload the 3DS Method result"),
    _op("/api/3ds/v1/upload-pares-result", "TDS_UPLOAD_PARES_RESULT", "TdsPaResResultRequest", ASYNC,
        control.ORDER_REF, UPLOAD_PARES_FIELDS, threeds.upload_pares_result, "Upload the PaRes of a 3DS 1.0.2 flow"),
    _op("/api/v2/account-verification-form", "ACCOUNT_VERIFICATION_FORM", "AccountVerificationFormRequest", SALE_FORM,
        control.VERIFY_LIKE, VERIFY_FORM_FIELDS, payments.account_verification_form, "Verification on a hosted page"),
    _op("/api/v2/account-verification", "ACCOUNT_VERIFICATION", "AccountVerificationRequest", ASYNC,
        control.VERIFY_LIKE, VERIFY_FIELDS, payments.account_verification, "Zero-amount authorization"),
    _op("/api/v2/capture", "CAPTURE", "CaptureRequest", ASYNC,
        control.CAPTURE_LIKE, CAPTURE_FIELDS, followups.capture, "Capture a preauth, fully or partially"),
    _op("/api/v2/create-card-ref", "CARDREF", "CreateCardRefRequest", CARD_REF,
        control.ORDER_REF, ORDER_REF_FIELDS, card_refs.create_card_ref, "Card reference from an approved order"),
    _op("/api/v2/get-card-info", "CARDINFO", "GetCardInfoRequest", "CardInfoAsyncResponse",
        control.CARD_INFO, CARD_INFO_FIELDS, card_refs.get_card_info, "Read a stored card by reference"),
    _op("/api/v2/make-rebill", "REBILL", "RebillRequest", ASYNC,
        control.REBILL, REBILL_FIELDS, card_refs.make_rebill, "Charge a stored card without the cardholder"),
    _op("/api/v2/payment-form", "PAYMENTFORM", "PaymentFormRequest", SALE_FORM,
        control.SALE_LIKE, FORM_FIELDS, payments.sale_form, "Universal hosted payment form"),
    _op("/api/v2/payout-form", "PAYOUTFORM", "PayoutFormRequest", SALE_FORM,
        control.SALE_LIKE, FORM_FIELDS, None, "Payout on a hosted page"),
    _op("/api/v2/payout", "PAYOUT", "PayoutRequest", ASYNC,
        OAuth.HMAC_SHA1, PAYOUT_FIELDS, None, "Payout to a card, bank account, e-wallet or phone"),
    _op("/api/v2/preauth-form", "PREAUTHFORM", "AuthFormRequest", SALE_FORM,
        control.SALE_LIKE, FORM_FIELDS, payments.preauth_form, "Preauth on a hosted page"),
    _op("/api/v2/preauth", "PREAUTH", "AuthRequest", ASYNC,
        control.SALE_LIKE, SALE_FIELDS, payments.preauth, "Reserve funds for a later capture or void"),
    _op("/api/v2/return", "RETURN", "ReturnRequest", ASYNC,
        control.CAPTURE_LIKE, CAPTURE_FIELDS, followups.refund, "Cancel a preauth, or reverse a sale or capture"),
    _op("/api/v2/sale-form", "SALEFORM", "SaleFormRequest", SALE_FORM,
        control.SALE_LIKE, FORM_FIELDS, payments.sale_form, "Sale on a hosted page"),
    _op("/api/v2/sale", "SALE", "SaleRequest", ASYNC,
        control.SALE_LIKE, SALE_FIELDS, payments.sale, "Authorization and capture in one step"),
    _op("/api/v2/status", "STATUS", "StatusRequest", "StatusResponse",
        control.ORDER_REF, STATUS_FIELDS, status.status, "The state of an order or one of its transactions"),
    _op("/api/v2/void", "VOID", "VoidRequest", ASYNC,
        control.ORDER_REF, ORDER_REF_FIELDS, followups.void, "Void an approved sale or capture not yet settled"),
    _op("/api/v4/create-card-ref", "CARDREF_V4", "CreateCardRefV4Request", "CardRefV4AsyncResponse",
        OAuth.RSA_SHA256, CARDREF_V4_FIELDS, None, "Card reference (v4)"),
    _op("/api/v4/create-recurring-payment", "CREATE_RP_V4", "RecurringPaymentForCreation",
        "CreateRecurringPaymentResponse", OAuth.RSA_SHA256, RECURRING_FIELDS, None, "Recurring payment subscription"),
    _op("/api/v4/payout-check", "PAYOUT_V4_CHECK", "PayoutCheckRequest", ASYNC,
        OAuth.RSA_SHA256, PAYOUT_FIELDS, None, "Validate a payout destination and register the payout"),
    _op("/api/v4/payout-pay", "PAYOUT_V4_PAY", "PayoutPayRequest", ASYNC,
        OAuth.RSA_SHA256, PAYOUT_PAY_FIELDS, None, "Execute a payout registered by payout-check"),
    _op("/api/v4/transfer", "TRANSFER_V4", "TransferRequest", ASYNC,
        OAuth.RSA_SHA256, TRANSFER_FIELDS, None, "Transfer from a card or the deposit to a card"),
    _op("/api/v2/pan-eligibility/send", "PAN_ELIGIBILITY_SEND", "PanEligibilityRequest", ASYNC,
        OAuth.HMAC_SHA1, PAN_ELIGIBILITY_FIELDS, None, "Check that a card can send funds"),
)
# fmt: on

RESPONSE_TYPES = {
    "AsyncResponse": "async-response",
    "AsyncCheckoutFormRedirect": "async-form-response",
    "CardRefAsyncResponse": "create-card-ref-response",
    "CardRefV4AsyncResponse": "create-card-ref-response",
    "CardInfoAsyncResponse": "get-card-info-response",
    "StatusResponse": "status-response",
    "CreateRecurringPaymentResponse": "create-recurring-payment-response",
}
