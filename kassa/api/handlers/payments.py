"""Card operations that start an order: sale, preauth and account verification (also answered
synchronously), sent with the card or as hosted forms (the card is then collected on the gateway's page).
Rebills (``card_refs``) start theirs through the same ``new_order`` and ``open_order``."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Mapping
from typing import Any

import orjson

from kassa.api.answers import Accepted, FormAccepted, VerificationStatus
from kassa.api.context import OperationRequest
from kassa.api.errors import ApiError, Code, field_error
from kassa.api.handlers import status
from kassa.api.handlers.common import async_reply, change_order, serving_endpoint, serving_within_limits
from kassa.clock import now_ms
from kassa.core import followups, opening
from kassa.core.followups import OrderRef
from kassa.domain import money
from kassa.domain.lifecycle import Stage
from kassa.domain.money import Currency
from kassa.domain.order_view import OrderView
from kassa.domain.transactions import TxType, rule
from kassa.storage import orders as order_store
from kassa.storage.orders import NewCard, NewOrder, Started
from kassa.vault import tokens
from kassa.vault.keys import cvv_context
from kassa.web import addresses

# How long sync account verification waits for the acquirer's decision before it answers ``processing`` (the
# merchant then asks status): the ISO 8583 response timeout (20 s) and a reversal's fit inside it.
_SYNC_WAIT_SECONDS = 30.0
# The order is read again after 20 ms, then twice as late each time up to 0.5 s: the sandbox decides within
# the first reads, and a slow acquirer costs about 70 reads in 30 s rather than 1,500.
_SYNC_FIRST_POLL_SECONDS, _SYNC_POLL_MAX_SECONDS = 0.02, 0.5

_CUSTOMER_FIELDS = (
    "first_name", "last_name", "ssn", "birthday", "address1", "city", "state", "zip_code", "country",
    "phone", "cell_phone", "site_url", "purpose", "preferred_language", "ipaddress",
    # The payer's browser, as a v4 sale reports it for 3-D Secure 2.x (CONTRACT §18).
    "customer_browser_info", "customer_browser_javascript_enabled", "customer_browser_java_enabled",
    "customer_browser_accept_language", "customer_browser_color_depth", "customer_browser_screen_width",
    "customer_browser_screen_height", "customer_browser_time_zone", "customer_browser_accept_header",
    "customer_browser_user_agent",
)  # fmt: skip


async def sale(req: OperationRequest) -> Accepted:
    return await start_card_order(req, TxType.SALE)


async def preauth(req: OperationRequest) -> Accepted:
    return await start_card_order(req, TxType.PREAUTH)


async def account_verification(req: OperationRequest) -> Accepted:
    return await start_card_order(req, TxType.ACCOUNT_VERIFICATION)


async def sync_account_verification(req: OperationRequest) -> VerificationStatus:
    """An account verification answered once the acquirer has decided it (or it waits for the cardholder's
    3-D Secure step, or ``_SYNC_WAIT_SECONDS`` went by): its status, with the card reference an approved
    one stores (the same on a repeat) and the phone sent."""
    opened = await account_verification(req)
    order_id, client_orderid = int(opened.paynet_order_id), req.values["client_orderid"]
    view = await _decided(req, order_id)
    verification = view.transactions[0]
    reported = (await status.report(req, view, verification)).attributes()
    if verification.stage is Stage.APPROVED:
        ref = OrderRef(req.endpoint.member_ids(), order_id, client_orderid)
        reported["card_ref_id"] = str(
            await change_order(req, lambda conn: followups.card_reference(conn, ref, now_ms()))
        )
    return VerificationStatus(**reported, phone=req.values.get("phone"))


async def _decided(req: OperationRequest, order_id: int) -> OrderView:
    """The order once its first transaction has left ``processing``, or as it is after ``_SYNC_WAIT_SECONDS``
    (or when the gateway begins to stop)."""
    endpoint_ids, deadline = req.endpoint.member_ids(), time.monotonic() + _SYNC_WAIT_SECONDS
    delay = _SYNC_FIRST_POLL_SECONDS
    while True:
        found = await req.services.db.read_point(lambda conn: order_store.find_view(conn, endpoint_ids, order_id, None))
        assert found is not None, "the order was opened for this request"
        if found.transactions[0].stage is not Stage.PROCESSING:
            return found
        if time.monotonic() >= deadline or req.services.stopping:
            return found
        await asyncio.sleep(delay)
        delay = min(delay * 2, _SYNC_POLL_MAX_SECONDS)


async def sale_form(req: OperationRequest) -> Accepted:
    return await start_card_order(req, TxType.SALE, hosted=True)


async def preauth_form(req: OperationRequest) -> Accepted:
    return await start_card_order(req, TxType.PREAUTH, hosted=True)


async def account_verification_form(req: OperationRequest) -> Accepted:
    return await start_card_order(req, TxType.ACCOUNT_VERIFICATION, hosted=True)


async def start_card_order(req: OperationRequest, tx_type: TxType, *, hosted: bool = False) -> Accepted:
    cur = order_currency(req)
    endpoint = (
        serving_within_limits(req, cur) if rule(tx_type).moves_money else serving_endpoint(req.endpoint, cur.code)
    )
    if hosted:
        return await open_order(req, new_order(req, tx_type, endpoint.id, cur, hosted=True))
    return await open_order(req, new_order(req, tx_type, endpoint.id, cur, card=new_card(req)))


async def open_order(req: OperationRequest, new: NewOrder) -> Accepted:
    """Opens the new order (or finds the one its client_orderid started), hands its processing over and
    answers; for a hosted form, with the form's address."""
    started = await req.write(lambda conn: opening.open_order(conn, new))
    return answer_opened(req, new, started, callbacks_queued=False)


def answer_opened(req: OperationRequest, new: NewOrder, started: Started, *, callbacks_queued: bool) -> Accepted:
    """The answer to a request that opened ``new`` (or found the order its client_orderid opened): a
    repeat with other fields is code 4; the processing job goes to its worker; a form's address."""
    if not started.created and started.request_fingerprint != new.request_fingerprint:
        raise ApiError(Code.DUPLICATE, "client_orderid was already used with different fields")
    if started.job is not None and new.lease is not None:
        descriptor = req.endpoint.member(new.endpoint_id).descriptor
        req.services.hand_over(started.job, new.lease, opening.opened_work(new, started, descriptor))
    elif started.created:  # a new order has callbacks only when it was decided at once
        req.services.wake_workers(callbacks=callbacks_queued or started.decided)
    reply = async_reply(started.serial, req.values["client_orderid"], started.order_id, started.endpoint_id)
    if started.form_token is None:
        return reply
    token = tokens.open_token(req.services.vault, started.form_token)  # this request's, or the first's for a repeat
    return FormAccepted(**reply.attributes(), redirect_url=addresses.form(req.base_url, token))


def order_currency(req: OperationRequest) -> Currency:
    """The request's currency; an account verification or a pan-eligibility check may leave it to the
    endpoint."""
    if "currency" in req.values:
        cur: Currency = req.values["currency"]
        return cur
    if req.endpoint.currency is None:
        raise field_error("currency", "is required on an endpoint group")
    return money.currency(req.endpoint.currency)


def new_order(
    req: OperationRequest,
    tx_type: TxType,
    endpoint_id: int,
    cur: Currency,
    *,
    card: NewCard | None = None,
    hosted: bool = False,
) -> NewOrder:
    """The order a request starts, paid with the ``card`` it sent or, ``hosted``, a card the gateway's page
    will collect (a rebill's stored card: ``core.rebills.charge_on``)."""
    values, settings = req.values, req.services.settings
    cvv: str | None = values.get("cvv2")
    return NewOrder(
        merchant_id=req.merchant_id,
        endpoint_id=endpoint_id,
        client_orderid=values["client_orderid"],
        tx_type=tx_type,
        amount=values.get("amount", 0),
        currency=cur.code,
        email=values.get("email", ""),
        order_desc=values.get("order_desc", ""),
        customer=orjson.dumps({k: req.form[k] for k in _CUSTOMER_FIELDS if req.form.get(k)}).decode(),
        redirect_url=values.get("redirect_url"),
        server_callback_url=values.get("server_callback_url"),
        notify_url=values.get("notify_url"),
        merchant_data=values.get("merchant_data"),
        request_fingerprint=request_fingerprint(req),
        serial=req.serial,
        now_ms=now_ms(),
        card=card,
        cvv_ciphertext=req.services.vault.encrypt(cvv, cvv_context(req.serial)) if cvv else None,
        form_ttl_ms=int(settings.session_ttl_seconds * 1000) if hosted else None,
        form_token=tokens.new_token(req.services.vault)[1] if hosted else None,
        lease=None if hosted else req.services.job_lease(),
    )


def new_card(req: OperationRequest) -> NewCard:
    values = req.values
    return opening.new_card(
        req.services.vault,
        req.merchant_id,
        values["credit_card_number"],
        values["expire_month"],
        values["expire_year"],
        values.get("card_printed_name", ""),
    )


def request_fingerprint(req: OperationRequest) -> str:
    """Identifies "the same fields" for duplicate detection: the checked values, so that `10.4` and `10.40`
    are the same amount. Keyed by the vault, since it covers card data."""
    return req.services.vault.fingerprint(hashlib.sha256(canonical_values(req.values).encode()).hexdigest())


def canonical_values(values: Mapping[str, Any]) -> str:
    """The text a request fingerprint is made of. Fingerprints are stored with orders, so this text must
    not change: a currency is spelled out as its dataclass ``repr`` first gave it, not through ``repr``,
    which a new field of ``Currency`` would change."""
    return "&".join(f"{name}={_canonical(value)}" for name, value in sorted(values.items()) if name != "control")


def _canonical(value: object) -> object:
    if isinstance(value, Currency):
        return f"Currency(code='{value.code}', exponent={value.exponent})"
    return value
