"""Status: the state of an order, or of one of its transactions (``by-request-sn``)."""

from __future__ import annotations

import dataclasses

from kassa.api.answers import BrowserStep, DestinationShown, OrderStatus
from kassa.api.context import OperationRequest
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


async def status(req: OperationRequest) -> OrderStatus:
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
    echoed = req.form["by-request-sn"] if asked else None  # as sent, not as checked
    return await report(req, view, _reported_transaction(view, asked), echoed)


async def report(
    req: OperationRequest, view: OrderView, tx: TransactionView, by_request_sn: str | None = None
) -> OrderStatus:
    """The status of the order ``view`` as its transaction ``tx`` leaves it: the browser step it waits for,
    where its payout goes; ``by_request_sn`` echoed when the merchant named ``tx`` by it."""
    order, card, state = view.head, view.card, view.state()
    cur = money.currency(tx.currency)
    browser = None
    if tx.stage in (Stage.THREE_D_METHOD, Stage.THREE_D_VALIDATING):
        browser = await _browser_step(req, tx)
    return OrderStatus(
        serial_number=req.serial,
        status=tx.status.value,
        merchant_order_id=order.client_orderid,
        paynet_order_id=str(order.id),
        transaction_type=tx.reported_type,
        order_stage=tx.order_stage,
        amount=money.format_amount(tx.amount, cur),
        currency=cur.code,
        end_point_id=str(order.endpoint_id),
        initial_amount=money.format_amount(order.amount, cur),
        captured_amount=money.format_amount(state.captured, cur),
        refunded_amount=money.format_amount(state.refunded, cur),
        paynet_processing_date=date_time_text(tx.updated_at_ms),
        card=None if card is None else card_fields(card),
        descriptor=req.endpoint.member(order.endpoint_id).descriptor or None,
        card_ref_id=str(order.card_ref_id) if order.card_ref_id else None,
        recurring_payment_id=str(order.recurring_payment_id) if order.recurring_payment_id else None,
        email=order.email or None,
        approval_code=tx.approval_code or None,
        processor_rrn=tx.processor_rrn or None,
        processor_tx_id=tx.processor_tx_id or None,
        error_message=tx.error_message or None,
        error_code=tx.error_code or None,
        browser=browser,
        destination=_destination(view),
        by_request_sn=by_request_sn,
    )


def _destination(view: OrderView) -> DestinationShown | None:
    """Where a payout goes when it is no card: its kind and its number masked, and the masked name the
    sandbox's name check found for a phone payout."""
    destination = view.destination
    if destination is None or not rule(view.head.tx_type).reads_destination(has_card=view.card is not None):
        return None
    return DestinationShown(
        destination_type=destination.kind,
        destination_account=destination.masked,
        recipient_name=destination.recipient_name or None,
    )


async def _browser_step(req: OperationRequest, tx: TransactionView) -> BrowserStep | None:
    """What the customer's browser must do next: the gateway page (``html``, ``redirect-to``), and the
    raw 3-D Secure data for merchants that run the step themselves (CONTRACT §8)."""
    record, session = await req.services.db.read(
        lambda conn: (
            authentications.of_transaction(conn, tx.id),
            browser_sessions.session_of(conn, tx.id, SessionKind.CHECKOUT),
        )
    )
    if record is None or session is None:
        return None
    base = req.base_url
    token = tokens.open_token(req.services.vault, SealedToken.of(session))
    redirect_to = addresses.checkout(base, token)
    step = BrowserStep(
        redirect_to=redirect_to,
        html=render_page("autopost.html", method="get", action=redirect_to, fields={}).html,
        threeds_version=record["version"],
        threeds_server_trans_id=record["server_trans_id"],
    )
    if record["step"] == Step.METHOD:
        method_url, method_data = method_request(base, record)
        return dataclasses.replace(step, threeds_method_url=method_url, threeds_method_data=method_data)
    acs_url, posted = acs_request(base, record, tx.amount, tx.currency)
    if "PaReq" in posted:
        return dataclasses.replace(step, acs_url=acs_url, pareq=posted["PaReq"], md=posted["MD"])
    return dataclasses.replace(step, acs_url=acs_url, creq=posted["creq"])


def _reported_transaction(view: OrderView, serial: str | None) -> TransactionView:
    if serial is None:
        return view.latest
    found = view.transaction(serial)
    if found is None:
        raise ApiError(Code.NOT_FOUND, "no transaction with that by-request-sn in this order")
    return found
