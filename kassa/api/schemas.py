"""The fields of each request schema of the operation table (``operations``), in declared order, built
from groups several schemas share."""

from __future__ import annotations

from kassa.api import fields as f
from kassa.api.fields import Field
from kassa.domain import rebills
from kassa.domain.recurring import CHARGE_SUFFIX_MAX

LOGIN = Field("login", f.text(64), True, "merchant login")
CONTROL = Field("control", f.text(40), True, "SHA-1 control signature")
CLIENT_ORDERID_MAX = 128
CLIENT_ORDERID = Field("client_orderid", f.text(CLIENT_ORDERID_MAX), True, "the merchant's order id")
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
# The same question signed with OAuth RSA-SHA256 (CONTRACT §17): no control, login optional as on every v4 row.
STATUS_V4_FIELDS = (Field("login", f.text(64), False, "if sent, the endpoint's merchant"), *STATUS_FIELDS[1:-1])
THREEDS_UPLOAD_FIELDS = (LOGIN, CLIENT_ORDERID, ORDERID, CONTROL)
# CONTRACT §13: one kind of destination, named by payout_method or by the fields sent
# (``domain.destinations`` checks the combination and each number).
PAYOUT_DESTINATION = (
    Field("payout_method", f.choice("card", "bank", "ewallet", "phone"), False, "card, bank, ewallet or phone"),
    Field("credit_card_number", f.card_number, False, "card: the number that receives the money"),
    Field("expire_month", f.expire_month, False, "card: MM, with credit_card_number"),
    Field("expire_year", f.expire_year, False, "card: YY or YYYY, with credit_card_number"),
    Field("card_printed_name", f.text(128), False, "card: the cardholder's name"),
    Field("destination-card-ref-id", f.text(20), False, "card: a card reference instead of the card fields"),
    Field("account_number", f.text(34), False, "bank: the account number"),
    Field("bank_name", f.text(128), False, "bank: the bank's name"),
    Field("routing_number", f.text(9), False, "bank: ABA routing number"),
    Field("bank_bic", f.text(11), False, "bank: BIC (SWIFT code)"),
    Field("iban", f.text(42), False, "bank: IBAN"),
    Field("account_name", f.text(128), False, "bank: the account holder; or first_name and last_name"),
    Field("bank_branch", f.text(128)),
    Field("bank_province", f.text(128)),
    Field("bank_city", f.text(128)),
    Field("ewallet_type", f.text(32), False, "e-wallet: the wallet's provider"),
    Field("ewallet_wallet", f.text(128), False, "e-wallet: the wallet's id"),
    Field("receiver_phone", f.text(16), False, "phone: E.164, such as +447911123456"),
    Field("receiver_bank_id", f.text(32), False, "phone: the receiver's bank in the instant payment scheme"),
    Field("receiver_name", f.text(128), False, "phone: the receiver's name, checked by the scheme"),
)
PAYOUT_FIELDS = (CLIENT_ORDERID, ORDER_DESC, CURRENCY, AMOUNT, IPADDRESS, *CUSTOMER, *PAYOUT_DESTINATION, *URLS)
CARDREF_V4_FIELDS = (CLIENT_ORDERID, ORDERID, Field("login", f.text(64), False, "if sent, the endpoint's merchant"))
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


# CONTRACT §18: the v4 sale, paid with a Hosted Fields token or with the card fields (not both: the
# handler checks the combination), and the payer's browser as the merchant's page saw it, for 3-D Secure 2.x.
HOSTED_FIELDS_TOKEN = Field("hosted_fields_token", f.text(64), False, "a Hosted Fields token, instead of the card")
SALE_V4_FIELDS = (
    *ORDER_START,
    HOSTED_FIELDS_TOKEN,
    Field("credit_card_number", f.card_number, False, "card number (PAN), when no hosted_fields_token is sent"),
    Field("card_printed_name", f.text(128), False, "cardholder name (a token carries none)"),
    Field("expire_month", f.expire_month, False, "MM, with credit_card_number"),
    Field("expire_year", f.expire_year, False, "YY or YYYY, with credit_card_number"),
    Field("cvv2", f.cvv, False, "card security code, with credit_card_number"),
    *URLS,
    Field("customer_browser_info", f.choice("true", "false"), False, "true: the browser fields are sent"),
    Field("customer_browser_javascript_enabled", f.choice("true", "false")),
    Field("customer_browser_java_enabled", f.choice("true", "false")),
    Field("customer_browser_accept_language", f.text(64), False, "the browser's language, such as en-GB"),
    Field("customer_browser_color_depth", f.digits(2), False, "bits per pixel"),
    Field("customer_browser_screen_width", f.digits(6), False, "pixels"),
    Field("customer_browser_screen_height", f.digits(6), False, "pixels"),
    Field("customer_browser_time_zone", f.integer(-840, 840), False, "minutes from UTC, as getTimezoneOffset()"),
    Field("customer_browser_accept_header", f.text(2048), False, "the browser's Accept header"),
    Field("customer_browser_user_agent", f.text(2048), False, "the browser's User-Agent header"),
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
    CLIENT_ORDERID, LOGIN, Field("cardrefid", f.text(20), True), ORDER_DESC, CURRENCY,
    Field("amount", f.amount(), True, "decimal amount in major units; the signed one, tried first"),
    Field(
        "enumerate_amounts", f.amount_list(rebills.MAX_AMOUNTS), False,
        f"up to {rebills.MAX_AMOUNTS} lower amounts, comma-separated, tried highest first after a decline",
    ),
    Field(
        "recurrent_scenario", f.choice(*(s.value for s in rebills.Scenario)), False,
        "REGULAR (a recurring charge) or IRREGULAR (an unscheduled one): the acquirer's MIT indicator",
    ),
    IPADDRESS, Field("cvv2", f.digits(4)), Field("comment", f.text(256)), *URLS, CONTROL,
)  # fmt: skip
# A charge's client_orderid is the payment's with "-{n}" (and "-r{k}" for a retry) after it, within an
# order's length.
_PAYMENT_ID = f.text(CLIENT_ORDERID_MAX - CHARGE_SUFFIX_MAX)
RECURRING_FIELDS = (
    Field("client_orderid", _PAYMENT_ID, True, "the merchant's id of the payment; its charges add -{n}"),
    Field("cardrefid", f.text(20), False, "the card reference to charge; or the card fields"),
    Field("credit_card_number", f.card_number, False, "card number (PAN), when no cardrefid is sent"),
    Field("card_printed_name", f.text(128), False, "cardholder name"),
    Field("expire_month", f.expire_month, False, "MM, with credit_card_number"),
    Field("expire_year", f.expire_year, False, "YY or YYYY, with credit_card_number"),
    ORDER_DESC, CURRENCY, Field("amount", f.amount(), True, "decimal amount in major units, of each charge"),
    Field("email", f.email),
    Field("period", f.choice("day", "week", "month", "year"), False, "none: no automatic charges"),
    Field("interval", f.digits(4), False, "every this many periods; default 1"),
    Field("start-date", f.text(10), False, "YYYY-MM-DD, today (UTC) or later; default today"),
    Field("finish-date", f.text(10), False, "YYYY-MM-DD: no charge after this date"),
    Field("max-count", f.digits(6), False, "no more charges than this"),
    *URLS,
)  # fmt: skip
PAYOUT_PAY_FIELDS = (CLIENT_ORDERID, ORDERID, LOGIN)
TRANSFER_BY_REF_FIELDS = (
    CLIENT_ORDERID, ORDER_DESC, CURRENCY, AMOUNT, IPADDRESS,
    Field("destination-card-no", f.card_number, False, "the card that receives the money"),
    Field("destination-card-ref-id", f.text(20), False, "or a card reference of yours"),
    *URLS,
)  # fmt: skip
PAYOUT_BY_REF_FIELDS = (
    CLIENT_ORDERID, ORDER_DESC, CURRENCY, AMOUNT, IPADDRESS, *CUSTOMER,
    Field("destination-card-ref-id", f.text(20), True, "the card reference whose card receives the money"),
    *URLS,
)  # fmt: skip
PROCESS_RECURRING_FIELDS = (
    Field("client_orderid", f.text(CLIENT_ORDERID_MAX), False, "the merchant's order id; default: made up"),
    Field("recurring-payment-id", f.digits(18), True, "the recurring payment whose card is charged"),
    ORDER_DESC, CURRENCY, AMOUNT, IPADDRESS, *URLS,
)  # fmt: skip
V2_TRANSFER_BY_REF_FIELDS = (
    LOGIN, CLIENT_ORDERID, ORDER_DESC, CURRENCY, AMOUNT, IPADDRESS,
    Field("source-card-ref-id", f.text(20), False, "the card reference that pays; none: the merchant's balance"),
    Field("destination-card-ref-id", f.text(20), True, "the card reference that receives the money"),
    Field("cvv2", f.digits(4), False, "the source card's security code, typed by its holder now"),
    *URLS, CONTROL,
)  # fmt: skip
# The hosted page collects the source card; the card that receives the money is named here or typed there.
_TRANSFER_FORM_FIELDS = (
    *ORDER_START,
    Field("destination-card-no", f.card_number, False, "the card that receives the money"),
    Field("destination-card-ref-id", f.text(20), False, "or a card reference of yours; none: the page asks"),
    *URLS,
)
TRANSFER_FORM_FIELDS = (*_TRANSFER_FORM_FIELDS, CONTROL)
TRANSFER_FORM_V4_FIELDS = _TRANSFER_FORM_FIELDS
_SENDING_REF = Field("sending-card-ref-id", f.text(20), False, "the card reference whose card would send funds")
_RECEIVING_REF = Field("receiving-card-ref-id", f.text(20), False, "the card reference whose card would receive")


def _pan_eligibility(*references: Field) -> tuple[Field, ...]:
    return (
        CLIENT_ORDERID,
        *references,
        Field("credit_card_number", f.card_number, False, "or the card's number"),
        Field("currency", f.currency_code, False, "ISO 4217 alpha-3; default: the endpoint's"),
        *URLS,
    )


PAN_ELIGIBILITY_FIELDS = _pan_eligibility(_SENDING_REF)
PAN_ELIGIBILITY_RECEIVE_FIELDS = _pan_eligibility(_RECEIVING_REF)
PAN_ELIGIBILITY_BOTH_FIELDS = _pan_eligibility(_SENDING_REF, _RECEIVING_REF)
BANK_WIRE_FIELDS = (
    CLIENT_ORDERID, ORDER_DESC, CURRENCY, AMOUNT,
    Field("vat-amount", f.amount_part, False, "the VAT included in amount, in major units"),
    IPADDRESS,
    Field("payer-fullname", f.text(128), True, "who sends the wire"),
    Field("recipient-name", f.text(128), True, "the account holder"),
    Field("recipient-account-number", f.bank_account_number, True, "account number, or IBAN"),
    Field("recipient-bank-bic", f.bic, True, "the recipient bank's BIC (SWIFT code)"),
    Field("recipient-bank-name", f.text(128), False, "the recipient bank's name"),
    Field("purpose", f.text(256), False, "the payment's reference, as the recipient sees it"),
    *URLS, CONTROL,
)  # fmt: skip
