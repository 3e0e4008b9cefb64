"""The operation table: one row per operation of SPEC.md and CONTRACT §17 drives routing, field checks (the
fields of its request schema, ``schemas``), signing, the answer's type (``answers``) and the OpenAPI
document. Adding an
operation is adding a row and, when it does something new, a handler.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from kassa.api import answers
from kassa.api import schemas as s
from kassa.api.answers import Reply
from kassa.api.context import Handler
from kassa.api.fields import Field
from kassa.api.handlers import (
    card_refs,
    followups,
    hosted_fields,
    payments,
    payouts,
    recurring,
    status,
    threeds_uploads,
)
from kassa.signing import control
from kassa.signing.control import ControlFormula


class OAuth(StrEnum):
    HMAC_SHA1 = "HMAC-SHA1"
    RSA_SHA256 = "RSA-SHA256"


Signing = ControlFormula | OAuth
AnswerType = type[Reply]  # ``Response`` has a field named ``type``


@dataclass(frozen=True, slots=True)
class Response:
    schema: str  # the OpenAPI schema of the answer
    type: str  # the answer's ``type`` field, written by the pipeline
    answer: AnswerType  # what the handler returns: the answer's fields (``answers``)
    # Fields written as JSON numbers, in the answer and in refusals (``error-code``); every other value is
    # a string (CONTRACT §1). Only the v4 sale has any: CONTRACT §18's integrations read numbers there.
    numbers: frozenset[str] = frozenset()


ASYNC = Response("AsyncResponse", "async-response", answers.Accepted)
FORM_REDIRECT = Response("AsyncCheckoutFormRedirect", "async-form-response", answers.FormAccepted)
CARD_REF = Response("CardRefAsyncResponse", "create-card-ref-response", answers.CardReference)
CARD_REF_V4 = Response("CardRefV4AsyncResponse", "create-card-ref-response", answers.CardReferenceV4)
PAYOUT_V4 = Response("PayoutV4Response", "async-response", answers.PayoutAccepted)
TRANSFER_BY_REF = Response("TransferByRefResponse", "async-response", answers.TransferAccepted)
SALE_V4 = Response("SaleV4Response", "async-response", answers.Accepted, frozenset({"paynet-order-id", "error-code"}))
EPHEMERAL_TICKET = Response("EphemeralTicketResponse", "ephemeral-ticket-response", answers.EphemeralTicket)
CARD_INFO = Response("CardInfoAsyncResponse", "get-card-info-response", answers.CardInfo)
# CONTRACT §5: the status of an order.
STATUS = Response("StatusResponse", "status-response", answers.OrderStatus)
# CONTRACT §17: the verification's status, the card reference an approved one stores and the phone sent.
SYNC_VERIFY = Response("SyncAccountVerificationResponse", "status-response", answers.VerificationStatus)
RECURRING = Response("CreateRecurringPaymentResponse", "create-recurring-payment-response", answers.RecurringPayment)

ALIASES = {
    "client-order-id": "client_orderid",
    "client-orderid": "client_orderid",
    "cRes": "cres",
    "paRes": "pares",
    "PaRes": "pares",
    "destination_card_ref_id": "destination-card-ref-id",
    "sending_card_ref_id": "sending-card-ref-id",
    "receiving_card_ref_id": "receiving-card-ref-id",
    "source_card_ref_id": "source-card-ref-id",
}


@dataclass(frozen=True, slots=True)
class Operation:
    path: str  # below the prefix, without the endpoint id: "/api/v2/sale"
    code: str  # SPEC.md's operation code
    request_schema: str
    response: Response
    signing: Signing
    fields: tuple[Field, ...]
    handler: Handler
    summary: str
    # Capture and return without amount and currency: the original gateway's PHP client signs the
    # order's amount and currency anyway (``signatures.verify``).
    order_amount_signing: bool = False
    # Moves money on a control with no nonce: the endpoint's replay window applies (``pipeline``).
    replay_guarded: bool = False
    # Opens an order: new work for the workers, refused at once while the gateway sheds load
    # (``engine.overload``). Operations on orders that exist (status, follow-ups, 3-D Secure uploads, card
    # references) are answered as ever: they finish what was accepted.
    opens_order: bool = False
    # v4 spells names either way: "credit-card-number" and "credit_card_number" both mean the declared
    # field. Built once with the row, since every field of every request is looked up here.
    spellings: dict[str, str] = field(init=False)
    # v4 answers JSON to a request without Accept or with ``*/*`` (CONTRACT §1): the original gateway's
    # v4 examples send none and read JSON.
    json_by_default: bool = field(init=False)

    def __post_init__(self) -> None:
        v4 = self.path.startswith("/api/v4/")
        spellings = {spec.name.replace("-", "_"): spec.name for spec in self.fields} if v4 else {}
        object.__setattr__(self, "spellings", spellings)
        object.__setattr__(self, "json_by_default", v4)

    def canonical(self, name: str) -> str:
        """The declared spelling of a field name: aliases first, then (v4) hyphen/underscore variants."""
        name = ALIASES.get(name, name)
        if self.spellings:
            return self.spellings.get(name.replace("-", "_"), name)
        return name


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        path="/api/3ds/v1/upload-cres-result",
        code="TDS_UPLOAD_CRES_RESULT",
        request_schema="TdsCResResultRequest",
        response=ASYNC,
        signing=control.ORDER_REF,
        fields=s.UPLOAD_CRES_FIELDS,
        handler=threeds_uploads.upload_cres_result,
        summary="Upload the CRes of a 3DS 2.x challenge",
    ),
    Operation(
        path="/api/3ds/v1/upload-method-url-result",
        code="TDS_UPLOAD_METHOD_URL_RESULT",
        request_schema="TdsMethodUrlResultRequest",
        response=ASYNC,
        signing=control.ORDER_REF,
        fields=s.UPLOAD_METHOD_FIELDS,
        handler=threeds_uploads.upload_method_url_result,
        summary="Upload the 3DS Method result",
    ),
    Operation(
        path="/api/3ds/v1/upload-pares-result",
        code="TDS_UPLOAD_PARES_RESULT",
        request_schema="TdsPaResResultRequest",
        response=ASYNC,
        signing=control.ORDER_REF,
        fields=s.UPLOAD_PARES_FIELDS,
        handler=threeds_uploads.upload_pares_result,
        summary="Upload the PaRes of a 3DS 1.0.2 flow",
    ),
    Operation(
        path="/api/v2/account-verification-form",
        code="ACCOUNT_VERIFICATION_FORM",
        request_schema="AccountVerificationFormRequest",
        response=FORM_REDIRECT,
        signing=control.VERIFY_LIKE,
        fields=s.VERIFY_FORM_FIELDS,
        handler=payments.account_verification_form,
        summary="Verification on a hosted page",
        opens_order=True,
    ),
    Operation(
        path="/api/v2/account-verification",
        code="ACCOUNT_VERIFICATION",
        request_schema="AccountVerificationRequest",
        response=ASYNC,
        signing=control.VERIFY_LIKE,
        fields=s.VERIFY_FIELDS,
        handler=payments.account_verification,
        summary="Zero-amount authorization",
        opens_order=True,
    ),
    Operation(
        path="/api/v2/capture",
        code="CAPTURE",
        request_schema="CaptureRequest",
        response=ASYNC,
        signing=control.CAPTURE_LIKE,
        fields=s.CAPTURE_FIELDS,
        handler=followups.capture,
        summary="Capture a preauth, fully or partially",
        order_amount_signing=True,
        replay_guarded=True,
    ),
    Operation(
        path="/api/v2/create-card-ref",
        code="CARDREF",
        request_schema="CreateCardRefRequest",
        response=CARD_REF,
        signing=control.ORDER_REF,
        fields=s.ORDER_REF_FIELDS,
        handler=card_refs.create_card_ref,
        summary="Card reference from an approved order",
    ),
    Operation(
        path="/api/v2/get-card-info",
        code="CARDINFO",
        request_schema="GetCardInfoRequest",
        response=CARD_INFO,
        signing=control.CARD_INFO,
        fields=s.CARD_INFO_FIELDS,
        handler=card_refs.get_card_info,
        summary="Read a stored card by reference",
    ),
    Operation(
        path="/api/v2/make-rebill",
        code="REBILL",
        request_schema="RebillRequest",
        response=ASYNC,
        signing=control.REBILL,
        fields=s.REBILL_FIELDS,
        handler=card_refs.make_rebill,
        summary="Charge a stored card without the cardholder",
        opens_order=True,
        replay_guarded=True,
    ),
    Operation(
        path="/api/v2/make-rebill-sale",
        code="REBILL_SALE",
        request_schema="RebillRequest",
        response=ASYNC,
        signing=control.REBILL,
        fields=s.REBILL_FIELDS,
        handler=card_refs.make_rebill,
        summary="Charge a stored card without the cardholder (make-rebill under another name)",
        opens_order=True,
        replay_guarded=True,
    ),
    Operation(
        path="/api/v2/make-rebill-preauth",
        code="REBILL_PREAUTH",
        request_schema="RebillRequest",
        response=ASYNC,
        signing=control.REBILL,
        fields=s.REBILL_FIELDS,
        handler=card_refs.make_rebill_preauth,
        summary="Reserve funds on a stored card without the cardholder, for a later capture or void",
        opens_order=True,
        replay_guarded=True,
    ),
    Operation(
        path="/api/v2/payment-form",
        code="PAYMENTFORM",
        request_schema="PaymentFormRequest",
        response=FORM_REDIRECT,
        signing=control.SALE_LIKE,
        fields=s.FORM_FIELDS,
        handler=payments.sale_form,
        summary="Universal hosted payment form",
        opens_order=True,
    ),
    Operation(
        path="/api/v2/payout-form",
        code="PAYOUTFORM",
        request_schema="PayoutFormRequest",
        response=FORM_REDIRECT,
        signing=control.SALE_LIKE,
        fields=s.FORM_FIELDS,
        handler=payouts.payout_form,
        summary="Payout on a hosted page",
        opens_order=True,
    ),
    Operation(
        path="/api/v2/payout",
        code="PAYOUT",
        request_schema="PayoutRequest",
        response=ASYNC,
        signing=OAuth.HMAC_SHA1,
        fields=s.PAYOUT_FIELDS,
        handler=payouts.payout,
        summary="Payout to a card, bank account, e-wallet or phone",
        opens_order=True,
    ),
    Operation(
        path="/api/v2/bank-wire-transfer",
        code="BANK_WIRE_TRANSFER",
        request_schema="BankWireTransferRequest",
        response=ASYNC,
        signing=control.BANK_WIRE,
        fields=s.BANK_WIRE_FIELDS,
        handler=payouts.bank_wire_transfer,
        summary="Payout to a bank account by its number and its bank's BIC",
        opens_order=True,
        replay_guarded=True,
    ),
    Operation(
        path="/api/v2/preauth-form",
        code="PREAUTHFORM",
        request_schema="AuthFormRequest",
        response=FORM_REDIRECT,
        signing=control.SALE_LIKE,
        fields=s.FORM_FIELDS,
        handler=payments.preauth_form,
        summary="Preauth on a hosted page",
        opens_order=True,
    ),
    Operation(
        path="/api/v2/preauth",
        code="PREAUTH",
        request_schema="AuthRequest",
        response=ASYNC,
        signing=control.SALE_LIKE,
        fields=s.SALE_FIELDS,
        handler=payments.preauth,
        summary="Reserve funds for a later capture or void",
        opens_order=True,
    ),
    Operation(
        path="/api/v2/return",
        code="RETURN",
        request_schema="ReturnRequest",
        response=ASYNC,
        signing=control.CAPTURE_LIKE,
        fields=s.CAPTURE_FIELDS,
        handler=followups.refund,
        summary="Cancel a preauth, or reverse a sale or capture",
        order_amount_signing=True,
        replay_guarded=True,
    ),
    Operation(
        path="/api/v2/sale-form",
        code="SALEFORM",
        request_schema="SaleFormRequest",
        response=FORM_REDIRECT,
        signing=control.SALE_LIKE,
        fields=s.FORM_FIELDS,
        handler=payments.sale_form,
        summary="Sale on a hosted page",
        opens_order=True,
    ),
    Operation(
        path="/api/v2/sale",
        code="SALE",
        request_schema="SaleRequest",
        response=ASYNC,
        signing=control.SALE_LIKE,
        fields=s.SALE_FIELDS,
        handler=payments.sale,
        summary="Authorization and capture in one step",
        opens_order=True,
    ),
    Operation(
        path="/api/v2/status",
        code="STATUS",
        request_schema="StatusRequest",
        response=STATUS,
        signing=control.ORDER_REF,
        fields=s.STATUS_FIELDS,
        handler=status.status,
        summary="The state of an order or one of its transactions",
    ),
    Operation(
        path="/api/v2/transfer-by-ref",
        code="TRANSFER_BY_REF",
        request_schema="TransferByRefV2Request",
        response=ASYNC,
        signing=control.TRANSFER_BY_REF,
        fields=s.V2_TRANSFER_BY_REF_FIELDS,
        handler=payouts.transfer_by_ref_v2,
        summary="Transfer between two stored cards, or from the merchant's balance to one",
        opens_order=True,
        replay_guarded=True,
    ),
    Operation(
        path="/api/v2/transfer-form",
        code="TRANSFER_FORM",
        request_schema="TransferFormRequest",
        response=FORM_REDIRECT,
        signing=control.SALE_LIKE,
        fields=s.TRANSFER_FORM_FIELDS,
        handler=payouts.transfer_form,
        summary="Card-to-card transfer on a hosted page",
        opens_order=True,
    ),
    Operation(
        path="/api/v2/sync/account-verification",
        code="SYNC_ACCOUNT_VERIFICATION",
        request_schema="AccountVerificationRequest",
        response=SYNC_VERIFY,
        signing=control.VERIFY_LIKE,
        fields=s.VERIFY_FIELDS,
        handler=payments.sync_account_verification,
        summary="Zero-amount authorization answered with its outcome and a card reference",
        opens_order=True,
    ),
    Operation(
        path="/api/v2/void",
        code="VOID",
        request_schema="VoidRequest",
        response=ASYNC,
        signing=control.ORDER_REF,
        fields=s.ORDER_REF_FIELDS,
        handler=followups.void,
        summary="Void an approved sale or capture not yet settled",
        replay_guarded=True,
    ),
    Operation(
        path="/api/v4/create-card-ref",
        code="CARDREF_V4",
        request_schema="CreateCardRefV4Request",
        response=CARD_REF_V4,
        signing=OAuth.RSA_SHA256,
        fields=s.CARDREF_V4_FIELDS,
        handler=card_refs.create_card_ref_v4,
        summary="Card reference (v4)",
    ),
    Operation(
        path="/api/v4/status",
        code="STATUS_V4",
        request_schema="StatusV4Request",
        response=STATUS,
        signing=OAuth.RSA_SHA256,
        fields=s.STATUS_V4_FIELDS,
        handler=status.status,
        summary="The state of an order, signed as v4 (the original gateway's v4 examples poll it)",
    ),
    Operation(
        path="/api/v4/tokenize/create-ephemeral-ticket",
        code="HOSTED_FIELDS_TICKET",
        request_schema="EphemeralTicketRequest",
        response=EPHEMERAL_TICKET,
        signing=OAuth.RSA_SHA256,
        fields=(),
        handler=hosted_fields.create_ephemeral_ticket,
        summary="A Hosted Fields ticket: one tokenization of a card within 15 minutes (empty body)",
    ),
    Operation(
        path="/api/v4/sale",
        code="SALE_V4",
        request_schema="SaleV4Request",
        response=SALE_V4,
        signing=OAuth.RSA_SHA256,
        fields=s.SALE_V4_FIELDS,
        handler=hosted_fields.sale,
        summary="Sale signed as v4, paid with a Hosted Fields token or the card fields",
        opens_order=True,
    ),
    Operation(
        path="/api/v4/create-recurring-payment",
        code="CREATE_RP_V4",
        request_schema="RecurringPaymentForCreation",
        response=RECURRING,
        signing=OAuth.RSA_SHA256,
        fields=s.RECURRING_FIELDS,
        handler=recurring.create_recurring_payment,
        summary="Recurring payment subscription",
    ),
    Operation(
        path="/api/v4/payout",
        code="PAYOUT_V4",
        request_schema="PayoutV4Request",
        response=PAYOUT_V4,
        signing=OAuth.RSA_SHA256,
        fields=s.PAYOUT_FIELDS,
        handler=payouts.payout_v4,
        summary="Payout in one step, signed as v4 (SPEC.md's bank payout example)",
        opens_order=True,
    ),
    Operation(
        path="/api/v4/payout-by-ref",
        code="PAYOUT_BY_REF_V4",
        request_schema="PayoutByRefRequest",
        response=PAYOUT_V4,
        signing=OAuth.RSA_SHA256,
        fields=s.PAYOUT_BY_REF_FIELDS,
        handler=payouts.payout_by_ref,
        summary="Payout to the card of a card reference",
        opens_order=True,
    ),
    Operation(
        path="/api/v4/process-recurring-payments",
        code="PROCESS_RECURRING_V4",
        request_schema="ProcessRecurringPaymentsRequest",
        response=ASYNC,
        signing=OAuth.RSA_SHA256,
        fields=s.PROCESS_RECURRING_FIELDS,
        handler=recurring.process_recurring_payments,
        summary="Charge a recurring payment's card now",
        opens_order=True,
    ),
    Operation(
        path="/api/v4/transfer-by-ref",
        code="TRANSFER_BY_REF_V4",
        request_schema="TransferByRefRequest",
        response=TRANSFER_BY_REF,
        signing=OAuth.RSA_SHA256,
        fields=s.TRANSFER_BY_REF_FIELDS,
        handler=payouts.transfer_by_ref,
        summary="Transfer from the merchant's balance to a card (SPEC.md's transfer by reference example)",
        opens_order=True,
    ),
    Operation(
        path="/api/v4/payout-check",
        code="PAYOUT_V4_CHECK",
        request_schema="PayoutCheckRequest",
        response=ASYNC,
        signing=OAuth.RSA_SHA256,
        fields=s.PAYOUT_FIELDS,
        handler=payouts.payout_check,
        summary="Validate a payout destination and register the payout",
        opens_order=True,
    ),
    Operation(
        path="/api/v4/payout-pay",
        code="PAYOUT_V4_PAY",
        request_schema="PayoutPayRequest",
        response=ASYNC,
        signing=OAuth.RSA_SHA256,
        fields=s.PAYOUT_PAY_FIELDS,
        handler=payouts.payout_pay,
        summary="Execute a payout registered by payout-check",
    ),
    Operation(
        path="/api/v4/transfer-form",
        code="TRANSFER_FORM_V4",
        request_schema="TransferFormV4Request",
        response=FORM_REDIRECT,
        signing=OAuth.RSA_SHA256,
        fields=s.TRANSFER_FORM_V4_FIELDS,
        handler=payouts.transfer_form,
        summary="Card-to-card transfer on a hosted page (v4)",
        opens_order=True,
    ),
    Operation(
        path="/api/v4/transfer",
        code="TRANSFER_V4",
        request_schema="TransferRequest",
        response=ASYNC,
        signing=OAuth.RSA_SHA256,
        fields=s.TRANSFER_FIELDS,
        handler=payouts.transfer,
        summary="Transfer from a card or the deposit to a card",
        opens_order=True,
    ),
    Operation(
        path="/api/v2/pan-eligibility/send",
        code="PAN_ELIGIBILITY_SEND",
        request_schema="PanEligibilityRequest",
        response=ASYNC,
        signing=OAuth.HMAC_SHA1,
        fields=s.PAN_ELIGIBILITY_FIELDS,
        handler=payouts.pan_eligibility,
        summary="Check that a card can send funds",
        opens_order=True,
    ),
    Operation(
        path="/api/v2/pan-eligibility/receive",
        code="PAN_ELIGIBILITY_RECEIVE",
        request_schema="PanEligibilityReceiveRequest",
        response=ASYNC,
        signing=OAuth.HMAC_SHA1,
        fields=s.PAN_ELIGIBILITY_RECEIVE_FIELDS,
        handler=payouts.pan_eligibility,
        summary="Check that a card can receive funds",
        opens_order=True,
    ),
    Operation(
        path="/api/v2/pan-eligibility/both",
        code="PAN_ELIGIBILITY_BOTH",
        request_schema="PanEligibilityBothRequest",
        response=ASYNC,
        signing=OAuth.HMAC_SHA1,
        fields=s.PAN_ELIGIBILITY_BOTH_FIELDS,
        handler=payouts.pan_eligibility,
        summary="Check that a card can send and receive funds",
        opens_order=True,
    ),
)
