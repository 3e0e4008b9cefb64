"""The cardholder's side of the gateway: the hosted card form, and the checkout page that takes the
browser through 3-D Secure (Method step, challenge, 1.0.2 PaReq/PaRes) to the final redirect."""

from __future__ import annotations

import datetime
from collections.abc import Callable

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import Response

from kassa.api.handlers.payments import new_card
from kassa.api.pipeline import public_base
from kassa.clock import now_ms
from kassa.domain import cards, money
from kassa.domain.callbacks import callback_fields
from kassa.domain.lifecycle import Stage, TxType, is_final
from kassa.engine import threeds
from kassa.engine.threeds import METHOD_WAIT_MS, NotWaiting
from kassa.pages import urls
from kassa.pages.redirect import final_redirect
from kassa.pages.rendering import render_page
from kassa.pages.responses import form_fields, html, message, see_other
from kassa.pages.steps import acs_request, message_value, method_request, record_and_checkout, unknown_message
from kassa.runtime import Services
from kassa.storage import orders as order_store
from kassa.storage import threeds as store
from kassa.storage.prepared import Record
from kassa.storage.threeds import BrowserContext
from kassa.vault.keys import cvv_context

GONE = (
    "This payment page is no longer available",
    "It was already used or has expired. Return to the shop to try again.",
)


class Pages:
    def __init__(self, services: Services) -> None:
        self.services = services

    # The hosted form: GET shows it, POST takes the card once.

    async def show_form(self, request: Request) -> Response:
        context = await self._form_context(request)
        if context is None:
            return message(*GONE, status=410)
        return self._form(request, context, {}, {})

    async def submit_form(self, request: Request) -> Response:
        context = await self._form_context(request)
        fields = await form_fields(request)
        if context is None or fields is None:
            return message(*GONE, status=410)
        values, errors = _card_values(fields)
        if errors:
            return self._form(request, context, fields, errors, status=400)
        checkout_token = await self.services.db.write(lambda conn: self._attach_card(conn, context, values))
        if checkout_token is None:
            return message(*GONE, status=410)
        self.services.wake_workers()
        return see_other(urls.checkout(public_base(request, self.services), checkout_token))

    async def _form_context(self, request: Request) -> BrowserContext | None:
        token = request.path_params["token"]
        context = await self.services.db.read(lambda conn: store.browser_context(conn, token, "form"))
        if context is None or context.session["used_at_ms"] is not None or context.session["expires_at_ms"] < now_ms():
            return None
        return context

    def _form(
        self,
        request: Request,
        context: BrowserContext,
        values: dict[str, str],
        errors: dict[str, str],
        status: int = 200,
    ) -> Response:
        order = context.order
        amount = money.format_amount(order["amount"], money.currency(order["currency"]))
        verify = order["tx_type"] == TxType.ACCOUNT_VERIFICATION.value
        page = render_page(
            "form.html",
            action=str(request.url.path),
            amount=amount,
            currency=order["currency"],
            descriptor=context.descriptor,
            order_desc=order["order_desc"],
            values=values,
            errors=errors,
            button="Verify card" if verify else f"Pay {amount} {order['currency']}",
        )
        return html(page, status)

    def _attach_card(self, conn: Connection, context: BrowserContext, values: dict[str, object]) -> str | None:
        now = now_ms()
        # The expiry read with the context is still current (it is never changed); use_session's update
        # settles a race between two submissions by itself.
        session = context.session
        if session["expires_at_ms"] < now or not store.use_session(conn, session["token"], now):
            return None
        order, tx = context.order, context.transaction
        vault = self.services.vault
        card = new_card(vault, order["merchant_id"], values)
        cvv = vault.encrypt(str(values["cvv2"]), cvv_context(tx["serial_number"]))
        order_store.attach_card(conn, order, tx["id"], card, cvv, now)
        ttl_ms = int(self.services.settings.session_ttl_seconds * 1000)
        return store.open_session(conn, "checkout", order["id"], tx["id"], now, ttl_ms)

    # The checkout page: one address that always shows the customer's next step.

    async def checkout(self, request: Request) -> Response:
        token = request.path_params["token"]
        context = await self.services.db.read(lambda conn: store.browser_context(conn, token, "checkout"))
        if context is None:
            return message("This page does not exist", "Return to the shop.", status=404)
        base = public_base(request, self.services)
        stage, record = Stage(context.transaction["stage"]), context.record
        if is_final(stage) or stage is Stage.UNKNOWN:
            return self._finish(context)
        if stage is Stage.THREE_D_METHOD and record is not None:
            return self._method_page(base, token, record)
        if stage is Stage.THREE_D_VALIDATING and record is not None:
            return _to_acs(base, token, context)
        return message("Processing your payment…", "This takes a moment; please keep this page open.", refresh=1)

    def _method_page(self, base: str, token: str, record: Record) -> Response:
        method_url, method_data = method_request(base, record)
        page = render_page(
            "method.html",
            method_url=method_url,
            method_data=method_data,
            continue_url=f"{urls.checkout(base, token)}/method",
            wait_ms=METHOD_WAIT_MS,
        )
        return html(page)

    def _finish(self, context: BrowserContext) -> Response:
        order, tx = context.order, context.transaction
        fields = callback_fields(
            order=dict(order),
            tx=dict(tx),
            card=dict(context.card) if context.card else None,
            descriptor=context.descriptor,
        )
        if order["redirect_url"]:
            return html(final_redirect(order["redirect_url"], fields, context.control_key))
        title = "Payment approved" if fields["status"] == "approved" else "Payment not completed"
        return message(title, f"Status: {fields['status']}. You may close this page.")

    async def method_done(self, request: Request) -> Response:
        """The checkout page's Method iframe finished or gave up after 10 s."""
        token = request.path_params["token"]
        context = await self.services.db.read(lambda conn: store.browser_context(conn, token, "checkout"))
        if context is None or context.record is None:
            return message("This page does not exist", "Return to the shop.", status=404)
        # The gateway saw (or did not see) the ACS's notification itself: the browser's claim is not needed.
        indicator = "Y" if context.record["method_notified"] else "N"
        brand = context.card["brand"] if context.card else None
        tx_id = context.transaction["id"]
        await self._quietly(lambda conn: threeds.method_result(conn, tx_id, indicator, brand, now_ms()))
        return see_other(urls.checkout(public_base(request, self.services), token))

    async def method_notification(self, request: Request) -> Response:
        """The ACS's Method page reports through the browser that fingerprinting finished."""
        fields = await form_fields(request) or {}
        server_trans_id = message_value(fields.get("threeDSMethodData", ""), "threeDSServerTransID")
        if server_trans_id is None:
            return unknown_message()

        def notified(conn: Connection) -> None:
            record = store.by_server_trans_id(conn, server_trans_id)
            if record is not None:
                store.change(conn, record["transaction_id"], now_ms(), method_notified=True)

        await self.services.db.write(notified)
        return html(render_page("method_done.html", framed=True))

    async def challenge_return(self, request: Request) -> Response:
        """The ACS sends the CRes (2.x) or PaRes (1.0.2) back through the browser for gateway-hosted flows."""
        fields = await form_fields(request) or {}
        answer = fields.get("cres") or fields.get("PaRes") or fields.get("pares") or ""
        acs_trans_id = message_value(answer, "acsTransID", "xid")  # 2.x CRes, or 1.0.2 PaRes
        if acs_trans_id is None:
            return unknown_message()
        record, session = await self.services.db.read(lambda conn: record_and_checkout(conn, acs_trans_id))
        if record is None:
            return unknown_message()
        tx_id = record["transaction_id"]
        await self._quietly(lambda conn: threeds.complete_challenge(conn, tx_id, now_ms()))
        if session is None:
            return message("This page does not exist", "Return to the shop.", status=404)
        return see_other(urls.checkout(public_base(request, self.services), session["token"]))

    async def _quietly(self, unit: Callable[[Connection], None]) -> None:
        """Runs a 3-D Secure step; a step the transaction has moved past already (a reload) is no error."""
        try:
            await self.services.db.write(unit)
        except NotWaiting:
            return
        self.services.wake_workers()


def _to_acs(base: str, token: str, context: BrowserContext) -> Response:
    assert context.record is not None
    acs_url, fields = acs_request(base, context.record, context.transaction)
    if "PaReq" in fields:
        fields["TermUrl"] = urls.challenge_return(base)
    else:
        fields["threeDSSessionData"] = token  # the ACS returns the CRes to the gateway for this session
    return html(render_page("autopost.html", action=acs_url, fields=fields))


def _card_values(fields: dict[str, str]) -> tuple[dict[str, object], dict[str, str]]:
    """Checks the form again on the server (the browser's checks are a convenience, not a guarantee)."""
    values: dict[str, object] = {}
    errors: dict[str, str] = {}
    try:
        values["credit_card_number"] = cards.normalize_pan(fields.get("cc-number", "").strip())
    except cards.CardError:
        errors["cc-number"] = "This card number is not valid: check the digits."
    month, _, year = fields.get("cc-exp", "").replace(" ", "").partition("/")
    try:
        expiry = cards.parse_expiry(month, year, datetime.datetime.now(datetime.UTC).date())
        values["expire_month"], values["expire_year"] = expiry.month, expiry.year
    except cards.CardError as problem:
        errors["cc-exp"] = "This card has expired." if problem.field is None else "Enter the expiry as MM/YY."
    pan = str(values.get("credit_card_number", ""))
    cvv = fields.get("cc-csc", "").strip()
    if not cards.cvv_valid(cvv, cards.brand_of(pan) if pan else None):
        errors["cc-csc"] = "Enter the security code printed on the card."
    values["cvv2"] = cvv
    name = fields.get("cc-name", "").strip()
    if len(name) > 128:
        errors["cc-name"] = "The name is too long."
    values["card_printed_name"] = name
    return values, errors
