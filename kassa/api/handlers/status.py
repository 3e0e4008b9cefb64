"""Status: the state of an order, or of one of its transactions (``by-request-sn``)."""

from __future__ import annotations

from kassa.api.context import OperationRequest, Reply
from kassa.api.errors import ApiError, Code, field_error
from kassa.api.handlers.common import card_fields
from kassa.clock import date_time_text
from kassa.domain import money
from kassa.domain.lifecycle import Stage
from kassa.domain.order_view import OrderView, TransactionView
from kassa.domain.threeds_protocol import Step
from kassa.domain.transactions import rule
from kassa.pages.rendering import render_page
from kassa.storage import authentications, browser_sessions
from kassa.storage import orders as order_store
from kassa.storage.browser_sessions import SessionKind
from kassa.vault import tokens
from kassa.vault.tokens import SealedToken
from kassa.web import addresses
from kassa.web.browser_steps import acs_request, method_request


async def status(req: OperationRequest) -> Reply:
    values = req.values
    order_id: int | None = values.get("orderid")
    client_orderid: str | None = values.get("client_orderid")
    if order_id is None and client_orderid is None:
        raise field_error("orderid", "or client_orderid is required")
    endpoint_ids = req.endpoint.member_ids()
    view = await req.services.db.read_point(
        lambda conn: order_store.find_view(conn, endpoint_ids, order_id, client_orderid)
    )
    if view is None:
        raise ApiError(Code.NOT_FOUND, "no such order for this endpoint")
    asked: str | None = values.get("by-request-sn")
    reply = await report(req, view, _reported_transaction(view, asked))
    if asked:
        reply["by-request-sn"] = req.form["by-request-sn"]  # echoed as sent
    return reply


async def report(req: OperationRequest, view: OrderView, tx: TransactionView) -> Reply:
    """The status-response fields of the order ``view`` as its transaction ``tx`` leaves it: the browser
    step it waits for, where its payout goes."""
    reply = _status_fields(req, view, tx)
    if tx.stage in (Stage.THREE_D_METHOD, Stage.THREE_D_VALIDATING):
        reply.update(await _browser_step(req, tx))
    destination = view.destination
    if destination is not None and rule(view.head.tx_type).reads_destination(has_card=view.card is not None):
        reply["destination-type"] = destination.kind
        reply["destination-account"] = destination.masked
        if destination.recipient_name:
            reply["recipient-name"] = destination.recipient_name
    return reply


async def _browser_step(req: OperationRequest, tx: TransactionView) -> Reply:
    """What the customer's browser must do next: the gateway page (``html``, ``redirect-to``), and the
    raw 3-D Secure data for merchants that run the step themselves (CONTRACT §8)."""
    record, session = await req.services.db.read(
        lambda conn: (
            authentications.of_transaction(conn, tx.id),
            browser_sessions.session_of(conn, tx.id, SessionKind.CHECKOUT),
        )
    )
    if record is None or session is None:
        return {}
    base = req.base_url
    token = tokens.open_token(req.services.vault, SealedToken.of(session))
    step: Reply = {"redirect-to": addresses.checkout(base, token)}
    step["html"] = render_page("autopost.html", method="get", action=step["redirect-to"], fields={}).html
    step["threeds-version"] = record["version"]
    step["threeds-server-trans-id"] = record["server_trans_id"]
    if record["step"] == Step.METHOD:
        step["threeds-method-url"], step["threeds-method-data"] = method_request(base, record)
    else:
        acs_url, posted = acs_request(base, record, tx.amount, tx.currency)
        step["acs-url"] = acs_url
        step.update({"pareq": posted["PaReq"], "md": posted["MD"]} if "PaReq" in posted else posted)
    return step


def _reported_transaction(view: OrderView, serial: str | None) -> TransactionView:
    if serial is None:
        return view.latest
    found = view.transaction(serial)
    if found is None:
        raise ApiError(Code.NOT_FOUND, "no transaction with that by-request-sn in this order")
    return found


def _status_fields(req: OperationRequest, view: OrderView, tx: TransactionView) -> Reply:
    order, card, state = view.head, view.card, view.state()
    cur = money.currency(tx.currency)
    reply: Reply = {
        "serial-number": req.serial,
        "status": tx.status.value,
        "merchant-order-id": order.client_orderid,
        "paynet-order-id": str(order.id),
        "transaction-type": tx.reported_type,
        "order-stage": tx.order_stage,
        "amount": money.format_amount(tx.amount, cur),
        "currency": cur.code,
        "end-point-id": str(order.endpoint_id),
        "initial-amount": money.format_amount(order.amount, cur),
        "captured-amount": money.format_amount(state.captured, cur),
        "refunded-amount": money.format_amount(state.refunded, cur),
        "paynet-processing-date": date_time_text(tx.updated_at_ms),
    }
    if card is not None:
        reply.update(card_fields(card))
    optional = (
        ("descriptor", req.endpoint.member(order.endpoint_id).descriptor),
        ("card-ref-id", order.card_ref_id and str(order.card_ref_id)),
        ("recurring-payment-id", order.recurring_payment_id and str(order.recurring_payment_id)),
        ("email", order.email),
        ("approval-code", tx.approval_code),
        ("processor-rrn", tx.processor_rrn),
        ("processor-tx-id", tx.processor_tx_id),
        ("error-message", tx.error_message),
        ("error-code", tx.error_code),
    )
    for name, value in optional:
        if value:
            reply[name] = value
    return reply
