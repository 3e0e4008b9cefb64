"""The operations of CONTRACT §§5-18, one row each: path below the prefix, signing, answer type. The
clients' methods are thin typed wrappers over these rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kassa_client import signing as s
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

OAuthMethod = Literal["HMAC-SHA1", "RSA-SHA256"]
HMAC: OAuthMethod = "HMAC-SHA1"
RSA: OAuthMethod = "RSA-SHA256"


@dataclass(frozen=True, slots=True)
class Operation:
    name: str
    path: str  # below the prefix, without the endpoint id
    signing: s.Formula | OAuthMethod
    answer: type[Answer]
    login: bool = False  # the body carries the merchant's login
    reads: bool = False  # changes nothing: safe to retry without an Idempotency-Key

    @property
    def v4(self) -> bool:
        """v4 operations answer JSON only (the classic format is v2's)."""
        return self.path.startswith("/api/v4/")


def _op(name: str, path: str, signing: s.Formula | OAuthMethod, answer: type[Answer], **flags: bool) -> Operation:
    login = flags.pop("login", "login" in getattr(signing, "parts", ()))
    return Operation(name, path, signing, answer, login=login, **flags)


OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        _op("sale", "/api/v2/sale", s.SALE_LIKE, AsyncResponse),
        _op("preauth", "/api/v2/preauth", s.SALE_LIKE, AsyncResponse),
        _op("capture", "/api/v2/capture", s.CAPTURE_LIKE, AsyncResponse),
        _op("return", "/api/v2/return", s.CAPTURE_LIKE, AsyncResponse),
        _op("void", "/api/v2/void", s.ORDER_REF, AsyncResponse),
        _op("status", "/api/v2/status", s.ORDER_REF, Status, reads=True),
        _op("account_verification", "/api/v2/account-verification", s.VERIFY_LIKE, AsyncResponse),
        _op("sync_account_verification", "/api/v2/sync/account-verification", s.VERIFY_LIKE, Status),
        _op("sale_form", "/api/v2/sale-form", s.SALE_LIKE, FormRedirect),
        _op("preauth_form", "/api/v2/preauth-form", s.SALE_LIKE, FormRedirect),
        _op("payment_form", "/api/v2/payment-form", s.SALE_LIKE, FormRedirect),
        _op("payout_form", "/api/v2/payout-form", s.SALE_LIKE, FormRedirect),
        _op("account_verification_form", "/api/v2/account-verification-form", s.VERIFY_LIKE, FormRedirect),
        _op("transfer_form", "/api/v2/transfer-form", s.SALE_LIKE, FormRedirect),
        _op("upload_method_url_result", "/api/3ds/v1/upload-method-url-result", s.ORDER_REF, AsyncResponse),
        _op("upload_cres_result", "/api/3ds/v1/upload-cres-result", s.ORDER_REF, AsyncResponse),
        _op("upload_pares_result", "/api/3ds/v1/upload-pares-result", s.ORDER_REF, AsyncResponse),
        _op("create_card_ref", "/api/v2/create-card-ref", s.ORDER_REF, CardRef),
        _op("get_card_info", "/api/v2/get-card-info", s.CARD_INFO, CardInfo, reads=True),
        _op("make_rebill", "/api/v2/make-rebill", s.REBILL, AsyncResponse),
        _op("make_rebill_sale", "/api/v2/make-rebill-sale", s.REBILL, AsyncResponse),
        _op("make_rebill_preauth", "/api/v2/make-rebill-preauth", s.REBILL, AsyncResponse),
        _op("transfer_by_ref", "/api/v2/transfer-by-ref", s.TRANSFER_BY_REF, AsyncResponse),
        _op("bank_wire_transfer", "/api/v2/bank-wire-transfer", s.BANK_WIRE, AsyncResponse),
        _op("payout", "/api/v2/payout", HMAC, AsyncResponse),
        _op("pan_eligibility_send", "/api/v2/pan-eligibility/send", HMAC, AsyncResponse),
        _op("pan_eligibility_receive", "/api/v2/pan-eligibility/receive", HMAC, AsyncResponse),
        _op("pan_eligibility_both", "/api/v2/pan-eligibility/both", HMAC, AsyncResponse),
        _op("status_v4", "/api/v4/status", RSA, Status, login=True, reads=True),
        _op("create_card_ref_v4", "/api/v4/create-card-ref", RSA, CardRef, login=True),
        _op("create_ephemeral_ticket", "/api/v4/tokenize/create-ephemeral-ticket", RSA, EphemeralTicket),
        _op("sale_v4", "/api/v4/sale", RSA, AsyncResponse),
        _op("create_recurring_payment", "/api/v4/create-recurring-payment", RSA, RecurringPayment),
        _op("process_recurring_payments", "/api/v4/process-recurring-payments", RSA, AsyncResponse),
        _op("payout_v4", "/api/v4/payout", RSA, AsyncResponse),
        _op("payout_by_ref", "/api/v4/payout-by-ref", RSA, AsyncResponse),
        _op("payout_check", "/api/v4/payout-check", RSA, AsyncResponse),
        _op("payout_pay", "/api/v4/payout-pay", RSA, AsyncResponse, login=True),
        _op("transfer", "/api/v4/transfer", RSA, AsyncResponse),
        _op("transfer_by_ref_v4", "/api/v4/transfer-by-ref", RSA, AsyncResponse),
        _op("transfer_form_v4", "/api/v4/transfer-form", RSA, FormRedirect),
    )
}
